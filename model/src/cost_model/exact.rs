//! The cost model in exact rational arithmetic, for verification (docs/MODEL.md, "Exact
//! arithmetic and verification", step 1).
//!
//! [`evaluate`](crate::cost_model::evaluate::evaluate) already counts every access exactly (integer
//! [`Counts`]); only the last step, parameters × counts, is done in f64 there. Here that step is
//! done in rationals, with every decimal input (the cost parameters, the two slacks) taken as
//! the decimal it is written as: an f64 is converted through its shortest round-trip decimal
//! representation (`format!("{x:?}")`, e.g. `0.05` → 5/100), not its binary value
//! (0.05000000000000000277…). That is the number the user wrote in the machine file, and the
//! one the LP/MPS/SMT-LIB writers print. The cache capacity is the integer
//! [`crate::cost_model::evaluate::cache_capacity`] already (a floor), so the cache test is an integer comparison.
//!
//! Feasibility is decided exactly too: `n t (1 - σ_D) <= D` and `(1 - σ_T) T k <= N` without the
//! small tolerance the f64 tests need.

use std::fmt;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use crate::cost_model::evaluate::{evaluate, Configuration, Counts, Infeasibility};
use crate::cost_model::formula::{self, stencil_terms, Numeric, Part, Scalar, Term};
use crate::formats::machine::{ModelMachine, Params};
use crate::language::analysis::Analysis;

/// An exact rational number.
pub type Rational = BigRational;

/// The exact value of the shortest decimal that round-trips to `x` (`x` must be finite).
pub fn decimal(x: f64) -> Rational {
    parse_decimal(&format!("{x:?}")).unwrap_or_else(|| {
        // Unreachable for finite input; the binary value is the honest fallback.
        Rational::from_float(x).unwrap_or_else(Rational::zero)
    })
}

