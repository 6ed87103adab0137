//! The model's cost formulas, written once over any number system.
//!
//! The cost of one stencil (docs/MODEL.md, "The time of a configuration") is, for each part of
//! the model (fast memory, slow-memory base, slow-memory stream, compute) with weights
//! `(w, w^x, w^y, w^z)`:
//!
//! - peel count `n^x (D^y D^z w + D^z n^y w^y + D^y n^z w^z)`, written as the sum
//!   `D^y D^z (n^x w) + D^z (n^x (n^y w^y)) + D^y (n^x (n^z w^z))` ([`peel_count`]);
//! - body count `D^x D^y D^z w + D^y D^z n^x w^x + D^x D^z n^y w^y + D^x D^y n^z w^z`
//!   ([`body_count`]);
//! - seconds: `peel = max(F^p c_peel, B^p m_peel + V^p s_peel)` and the same for the body
//!   ([`stencil_terms`]);
//! - the compute part has weights `(f, f E^x, f E^y, f E^z)` where `f` is the stencil's
//!   arithmetic per cell (`Expr::operations`); its seconds add to the fast side,
//!   `max(F^p c_peel + K^p f_peel, ...)` and `max(F^b c_body + K^b f_body, ...)`, so that
//!   recomputation (overlapped halos, inlining) costs more than its loads
//!   (docs/decisions/0016-operation-weights-measured.md);
//!
//! and each group adds the loop-bound overhead `6 n^x n^y n^z (B^b + V^b)` per stencil
//! ([`overhead`]). A *crowded* group (more row streams in flight than the machine's limit,
//! `evaluate::crowded`) adds `Q^b s_body` to each stencil's slow body ([`Algebra::crowding`];
//! docs/decisions/0014-crowding-charge.md).
//!
//! The same functions give integer access counts and f64 seconds (`evaluate::evaluate`), exact
//! rationals (`exact`), the MILP's linear expressions with linearized products (`milp`), and SMT
//! terms with genuine products (`smt::nonlinear`): each is an [`Algebra`].

/// The three parts of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    Fast,
    Base,
    Stream,
    Compute,
}

/// Peel (row starts) or body (cells).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    Peel,
    Body,
}

impl Part {
    pub const ALL: [Part; 4] = [Part::Fast, Part::Base, Part::Stream, Part::Compute];
    pub fn name(self) -> &'static str {
        match self {
            Part::Fast => "fast",
            Part::Base => "base",
            Part::Stream => "stream",
            Part::Compute => "compute",
        }
    }
}

impl Term {
    pub const ALL: [Term; 2] = [Term::Peel, Term::Body];
    pub fn name(self) -> &'static str {
        match self {
            Term::Peel => "peel",
            Term::Body => "body",
        }
    }
}

/// Accesses the loop bounds cost per stencil and tile, charged at `B^b + B^v` each.
pub const LOOP_BOUND_ACCESSES: u128 = 6;

/// A number system the formulas are evaluated in. `Count` holds access counts (integers, or
/// expressions of them); `Time` holds seconds (or MILP objective units).
pub trait Algebra {
    type Count: Clone;
    type Time: Clone;
    /// `Σ k_j v_j` with non-negative integer coefficients.
    fn count_sum(&mut self, terms: &[(u128, &Self::Count)]) -> Self::Count;
    /// `n^d v`: a tile count times a count.
    fn times_tiles(&mut self, d: usize, v: &Self::Count) -> Self::Count;
    /// Whether the parameter of `part`/`term` is zero: its count is then not formed at all (the
    /// MILP then builds no products for it). Counts-keeping algebras answer false.
    fn param_is_zero(&self, part: Part, term: Term) -> bool;
    /// `p v` for the parameter `p` of `part`/`term`.
    fn seconds(&mut self, part: Part, term: Term, v: &Self::Count) -> Self::Time;
    fn time_zero(&mut self) -> Self::Time;
    fn time_add(&mut self, a: &Self::Time, b: &Self::Time) -> Self::Time;
    /// The crowding charge `Q^b v` on a stencil's stream-body count `v` when its group is
    /// crowded, zero when it is not; `None` when the machine charges nothing (`Q^b = 0`), so
    /// that nothing is formed.
    fn crowding(&mut self, stream_body: &Self::Count) -> Option<Self::Time>;
    /// `max(fast, slow)` of a stencil's `term`; a solver encoding names what it introduces for it
    /// `{term}_{name}`.
    fn time_max(
        &mut self,
        fast: &Self::Time,
        slow: &Self::Time,
        term: Term,
        name: &str,
    ) -> Self::Time;
    /// `max + θ (fast + slow - max)`, `max + θ min(fast, slow)` for the `max` of `fast` and
    /// `slow`, with θ the machine's exposed share (`Params::exposed`); None when θ is zero, so
    /// that nothing is formed.
    fn exposed(
        &mut self,
        max: &Self::Time,
        fast: &Self::Time,
        slow: &Self::Time,
    ) -> Option<Self::Time>;
}

