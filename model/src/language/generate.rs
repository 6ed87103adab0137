//! Generated stencil programs: random small programs for property tests and long chains for
//! benchmarks. Deterministic from a seed (a SplitMix64 generator, no external crate), written as
//! program YAML so they go through the same parser as user files.

use std::fmt::Write;

use crate::language::program::program_header;

use crate::support::rng::Rng;

mod fields;
use fields::{with_random_fields, with_random_plane};

/// Shape of random programs.
#[derive(Clone, Debug)]
pub struct RandomShape {
    pub min_stencils: usize,
    pub max_stencils: usize,
    /// Domain extents are drawn from 1..=max_domain per dimension (at least min_domain).
    pub min_domain: usize,
    pub max_domain: usize,
    /// Offsets are drawn from -max_offset..=max_offset.
    pub max_offset: i64,
    /// Whether to use the whole expression language (lets, calls, ternaries, comparisons)
    /// rather than sums of products.
    pub rich_expressions: bool,
}

impl Default for RandomShape {
    fn default() -> Self {
        RandomShape {
            min_stencils: 1,
            max_stencils: 5,
            min_domain: 1,
            max_domain: 6,
            max_offset: 1,
            rich_expressions: false,
        }
    }
}

const LITERALS: [&str; 6] = ["0.5", "0.25", "2.0", "1.5", "0.125", "3.0"];

fn access(rng: &mut Rng, array: &str, max_offset: i64, dims_active: [bool; 3]) -> String {
    let idx = ["i", "j", "k"];
    let parts: Vec<String> = (0..3)
        .map(|d| {
            let o = if dims_active[d] {
                rng.range(-max_offset, max_offset)
            } else {
                0
            };
            match o {
                0 => idx[d].to_string(),
                o if o > 0 => format!("{}+{o}", idx[d]),
                o => format!("{}{o}", idx[d]),
            }
        })
        .collect();
    format!("{array}({})", parts.join(", "))
}

fn random_term(
    rng: &mut Rng,
    reads: &[String],
    shape: &RandomShape,
    dims: [bool; 3],
    locals: &[String],
) -> String {
    let arr = rng.pick(reads).clone();
    let a = access(rng, &arr, shape.max_offset, dims);
    if !shape.rich_expressions {
        return if rng.chance(50) {
            format!("{} * {a}", rng.pick(&LITERALS))
        } else {
            a
        };
    }
    match rng.below(8) {
        0 => format!("{} * {a}", rng.pick(&LITERALS)),
        1 => format!("sqrt(fabs({a}) + 1.0)"),
        2 => {
            let arr = rng.pick(reads).clone();
            let b = access(rng, &arr, shape.max_offset, dims);
            format!("({a} > {b} ? {a} - {b} : 0.5 * {b})")
        }
        3 => {
            let arr = rng.pick(reads).clone();
            let b = access(rng, &arr, shape.max_offset, dims);
            format!("min({a}, {b})")
        }
        4 if !locals.is_empty() => format!("{} * {a}", rng.pick(locals)),
        5 => format!("({a} - {}) / 3.0", rng.pick(&LITERALS)),
        6 => format!("-{a}"),
        _ => a,
    }
}

/// The frame of a random program: stencil count, domain, inputs, stencil names, and which
/// dimensions carry offsets (some programs are 2-D-ish, like hdiff).
struct Skeleton {
    n: usize,
    domain: Vec<usize>,
    inputs: Vec<String>,
    names: Vec<String>,
    dims: [bool; 3],
}

fn skeleton(rng: &mut Rng, shape: &RandomShape) -> Skeleton {
    let n = rng.range(shape.min_stencils as i64, shape.max_stencils as i64) as usize;
    let domain: Vec<usize> = (0..3)
        .map(|_| rng.range(shape.min_domain as i64, shape.max_domain as i64) as usize)
        .collect();
    let n_inputs = rng.range(1, 3) as usize;
    Skeleton {
        n,
        domain,
        inputs: (0..n_inputs).map(|k| format!("in{k}")).collect(),
        names: (0..n).map(|k| format!("s{k}")).collect(),
        dims: [true, rng.chance(80), rng.chance(50)],
    }
}