/// Parses `[-]digits[.digits][e[-]digits]` exactly.
pub fn parse_decimal(text: &str) -> Option<Rational> {
    let text = text.trim();
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(p) => (&text[..p], text[p + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(p) => (&mantissa[..p], &mantissa[p + 1..]),
        None => (mantissa, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let digits = format!("{int_part}{frac_part}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut value = Rational::from_integer(digits.parse::<BigInt>().ok()?);
    let scale = exponent - frac_part.len() as i32;
    let ten = BigInt::from(10);
    let power = Rational::from_integer(num_traits::pow(ten, scale.unsigned_abs() as usize));
    if scale >= 0 {
        value *= power;
    } else {
        value /= power;
    }
    Some(if negative { -value } else { value })
}

/// A rational as an f64 (nearest, up to the division's rounding).
pub fn to_f64(x: &Rational) -> f64 {
    x.to_f64().unwrap_or(f64::NAN)
}

/// A rational as text: the integer, or `num/den` and its approximate decimal value.
pub fn display(x: &Rational) -> String {
    if x.is_integer() {
        x.to_integer().to_string()
    } else {
        format!("{}/{} (~{:e})", x.numer(), x.denom(), to_f64(x))
    }
}

/// The parameters as exact decimals, in seconds per access (or per operation).
#[derive(Clone, Debug, PartialEq)]
pub struct ExactParams {
    /// `[part][term]` as `formula::Part` and `formula::Term` order them.
    pub table: [[Rational; 2]; 4],
    /// The crowding charge `Q^b` (`Params::crowded`), None when zero.
    pub crowded: Option<Rational>,
    /// The exposed share θ and `1 - θ` (`Params::exposed`), None when zero.
    pub exposed: Option<(Rational, Rational)>,
}

impl ExactParams {
    pub fn new(p: &Params) -> Self {
        ExactParams {
            table: p.table().map(|row| row.map(decimal)),
            crowded: (p.crowded.stream_body > 0.0).then(|| decimal(p.crowded.stream_body)),
            exposed: (p.exposed > 0.0).then(|| {
                let theta = decimal(p.exposed);
                (theta.clone(), Rational::one() - theta)
            }),
        }
    }

    pub fn get(&self, part: Part, term: Term) -> &Rational {
        &self.table[part as usize][term as usize]
    }
}

fn int(x: u128) -> Rational {
    Rational::from_integer(BigInt::from(x))
}

impl Scalar for Rational {
    fn from_count(c: u128) -> Self {
        int(c)
    }
    fn nothing() -> Self {
        <Rational as Zero>::zero()
    }
    fn mul(&self, other: &Self) -> Self {
        self * other
    }
    fn add(&self, other: &Self) -> Self {
        self + other
    }
}

/// The exact cost of one stencil.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactStencil {
    pub counts: Counts,
    /// `max(fast peel, slow peel)`.
    pub peel: Rational,
    /// `max(fast body, slow body)`.
    pub body: Rational,
}

/// The exact cost of a configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactCost {
    pub stencils: Vec<ExactStencil>,
    /// Loop-bound overheads of all groups.
    pub overhead: Rational,
    /// The objective, in seconds.
    pub total: Rational,
    /// The first violated constraint, decided exactly.
    pub infeasible: Option<Infeasibility>,
}

/// The cost of `config` (of valid shape) in exact arithmetic: `evaluate`'s integer counts,
/// then the formulas of `formula` in rationals.
pub fn exact_cost(
    analysis: &Analysis,
    machine: &ModelMachine,
    config: &Configuration,
) -> ExactCost {
    let params = ExactParams::new(&machine.params);
    let cost = evaluate(analysis, machine, config);
    let mut stencils = Vec::new();
    let mut total = Rational::zero();
    let mut overhead = Rational::zero();
    for group in &cost.groups {
        let mut numeric = Numeric {
            n: group.tiles.map(|t| t as u128),
            params: &params.table,
            crowded: params.crowded.clone().filter(|_| group.crowded),
            exposed: params.exposed.clone(),
        };
        for s in &group.stencils {
            let t = stencil_terms(&mut numeric, &s.counts.table(), "");
            total += &t.peel + &t.body;
            stencils.push(ExactStencil {
                counts: s.counts,
                peel: t.peel,
                body: t.body,
            });
        }
        let tiles_total: u128 = group.tiles.iter().map(|&t| t as u128).product();
        overhead += formula::overhead(&mut numeric, &tiles_total, group.range.len() as u128);
    }
    total += &overhead;
    let infeasible = config
        .group_ranges()
        .into_iter()
        .enumerate()
        .find_map(|(g, range)| {
            group_infeasibility(
                analysis,
                machine,
                g,
                range,
                config.tiles[g],
                config.streams(g),
            )
        });
    ExactCost {
        stencils,
        overhead,
        total,
        infeasible,
    }
}

/// Whether `n` tiles along `domain` are even enough, exactly: `n ceil(D/n) (1 - σ) <= D`.
pub fn even_tiles(domain: usize, n: usize, slack: f64) -> bool {
    let covered = int((n * domain.div_ceil(n)) as u128);
    covered * (Rational::one() - decimal(slack)) <= int(domain as u128)
}

/// Whether `tiles` keep `threads` busy, exactly: `N >= T` and `(1 - σ) T ceil(N/T) <= N`.
pub fn parallel_ok(tiles: u64, threads: usize, slack: f64) -> bool {
    if tiles < threads as u64 {
        return false;
    }
    let k = tiles.div_ceil(threads as u64);
    (Rational::one() - decimal(slack)) * int(threads as u128 * k as u128) <= int(tiles as u128)
}

/// The first constraint a group violates, decided exactly (same order and reasons as
/// [`crate::cost_model::evaluate::group_infeasibility`]).
pub fn group_infeasibility(
    analysis: &Analysis,
    machine: &ModelMachine,
    group: usize,
    range: std::ops::Range<usize>,
    tiles: [usize; 3],
    stream: bool,
) -> Option<Infeasibility> {
    let tests = crate::cost_model::evaluate::SlackTests {
        even_tiles,
        parallel_ok,
    };
    crate::cost_model::evaluate::group_infeasibility_with(
        analysis, machine, group, range, tiles, stream, tests,
    )
}

/// `|a - b| <= tol * max(|a|, |b|)`, exactly.
pub fn agree_relative(a: &Rational, b: &Rational, tolerance: &Rational) -> bool {
    let scale = if a.abs() >= b.abs() { a.abs() } else { b.abs() };
    (a - b).abs() <= tolerance * scale
}

/// A rational for reports.
pub struct Shown<'a>(pub &'a Rational);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&display(self.0))
    }
}