/// The peel count of weights `w = (w, w^x, w^y, w^z)` on a domain `dom`.
#[inline]
pub fn peel_count<A: Algebra>(a: &mut A, dom: [u128; 3], w: &[A::Count; 4]) -> A::Count {
    let x = a.times_tiles(0, &w[0]);
    let y = a.times_tiles(1, &w[2]);
    let xy = a.times_tiles(0, &y);
    let z = a.times_tiles(2, &w[3]);
    let xz = a.times_tiles(0, &z);
    a.count_sum(&[(dom[1] * dom[2], &x), (dom[2], &xy), (dom[1], &xz)])
}

/// The body count of weights `w = (w, w^x, w^y, w^z)` on a domain `dom`.
#[inline]
pub fn body_count<A: Algebra>(a: &mut A, dom: [u128; 3], w: &[A::Count; 4]) -> A::Count {
    let x = a.times_tiles(0, &w[1]);
    let y = a.times_tiles(1, &w[2]);
    let z = a.times_tiles(2, &w[3]);
    a.count_sum(&[
        (dom[0] * dom[1] * dom[2], &w[0]),
        (dom[1] * dom[2], &x),
        (dom[0] * dom[2], &y),
        (dom[0] * dom[1], &z),
    ])
}

/// The eight counts of one stencil, `[part][term]`, from its weights `[part]`; a count whose
/// parameter is zero is `None` (see [`Algebra::param_is_zero`]).
pub type StencilCounts<C> = [[Option<C>; 2]; 4];

/// The counts of a stencil with weights `[fast, base, stream, compute]`.
#[inline]
pub fn stencil_counts<A: Algebra>(
    a: &mut A,
    dom: [u128; 3],
    weights: &[[A::Count; 4]; 4],
) -> StencilCounts<A::Count> {
    let mut out: StencilCounts<A::Count> = Default::default();
    for (p, part) in Part::ALL.into_iter().enumerate() {
        for (t, term) in Term::ALL.into_iter().enumerate() {
            if a.param_is_zero(part, term) {
                continue;
            }
            out[p][t] = Some(match term {
                Term::Peel => peel_count(a, dom, &weights[p]),
                Term::Body => body_count(a, dom, &weights[p]),
            });
        }
    }
    out
}

/// The seconds of one stencil.
#[derive(Clone, Debug, PartialEq)]
pub struct StencilTerms<T> {
    /// Fast memory plus compute.
    pub fast_peel: T,
    pub fast_body: T,
    /// Base plus stream.
    pub slow_peel: T,
    pub slow_body: T,
    /// `max(fast_peel, slow_peel)`, plus the exposed share of the smaller.
    pub peel: T,
    /// `max(fast_body, slow_body)`, plus the exposed share of the smaller.
    pub body: T,
}

/// The seconds of a stencil from its counts: `peel = max(F^p c + K^p f, B^p m + V^p s)`, plus
/// the exposed share θ of the smaller (`max + θ min`, where θ is not zero), likewise the body.
/// `name` names what a solver encoding introduces (it is only read by [`Algebra::time_max`]).
#[inline]
pub fn stencil_terms<A: Algebra>(
    a: &mut A,
    counts: &StencilCounts<A::Count>,
    name: &str,
) -> StencilTerms<A::Time> {
    let part_seconds = |a: &mut A, p: usize, t: usize| -> A::Time {
        match &counts[p][t] {
            Some(c) => a.seconds(Part::ALL[p], Term::ALL[t], c),
            None => a.time_zero(),
        }
    };
    let term = |a: &mut A, t: usize| {
        let memory = part_seconds(a, 0, t);
        let fast = match &counts[3][t] {
            Some(c) => {
                let compute = a.seconds(Part::Compute, Term::ALL[t], c);
                a.time_add(&memory, &compute)
            }
            None => memory,
        };
        let base = part_seconds(a, 1, t);
        let stream = part_seconds(a, 2, t);
        let mut slow = a.time_add(&base, &stream);
        if let (1, Some(c)) = (t, &counts[2][t]) {
            if let Some(extra) = a.crowding(c) {
                slow = a.time_add(&slow, &extra);
            }
        }
        let max = a.time_max(&fast, &slow, Term::ALL[t], name);
        let max = a.exposed(&max, &fast, &slow).unwrap_or(max);
        (fast, slow, max)
    };
    let (fast_peel, slow_peel, peel) = term(a, 0);
    let (fast_body, slow_body, body) = term(a, 1);
    StencilTerms {
        fast_peel,
        fast_body,
        slow_peel,
        slow_body,
        peel,
        body,
    }
}