/// A random valid program. The halo is the smallest that admits every read, plus 0 or 1.
pub fn random_program(seed: u64, shape: &RandomShape) -> String {
    let mut rng = Rng::new(seed);
    let Skeleton {
        n,
        domain,
        inputs,
        names,
        dims,
    } = skeleton(&mut rng, shape);
    let mut read_by_later = vec![false; n];
    let mut bodies = Vec::new();
    for s in 0..n {
        let mut pool: Vec<String> = inputs.clone();
        // Prefer recent stencils so chains form.
        for p in s.saturating_sub(3)..s {
            pool.push(names[p].clone());
            pool.push(names[p].clone());
        }
        let n_terms = rng.range(1, 3) as usize;
        let mut locals = Vec::new();
        let mut lets = Vec::new();
        if shape.rich_expressions && rng.chance(30) {
            let arr = rng.pick(&pool).clone();
            let a = access(&mut rng, &arr, shape.max_offset, dims);
            lets.push(("t0".to_string(), format!("{a} * 0.5")));
            locals.push("t0".to_string());
        }
        let mut terms = Vec::new();
        for _ in 0..n_terms {
            terms.push(random_term(&mut rng, &pool, shape, dims, &locals));
        }
        // Make sure the previous stencil is read, so few stencils are dead.
        if s > 0 && !read_by_later[s - 1] && rng.chance(85) {
            let a = access(&mut rng, &names[s - 1], shape.max_offset, dims);
            terms.push(a);
        }
        if !locals.is_empty() && !terms.iter().any(|t| t.contains("t0")) {
            terms.push("t0".to_string());
        }
        let expr = terms.join(" + ");
        mark_reads(&names[..s], &lets, &expr, &mut read_by_later);
        bodies.push((lets, expr));
    }
    let text = program_text(
        &format!("random{seed}"),
        &domain,
        &names,
        &bodies,
        &read_by_later,
        &mut rng,
    );
    match shape.rich_expressions {
        true => with_random_fields(with_random_scalars(text, seed), seed),
        false => text,
    }
}