/// The loop-bound overhead of `stencils` stencils of a group with `tiles_total` tiles:
/// `(B^b + B^v) 6 N stencils`.
#[inline]
pub fn overhead<A: Algebra>(a: &mut A, tiles_total: &A::Count, stencils: u128) -> A::Time {
    let count = a.count_sum(&[(LOOP_BOUND_ACCESSES * stencils, tiles_total)]);
    let base = a.seconds(Part::Base, Term::Body, &count);
    let stream = a.seconds(Part::Stream, Term::Body, &count);
    a.time_add(&base, &stream)
}

/// Integer counts for tile counts `n`, seconds as the parameters in `T` (f64 or exact) say;
/// `crowded` is the crowding charge `Q^b` when the group is crowded (None: not crowded, or no
/// charge); `exposed` is `(θ, 1 - θ)` for the exposed share θ (None: zero).
pub struct Numeric<'a, T> {
    pub n: [u128; 3],
    pub params: &'a [[T; 2]; 4],
    pub crowded: Option<T>,
    pub exposed: Option<(T, T)>,
}

/// What [`Numeric`] needs of a number type.
pub trait Scalar: Clone + PartialOrd {
    fn from_count(c: u128) -> Self;
    fn nothing() -> Self;
    fn mul(&self, other: &Self) -> Self;
    fn add(&self, other: &Self) -> Self;
}

impl Scalar for f64 {
    #[inline]
    fn from_count(c: u128) -> Self {
        // The same rounding either way; u64 -> f64 is a few inline instructions, u128 -> f64 a
        // library call. The optimiser sees that both arms give the same value and would merge
        // them into the call: `black_box` keeps the inline conversion.
        match u64::try_from(c) {
            Ok(c) => std::hint::black_box(c) as f64,
            Err(_) => c as f64,
        }
    }
    fn nothing() -> Self {
        0.0
    }
    fn mul(&self, other: &Self) -> Self {
        self * other
    }
    fn add(&self, other: &Self) -> Self {
        self + other
    }
}

impl<T: Scalar> Algebra for Numeric<'_, T> {
    type Count = u128;
    type Time = T;
    #[inline]
    fn count_sum(&mut self, terms: &[(u128, &u128)]) -> u128 {
        terms.iter().map(|(k, v)| k * *v).sum()
    }
    #[inline]
    fn times_tiles(&mut self, d: usize, v: &u128) -> u128 {
        self.n[d] * v
    }
    #[inline]
    fn param_is_zero(&self, _: Part, _: Term) -> bool {
        false
    }
    #[inline]
    fn seconds(&mut self, part: Part, term: Term, v: &u128) -> T {
        self.params[part as usize][term as usize].mul(&T::from_count(*v))
    }
    #[inline]
    fn crowding(&mut self, v: &u128) -> Option<T> {
        self.crowded.as_ref().map(|q| q.mul(&T::from_count(*v)))
    }
    #[inline]
    fn time_zero(&mut self) -> T {
        T::nothing()
    }
    #[inline]
    fn time_add(&mut self, a: &T, b: &T) -> T {
        a.add(b)
    }
    #[inline]
    fn time_max(&mut self, a: &T, b: &T, _: Term, _: &str) -> T {
        if a >= b {
            a.clone()
        } else {
            b.clone()
        }
    }
    #[inline]
    fn exposed(&mut self, max: &T, fast: &T, slow: &T) -> Option<T> {
        let (theta, rest) = self.exposed.as_ref()?;
        Some(rest.mul(max).add(&theta.mul(&fast.add(slow))))
    }
}