/// Half the programs (by `seed`, from a generator of its own, so that the program is otherwise
/// the one the seed gave before): one or two run-time scalars `c0`, `c1` declared, and some
/// `let` and stencil expressions `E` rewritten as `(E) * cN` or `cN - (E)`. The reads, and so
/// the extents and the halo, do not change.
fn with_random_scalars(text: String, seed: u64) -> String {
    let mut rng = Rng::new(seed ^ 0x5CA1_A85E_ED00);
    if !rng.chance(50) {
        return text;
    }
    let names: Vec<String> = (0..rng.range(1, 2)).map(|c| format!("c{c}")).collect();
    let mut out = String::new();
    for line in text.lines() {
        if line == "stencils:" {
            let _ = writeln!(out, "scalars: [{}]", names.join(", "));
        }
        let expression = line
            .split_once(": \"")
            .filter(|(key, e)| key.starts_with("    ") && e.ends_with('"'));
        match expression {
            Some((key, e)) if rng.chance(60) => {
                let e = &e[..e.len() - 1];
                let c = rng.pick(&names);
                let rewritten = match rng.chance(50) {
                    true => format!("({e}) * {c}"),
                    false => format!("{c} - ({e})"),
                };
                let _ = writeln!(out, "{key}: \"{rewritten}\"");
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// Marks the earlier stencils (`names`) that a stencil's locals or expression read.
fn mark_reads(names: &[String], lets: &[(String, String)], expr: &str, read: &mut [bool]) {
    for (p, name) in names.iter().enumerate() {
        let needle = format!("{name}(");
        if expr.contains(&needle) || lets.iter().any(|(_, e)| e.contains(&needle)) {
            read[p] = true;
        }
    }
}

/// A generated program as YAML: stencils never read later are outputs (and sometimes one more),
/// the halo is the smallest that admits every read (sometimes one more).
fn program_text(
    name: &str,
    domain: &[usize],
    names: &[String],
    bodies: &[(Vec<(String, String)>, String)],
    read_by_later: &[bool],
    rng: &mut Rng,
) -> String {
    let n = names.len();
    let mut outputs: Vec<String> = (0..n)
        .filter(|&s| !read_by_later[s])
        .map(|s| names[s].clone())
        .collect();
    if rng.chance(30) && n > 1 {
        let extra = names[rng.below(n - 1)].clone();
        if !outputs.contains(&extra) {
            outputs.push(extra);
        }
    }
    let mut text = program_header(name, domain, "HALO", &outputs);
    for (s, (lets, expr)) in bodies.iter().enumerate() {
        let _ = writeln!(text, "  - name: {}", names[s]);
        if !lets.is_empty() {
            text.push_str("    let:\n");
            for (l, e) in lets {
                let _ = writeln!(text, "      {l}: \"{e}\"");
            }
        }
        let _ = writeln!(text, "    expr: \"{expr}\"");
    }
    let halo = required_halo(&text).map(|h| h + (rng.chance(30) as usize));
    text.replace("HALO", &format!("[{}, {}, {}]", halo[0], halo[1], halo[2]))
}

/// The smallest halo admitting every read of a program whose `halo:` line reads `HALO`.
fn required_halo(text_with_placeholder: &str) -> [usize; 3] {
    let big = text_with_placeholder.replace("HALO", "[1000, 1000, 1000]");
    let Ok(program) = crate::language::program::Program::from_yaml(&big) else {
        return [0; 3];
    };
    let Ok(analysis) = crate::language::analysis::Analysis::new(&program) else {
        return [0; 3];
    };
    let mut halo = [0usize; 3];
    for s in &analysis.stencils {
        // Its own extent (a stencil read only through fields is bounded by nothing else).
        for d in (0..3).filter(|&d| analysis.arrays[s.array].dims.has(d)) {
            halo[d] = halo[d].max(s.extent[d][0]).max(s.extent[d][1]);
        }
        for b in s.bounds.values() {
            for d in 0..3 {
                halo[d] = halo[d]
                    .max(s.extent[d][0] + (-b[d].0).max(0) as usize)
                    .max(s.extent[d][1] + b[d].1.max(0) as usize);
            }
        }
    }
    halo
}

/// A chain of `n` stencils for benchmarks, in the style of a dynamical core: stages alternate
/// between a 3-point difference along x, one along y, and a pointwise update that also reads
/// one of two coefficient inputs. The last stencil is the output.
pub fn chain(n: usize, domain: [usize; 3]) -> String {
    let mut text = program_header(
        &format!("chain{n}"),
        &domain,
        "HALO",
        &[format!("c{}", n - 1)],
    );
    for s in 0..n {
        let prev = if s == 0 {
            "in".to_string()
        } else {
            format!("c{}", s - 1)
        };
        let expr = match s % 3 {
            0 => format!("0.25 * ({prev}(i-1,j,k) + 2.0 * {prev}(i,j,k) + {prev}(i+1,j,k))"),
            1 => format!("0.25 * ({prev}(i,j-1,k) + 2.0 * {prev}(i,j,k) + {prev}(i,j+1,k))"),
            _ => format!(
                "{prev}(i,j,k) + {} * (in(i,j,k) - {prev}(i,j,k))",
                if s % 2 == 0 { "wa(i,j,k)" } else { "wb(i,j,k)" }
            ),
        };
        let _ = writeln!(text, "  - name: c{s}\n    expr: \"{expr}\"");
    }
    let halo = required_halo(&text);
    text.replace("HALO", &format!("[{}, {}, {}]", halo[0], halo[1], halo[2]))
}

/// A program shaped like a weather model's dynamical core, for solver benchmarks: `n` stencils
/// in chains of 3-10 stages that share the prognostic inputs (u, v, w, pp, t, qv, rho and two
/// metric coefficients). About 40% of the chains are 3-D (stages may difference along k), the
/// rest horizontal; about a third start from the output of an earlier chain, as tendencies feed
/// later updates. Stages are x and y differences, k differences (3-D chains), pointwise updates
/// with a coefficient, and flux limiters (ternaries). Every chain's last stage is an output.
pub fn dycore(n: usize, domain: [usize; 3], seed: u64) -> String {
    const INPUTS: [&str; 7] = ["u", "v", "w", "pp", "t", "qv", "rho"];
    const COEFFS: [&str; 2] = ["mx", "my"];
    let mut rng = Rng::new(seed);
    // Chain lengths: 3..=10, the last one absorbing the remainder.
    let mut lengths = Vec::new();
    let mut left = n;
    while left > 0 {
        let len = (rng.range(3, 10) as usize).min(left);
        if left - len < 3 && left - len > 0 {
            lengths.push(left);
            break;
        }
        lengths.push(len);
        left -= len;
    }
    let mut text = String::new();
    let _ = writeln!(text, "name: dycore{n}");
    let _ = writeln!(
        text,
        "domain: [{}, {}, {}]",
        domain[0], domain[1], domain[2]
    );
    text.push_str("halo: HALO\n");
    let mut outputs: Vec<String> = Vec::new();
    let mut body = String::new();
    for (c, &len) in lengths.iter().enumerate() {
        let three_d = rng.chance(40);
        let first_input = if !outputs.is_empty() && rng.chance(33) {
            rng.pick(&outputs).clone()
        } else {
            rng.pick(&INPUTS).to_string()
        };
        let second_input = rng.pick(&INPUTS).to_string();
        let mut prev = first_input.clone();
        for s in 0..len {
            let name = format!("c{c}s{s}");
            let coeff = rng.pick(&COEFFS);
            let kinds: &[u8] = if three_d {
                &[0, 1, 2, 3, 4]
            } else {
                &[0, 1, 3, 4]
            };
            let expr = match rng.pick(kinds) {
                0 => format!("0.5 * ({prev}(i+1,j,k) - {prev}(i-1,j,k)) * {coeff}(i,j,k)"),
                1 => format!("0.5 * ({prev}(i,j+1,k) - {prev}(i,j-1,k)) * {coeff}(i,j,k)"),
                2 => format!("0.25 * ({prev}(i,j,k-1) + 2.0 * {prev}(i,j,k) + {prev}(i,j,k+1))"),
                3 => format!(
                    "{prev}(i,j,k) + 0.1 * {coeff}(i,j,k) * ({second_input}(i,j,k) - {prev}(i,j,k))"
                ),
                _ => format!(
                    "({prev}(i+1,j,k) - {prev}(i,j,k)) * ({first_input}(i+1,j,k) - {first_input}(i,j,k)) > 0.0 ? 0.0 : {prev}(i+1,j,k) - {prev}(i,j,k)"
                ),
            };
            let _ = writeln!(body, "  - name: {name}\n    expr: \"{expr}\"");
            prev = name;
        }
        outputs.push(prev);
    }
    let _ = writeln!(text, "outputs: [{}]", outputs.join(", "));
    text.push_str("stencils:\n");
    text.push_str(&body);
    let halo = required_halo(&text);
    text.replace("HALO", &format!("[{}, {}, {}]", halo[0], halo[1], halo[2]))
}

/// Literals for [`random_language_program`]: every form the lexer accepts (`3`, `.75`, `7.`,
/// exponents), values inexact in binary (`0.1`), and long decimals that round differently
/// when rounded to float directly and through double.
const LANGUAGE_LITERALS: [&str; 16] = [
    "0.5",
    "0.25",
    "2.0",
    "1.5",
    "3",
    "0.1",
    "0.3",
    "1e-1",
    "2.5e-1",
    ".75",
    "7.",
    "1.1",
    "0.7",
    "1.00000005960464477539062499",
    "0.333333333333333314829616256247390992939472198486328125",
    "16777217",
];

/// Random expressions over the whole language, for [`random_language_program`].
struct ExprGen<'a> {
    rng: &'a mut Rng,
    pool: &'a [String],
    locals: &'a [String],
    max_offset: i64,
    dims: [bool; 3],
    /// Whether `exp`, `log` and `pow` may occur.
    libm: bool,
}

impl ExprGen<'_> {
    fn access(&mut self) -> String {
        let arr = self.rng.pick(self.pool).clone();
        access(self.rng, &arr, self.max_offset, self.dims)
    }

    fn literal(&mut self) -> String {
        self.rng.pick(&LANGUAGE_LITERALS).to_string()
    }

    fn leaf(&mut self) -> String {
        match self.rng.below(10) {
            0 | 1 => self.literal(),
            2 if !self.locals.is_empty() => self.rng.pick(self.locals).clone(),
            _ => self.access(),
        }
    }

    /// A condition: a comparison, or a logical combination of them and of plain values.
    fn condition(&mut self, depth: usize) -> String {
        const CMP: [&str; 6] = ["<", "<=", ">", ">=", "==", "!="];
        let cmp = |g: &mut Self| {
            let a = g.expr(depth.saturating_sub(1));
            let b = if g.rng.chance(50) {
                g.literal()
            } else {
                g.expr(depth.saturating_sub(1))
            };
            let op = *g.rng.pick(&CMP);
            format!("({a} {op} {b})")
        };
        match self.rng.below(6) {
            0 => format!("({} && {})", cmp(self), cmp(self)),
            1 => format!("({} || !{})", cmp(self), cmp(self)),
            2 => self.expr(depth.saturating_sub(1)),
            _ => cmp(self),
        }
    }

    /// An expression about `depth` levels deep. Guarded forms (`sqrt(fabs(x))`,
    /// `log(fabs(x) + 0.25)`, division by `fabs(y) + 0.5`) keep most values finite; the raw
    /// forms appear too, so NaN, infinities and poles occur.
    fn expr(&mut self, depth: usize) -> String {
        if depth == 0 || self.rng.chance(20) {
            return self.leaf();
        }
        let d = depth - 1;
        let kind = match self.rng.below(16) {
            7 if !self.libm => 10,
            8 if !self.libm => 12,
            9 if !self.libm => 0,
            k => k,
        };
        match kind {
            0 | 1 => {
                let op = *self.rng.pick(&["+", "-", "*"]);
                format!("({} {op} {})", self.expr(d), self.expr(d))
            }
            2 => {
                let (a, b) = (self.expr(d), self.expr(d));
                if self.rng.chance(75) {
                    format!("{a} / (fabs({b}) + 0.5)")
                } else {
                    format!("({a} / {b})")
                }
            }
            3 => format!("-({})", self.expr(d)),
            4 => {
                let c = self.condition(d);
                format!("({c} ? {} : {})", self.expr(d), self.expr(d))
            }
            5 => {
                let c = self.condition(d);
                format!("(2.0 * {c} - 1)")
            }
            6 => {
                let a = self.expr(d);
                if self.rng.chance(80) {
                    format!("sqrt(fabs({a}))")
                } else {
                    format!("sqrt({a})")
                }
            }
            7 => {
                let a = self.expr(d);
                match self.rng.below(4) {
                    0 => format!("exp({a})"),
                    1 => format!("exp(-fabs({a}))"),
                    _ => format!("exp(0.5 * {a})"),
                }
            }
            8 => {
                let a = self.expr(d);
                if self.rng.chance(80) {
                    format!("log(fabs({a}) + 0.25)")
                } else {
                    format!("log({a})")
                }
            }
            9 => {
                let (a, b) = (self.expr(d), self.expr(d));
                match self.rng.below(5) {
                    0 => format!("pow({a}, {b})"),
                    1 => format!("pow({a}, 2.0)"),
                    2 => format!("pow(fabs({a}) + 0.5, {})", self.literal()),
                    _ => format!("pow(fabs({a}) + 0.5, min({b}, 2.0))"),
                }
            }
            10 => {
                let f = *self.rng.pick(&["min", "max"]);
                format!("{f}({}, {})", self.expr(d), self.expr(d))
            }
            11 => {
                let f = *self.rng.pick(&["abs", "fabs"]);
                format!("{f}({})", self.expr(d))
            }
            12 => {
                let f = *self.rng.pick(&["floor", "ceil"]);
                format!("{f}({} * 4.0)", self.expr(d))
            }
            13 => format!("(!{})", self.expr(d)),
            _ => format!("{} * {}", self.literal(), self.expr(d)),
        }
    }
}

/// A random valid program over the whole expression language: every operator and function,
/// `let` locals reading arrays and earlier locals, literals in every form, guarded and raw
/// uses of `sqrt`, `log`, `pow` and division. Half the programs use no `exp`, `log` or `pow`
/// (whose results are not exact across math libraries). The structure (chains of stencils, outputs, the
/// halo) is that of [`random_program`]; `shape.rich_expressions` is ignored.
pub fn random_language_program(seed: u64, shape: &RandomShape) -> String {
    let mut rng = Rng::new(seed ^ 0x5EED_1A46_0A6E);
    let Skeleton {
        n,
        domain,
        inputs,
        names,
        dims,
    } = skeleton(&mut rng, shape);
    let libm = rng.chance(50);
    let mut read_by_later = vec![false; n];
    let mut bodies = Vec::new();
    for s in 0..n {
        let mut pool: Vec<String> = inputs.clone();
        for p in s.saturating_sub(3)..s {
            pool.push(names[p].clone());
            pool.push(names[p].clone());
        }
        let mut locals: Vec<String> = Vec::new();
        let mut lets = Vec::new();
        for l in 0..rng.range(0, 2) {
            let mut g = ExprGen {
                rng: &mut rng,
                pool: &pool,
                locals: &locals,
                max_offset: shape.max_offset,
                dims,
                libm,
            };
            let e = g.expr(2);
            lets.push((format!("t{l}"), e));
            locals.push(format!("t{l}"));
        }
        let mut g = ExprGen {
            rng: &mut rng,
            pool: &pool,
            locals: &locals,
            max_offset: shape.max_offset,
            dims,
            libm,
        };
        let mut expr = g.expr(3);
        if s > 0 && !read_by_later[s - 1] && rng.chance(85) {
            let a = access(&mut rng, &names[s - 1], shape.max_offset, dims);
            expr = format!("{expr} + {a}");
        }
        mark_reads(&names[..s], &lets, &expr, &mut read_by_later);
        bodies.push((lets, expr));
    }
    let text = program_text(
        &format!("language{seed}"),
        &domain,
        &names,
        &bodies,
        &read_by_later,
        &mut rng,
    );
    with_random_fields(with_random_scalars(text, seed), seed)
}

/// A random valid program of vertical operators: stencils computed on every level, by
/// intervals (`[0, 1]`, `[1, -1]`, `[-1, null]`, each reading levels that exist there), forward
/// sweeps (reading their own level below) and backward sweeps (their own level above), reading
/// inputs and earlier stencils at horizontal and vertical offsets; half with run-time scalars
/// ([`with_random_scalars`]) and some with fields ([`with_random_fields`]). At least 3 levels, so that every interval holds one. Deterministic
/// from `seed`; every program it returns parses and analyses.
pub fn random_column_program(seed: u64) -> String {
    let mut attempt = 0u64;
    loop {
        let text = column_program_attempt(seed.wrapping_mul(1_000_003).wrapping_add(attempt));
        let text = with_random_fields(with_random_scalars(text, seed), seed);
        let ok = crate::language::program::Program::from_yaml(&text)
            .ok()
            .is_some_and(|p| crate::language::analysis::Analysis::new(&p).is_ok());
        if ok {
            return text;
        }
        attempt += 1;
    }
}

/// One draw of [`random_column_program`] (not necessarily valid).
fn column_program_attempt(seed: u64) -> String {
    let mut rng = Rng::new(seed ^ 0xC01_0A4E);
    let n = rng.range(2, 5) as usize;
    let domain = [
        rng.range(1, 6) as usize,
        rng.range(1, 5) as usize,
        rng.range(3, 6) as usize,
    ];
    let inputs = ["in0", "in1"];
    // Per stencil: 0 every level, 1 intervals, 2 forward sweep, 3 backward sweep.
    let kinds: Vec<u64> = (0..n).map(|_| rng.below(4) as u64).collect();
    let names: Vec<String> = (0..n).map(|s| format!("s{s}")).collect();
    let mut read = vec![false; n];
    let mut text = format!(
        "name: column{seed}\ndomain: [{}, {}, {}]\nhalo: [1, 1, 1]\noutputs: [OUTPUTS]\nstencils:\n",
        domain[0], domain[1], domain[2]
    );
    for s in 0..n {
        // A read of an input or an earlier stencil at level offset `dk`: horizontal offsets
        // on inputs and on stencils computed on every level at once.
        let term = |rng: &mut Rng, dk: i64, read: &mut [bool]| {
            let pick = rng.below(inputs.len() + s);
            let (array, plain) = match pick < inputs.len() {
                true => (inputs[pick].to_string(), true),
                false => {
                    let p = pick - inputs.len();
                    read[p] = true;
                    (names[p].clone(), kinds[p] == 0)
                }
            };
            let (di, dj, dk) = match plain {
                true => (rng.range(-1, 1), rng.range(-1, 1), dk),
                false => (rng.range(-1, 1) * (s % 2) as i64, 0, dk),
            };
            let index = |v: &str, o: i64| match o {
                0 => v.to_string(),
                o if o > 0 => format!("{v}+{o}"),
                o => format!("{v}{o}"),
            };
            let literal = rng.pick(&LITERALS).to_string();
            format!(
                "{literal} * {array}({}, {}, {})",
                index("i", di),
                index("j", dj),
                index("k", dk)
            )
        };
        let _ = writeln!(text, "  - name: {}", names[s]);
        let own = &names[s];
        match kinds[s] {
            0 => {
                let dk = if rng.chance(50) { 0 } else { rng.range(-1, 1) };
                let a = term(&mut rng, dk, &mut read);
                let b = term(&mut rng, 0, &mut read);
                let _ = writeln!(text, "    expr: \"{a} + {b}\"");
            }
            1 => {
                text.push_str("    intervals:\n");
                for (k, lo, hi) in [("[0, 1]", 0, 1), ("[1, -1]", -1, 1), ("[-1, null]", -1, 0)] {
                    let a = term(&mut rng, lo, &mut read);
                    let b = term(&mut rng, hi, &mut read);
                    let _ = writeln!(text, "      - k: {k}\n        expr: \"{a} - {b}\"");
                }
            }
            kind => {
                let forward = kind == 2;
                let _ = writeln!(
                    text,
                    "    computation: {}",
                    if forward { "forward" } else { "backward" }
                );
                text.push_str("    intervals:\n");
                let (first, rest, dk) = match forward {
                    true => ("[0, 1]", "[1, null]", "k-1"),
                    false => ("[-1, null]", "[0, -1]", "k+1"),
                };
                let a = term(&mut rng, 0, &mut read);
                let b = term(&mut rng, 0, &mut read);
                let _ = writeln!(text, "      - k: {first}\n        expr: \"{a}\"");
                let _ = writeln!(
                    text,
                    "      - k: {rest}\n        let:\n          prev: \"{own}(i, j, {dk})\"\n        expr: \"{b} + 0.5 * prev\""
                );
            }
        }
    }
    let mut outputs: Vec<&str> = (0..n)
        .filter(|&s| !read[s] || s == n - 1)
        .map(|s| names[s].as_str())
        .collect();
    let text = with_random_plane(text, &mut rng, &names[n - 1], &mut outputs);
    text.replace("OUTPUTS", &outputs.join(", "))
}
