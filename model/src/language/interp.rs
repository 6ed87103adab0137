//! An interpreter of stencil programs: the reference semantics (docs/MODEL.md, "Program file")
//! computed in Rust, straight from the expression trees, with no C printing involved. It is the
//! independent reference the generated code is checked against (`tests/reference.rs`): a wrong
//! translation of an expression into C would pass the harness's own bit-for-bit check, whose
//! reference is printed by the same C printer, but not this one.
//!
//! # Semantics
//! What docs/MODEL.md states, and where it is silent, what is written here:
//! - Every array holds values of the program's type. For `type: float` every operation is done
//!   in `f32` and rounded after each operation (as C does on machines that evaluate float
//!   arithmetic in float, `FLT_EVAL_METHOD == 0`); for `double` in `f64`.
//! - A literal is the decimal number it is written as, rounded once to the program's type.
//! - `+ - * /` and `sqrt` are the IEEE-754 operations (correctly rounded); unary `-` flips the
//!   sign; `abs` and `fabs` are the floating-point absolute value; `floor` and `ceil` round to
//!   an integral value.
//! - Comparisons, `&&`, `||` and `!` yield 1 or 0 in the program's type. A value is true when
//!   it is not equal to 0 (so NaN is true). `c ? a : b` is `a` when `c` is true, else `b`.
//! - `min(a, b)` is `a < b ? a : b` and `max(a, b)` is `a > b ? a : b` (so `min(NaN, b)` is
//!   `b`, `min(a, NaN)` is NaN, `min(-0, +0)` is `+0`).
//! - `exp`, `log` and `pow` are the C library's functions, with the special cases of ISO C
//!   Annex F. Their results are not correctly rounded and differ between libraries, so the
//!   interpreter calls the platform's (through Rust's `std`) and tracks how far a conforming
//!   implementation may be from it (below).
//! - Inputs hold values on domain plus halo. Each stencil is evaluated, in program order, on
//!   the domain grown by its analysis extent ([`StencilInfo::extent`]); its `let` locals are
//!   evaluated in order before its expression.
//!
//! # Bounds
//! Next to every value the interpreter carries a bound on |C − interpreted|, where C is what
//! any implementation computes that performs the IEEE operations above exactly and whose `exp`,
//! `log` and `pow` are within [`LibmAccuracy`] ulps of the mathematical result (and so are the
//! platform's, which the interpreter calls). A value that no libm result flows into has bound
//! 0: it must match bit for bit. A libm result gets 2·U ulps (both libraries' errors), and
//! later operations propagate bounds with their exact error formulas plus one rounding
//! (interval reasoning, outward-rounded). Where a comparison, a truth test or a `min`/`max`
//! choice cannot be decided within the bounds the result may be either: comparisons get
//! bound 1 (0 against 1), conditionals the distance between their branches. A bound is
//! infinite (the element cannot be checked) where a conforming implementation might produce a
//! non-finite value, e.g. a division by an interval containing 0 or an overflow.
//!
//! # Parts
//! One file each: the value types (`real`), values with their bounds (`tracked`), comparisons
//! and the choices they decide (`truth`), the operators and library calls (`operations`,
//! `libm`), and the evaluation of a program over its fields (`machine`).
//!
//! [`StencilInfo::extent`]: crate::language::analysis::StencilInfo::extent

use crate::language::analysis::{Analysis, ArrayId};
use crate::language::program::{Program, ValueType};

mod libm;
mod machine;
mod operations;
mod real;
mod tracked;
mod truth;

use machine::run;

/// The input values the generated harness uses (`absinthe_value` in `harness_body.j2`), bit
/// for bit: a SplitMix64-style hash of the array id and the element's indices (relative to the
/// domain origin, negative in the halo) mapped to `[0.5, 1.5)`. The harness converts it to the
/// program's type (round to nearest), as [`interpret`] does.
pub fn absinthe_value(array: u64, i: i64, j: i64, k: i64) -> f64 {
    let mut z = array.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= (i.wrapping_add(4096) as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= (j.wrapping_add(4096) as u64).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= (k.wrapping_add(4096) as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // 2^-53, exactly; (z >> 11) < 2^53 converts exactly.
    0.5 + (z >> 11) as f64 * f64::from_bits(((1023 - 53) as u64) << 52)
}

/// The value the generated harness gives the program's scalar number `index` when none is
/// given (`--scalar`): `absinthe_value(2^32 + index, 0, 0, 0)`, in `[0.5, 1.5)`.
pub fn scalar_default(index: usize) -> f64 {
    absinthe_value((1u64 << 32) + index as u64, 0, 0, 0)
}

/// The inputs of the generated harness: `absinthe_value(array id, i, j, k)`.
pub fn harness_inputs(array: ArrayId, at: [i64; 3]) -> f64 {
    absinthe_value(array as u64, at[0], at[1], at[2])
}

/// How far (in ulps of the result's type, at the result's magnitude) a library's `exp`, `log`
/// and `pow` may be from the mathematical result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LibmAccuracy {
    pub exp_ulps: f64,
    pub log_ulps: f64,
    pub pow_ulps: f64,
}

impl LibmAccuracy {
    /// glibc 2.28 and later (the OpenMP kernels and the CUDA host emulation, and Rust's `std`
    /// on Linux, which calls the same library): the routines documented in glibc's sources
    /// (`sysdeps/ieee754/dbl-64/e_exp.c`, `e_log.c`, `e_pow.c`, `flt-32/e_expf.c`, `e_logf.c`,
    /// `e_powf.c`) have worst-case errors of 0.51, 0.52, 0.52 ulp (double) and 0.502, 0.82,
    /// 0.82 ulp (float); before 2.28 the double ones were correctly rounded. 1 ulp covers all.
    pub fn glibc() -> LibmAccuracy {
        LibmAccuracy {
            exp_ulps: 1.0,
            log_ulps: 1.0,
            pow_ulps: 1.0,
        }
    }

    /// CUDA's device library (CUDA C++ Programming Guide, "Mathematical Functions", maximum
    /// ulp error over the full range): `exp` 1, `log` 1, `pow` 2 (double); `expf` 2, `logf` 1,
    /// `powf` 4 (float). The larger of the two per function, for a kernel on a GPU.
    pub fn cuda() -> LibmAccuracy {
        LibmAccuracy {
            exp_ulps: 2.0,
            log_ulps: 1.0,
            pow_ulps: 4.0,
        }
    }
}

/// One output array over the domain.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputValues {
    /// The stencil's index in the program.
    pub stencil: usize,
    pub name: String,
    /// Values over the domain, `i` fastest, then `j`, then `k`: element `(i, j, k)` at
    /// `i + j * nx + k * nx * ny` (a 2-D stencil's over `(i, j)` only). Float values are
    /// widened to `f64` (exactly).
    pub values: Vec<f64>,
    /// Per element, the bound on |C − interpreted| (module docs): 0 where the element must
    /// match bit for bit, infinite where it cannot be checked.
    pub bounds: Vec<f64>,
}

/// What [`interpret`] computes: the program's outputs, in program order.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub value_type: ValueType,
    pub domain: [usize; 3],
    pub outputs: Vec<OutputValues>,
}

/// An interpreter failure: a program the analysis should have rejected (a bug if it happens).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("interpreter: {0}")]
pub struct InterpError(pub String);

/// Runs `program` on inputs `input(array id, [i, j, k])` (indices relative to the domain
/// origin, halo included; converted to the program's type by rounding to nearest) and returns
/// its outputs over the domain with their bounds under `accuracy`. `scalars` holds the values of
/// the program's run-time scalars, in the order of `program.scalars` (rounded to the program's
/// type like the inputs).
pub fn interpret(
    program: &Program,
    analysis: &Analysis,
    input: &dyn Fn(ArrayId, [i64; 3]) -> f64,
    scalars: &[f64],
    accuracy: &LibmAccuracy,
) -> Result<Evaluation, InterpError> {
    match program.value_type {
        ValueType::Double => run::<f64>(program, analysis, input, scalars, accuracy),
        ValueType::Float => run::<f32>(program, analysis, input, scalars, accuracy),
    }
}

/// How a generated value compares with the interpreted one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Bound 0 and the same bits (any NaN matches any NaN: the language does not define NaN
    /// payloads or signs, and compilers may swap the operands of `+` and `*`).
    Exact,
    /// Finite bound, and |got − expected| within it.
    WithinBound,
    /// Infinite bound: not checked.
    Unchecked,
    /// Neither: the generated code is wrong (or the interpreter is).
    Mismatch,
}

/// Compares a value `got` from generated code with the interpreted `expected` and its `bound`
/// (both as `f64`; float values widened, which keeps their bits distinct).
pub fn agreement(got: f64, expected: f64, bound: f64) -> Agreement {
    if bound == 0.0 {
        if got.to_bits() == expected.to_bits() || (got.is_nan() && expected.is_nan()) {
            Agreement::Exact
        } else {
            Agreement::Mismatch
        }
    } else if bound.is_finite() {
        if (got - expected).abs() <= bound {
            Agreement::WithinBound
        } else {
            Agreement::Mismatch
        }
    } else {
        Agreement::Unchecked
    }
}

#[cfg(test)]
mod tests {
    use super::real::Real;
    use super::*;

    fn program(text: &str) -> (Program, Analysis) {
        let p = Program::from_yaml(text).expect("valid program");
        let a = Analysis::new(&p).expect("valid analysis");
        (p, a)
    }

    /// example2 on a 3x3x1 domain with inputs chosen by hand:
    /// s0 = 0.5 * (i0(i+1,j,k) + i0(i,j,k)), s1 = i1(i,j,k) * (s0(i,j+1,k) - s0(i,j-1,k)).
    const EXAMPLE2_SMALL: &str = r#"name: example2
domain: [3, 3, 1]
halo: [1, 1, 0]
outputs: [s1]
stencils:
  - name: s0
    expr: "0.5 * (i0(i+1,j,k) + i0(i,j,k))"
  - name: s1
    expr: "i1(i,j,k) * (s0(i,j+1,k) - s0(i,j-1,k))"
"#;

    /// i0 = i + 10 j (exact in both types), i1 = 1 + k + 0.25 i.
    fn example2_inputs(a: &Analysis) -> impl Fn(ArrayId, [i64; 3]) -> f64 + '_ {
        move |id, [i, j, k]| match a.arrays[id].name.as_str() {
            "i0" => (i + 10 * j) as f64,
            "i1" => 1.0 + k as f64 + 0.25 * i as f64,
            other => panic!("no input {other}"),
        }
    }

    #[test]
    fn example2_by_hand() {
        let (p, a) = program(EXAMPLE2_SMALL);
        let e = interpret(&p, &a, &example2_inputs(&a), &[], &LibmAccuracy::glibc()).unwrap();
        assert_eq!(e.outputs.len(), 1);
        assert_eq!(e.outputs[0].name, "s1");
        // s0(i, j) = 0.5 (i+1 + 10j + i + 10j) = i + 0.5 + 10 j, so
        // s0(i, j+1) - s0(i, j-1) = 20 and s1 = 20 (1 + 0.25 i) = 20, 25, 30 on every row.
        let want: Vec<f64> = (0..3).flat_map(|_| [20.0, 25.0, 30.0]).collect();
        assert_eq!(e.outputs[0].values, want);
        assert!(e.outputs[0].bounds.iter().all(|&b| b == 0.0));
    }

    #[test]
    fn float_program_rounds_every_operation_to_f32() {
        let text = r#"name: f
domain: [3, 1, 1]
halo: [0, 0, 0]
outputs: [s, u]
type: float
stencils:
  - name: s
    let:
      t: x(i,j,k) * 0.1
    expr: "t + x(i,j,k) * 0.2"
  - name: u
    expr: "x(i,j,k) * 0 + 16777216 + 1"
"#;
        let (p, a) = program(text);
        // Inputs are rounded to float first: 1/3 + i.
        let input = |_: ArrayId, [i, _, _]: [i64; 3]| 1.0 / 3.0 + i as f64;
        let e = interpret(&p, &a, &input, &[], &LibmAccuracy::glibc()).unwrap();
        let by_hand = |i: i64| {
            let x = (1.0f64 / 3.0 + i as f64) as f32;
            let t = x * 0.1f32;
            (t + x * 0.2f32) as f64
        };
        let in_double = |i: i64| {
            let x = (1.0f64 / 3.0 + i as f64) as f32 as f64;
            ((x * 0.1 + x * 0.2) as f32) as f64
        };
        let s = &e.outputs[0].values;
        assert_eq!(s, &[by_hand(0), by_hand(1), by_hand(2)]);
        assert!(
            (0..3).any(|i| s[i as usize] != in_double(i)),
            "double arithmetic rounded at the end differs somewhere"
        );
        // 2^24 + 1 is halfway between floats and rounds back to 2^24 (to even); in double
        // arithmetic the 1 would survive.
        assert_eq!(e.outputs[1].values, vec![16777216.0; 3]);
    }

    #[test]
    fn float_literals_are_rounded_once() {
        // 1 + 2^-24 is halfway between two floats; the literal just below it rounds down to 1
        // in one step, but to 1 + 2^-23 through double (which rounds it onto the halfway
        // point, whose shortest decimal lies above it).
        let text = "1.00000005960464477539062499";
        assert_eq!(<f32 as Real>::literal(text), Some(1.0f32));
        let via_double: f32 = format!("{:?}", text.parse::<f64>().unwrap())
            .parse()
            .unwrap();
        assert_eq!(via_double, 1.0f32 + f32::EPSILON);
    }

    #[test]
    fn language_semantics_of_logic_min_max_and_calls() {
        let text = r#"name: l
domain: [1, 1, 1]
halo: [0, 0, 0]
outputs: [a, b, c, d, e, f, g]
stencils:
  - name: a
    expr: "(x(i,j,k) > 0.5) + 2 * (x(i,j,k) == 0.75) + 4 * !x(i,j,k) + 8 * (x(i,j,k) && 0)"
  - name: b
    expr: "min(x(i,j,k), 2) + max(x(i,j,k), 2) * 10"
  - name: c
    expr: "x(i,j,k) - 1 ? 7 : 9"
  - name: d
    expr: "abs(-x(i,j,k)) + floor(-x(i,j,k)) * 10 + ceil(x(i,j,k)) * 100"
  - name: e
    expr: "sqrt(x(i,j,k) - 1)"
  - name: f
    expr: "min(-0.0, 0.0)"
  - name: g
    expr: "log(0.0 * x(i,j,k))"
"#;
        let (p, a) = program(text);
        let input = |_: ArrayId, _: [i64; 3]| 0.75;
        let e = interpret(&p, &a, &input, &[], &LibmAccuracy::glibc()).unwrap();
        let v: Vec<f64> = e.outputs.iter().map(|o| o.values[0]).collect();
        assert_eq!(v[0], 1.0 + 2.0);
        assert_eq!(v[1], 0.75 + 20.0);
        assert_eq!(v[2], 7.0, "-0.25 is true");
        assert_eq!(v[3], 0.75 - 10.0 + 100.0);
        assert!(v[4].is_nan());
        assert_eq!(v[5].to_bits(), 0.0f64.to_bits(), "min(-0, +0) is +0");
        assert_eq!(v[6], f64::NEG_INFINITY);
        for o in &e.outputs {
            assert_eq!(o.bounds, vec![0.0], "{}: no libm error flows in", o.name);
        }
    }

    #[test]
    fn libm_results_get_bounds_that_propagate() {
        let text = r#"name: t
domain: [1, 1, 1]
halo: [0, 0, 0]
outputs: [a, b, c, d, e, f, g, h]
stencils:
  - name: a
    expr: "exp(x(i,j,k))"
  - name: b
    expr: "exp(x(i,j,k)) * 4 - 1"
  - name: c
    expr: "exp(x(i,j,k)) > 1 ? 5 : 6"
  - name: d
    expr: "exp(x(i,j,k)) - exp(x(i,j,k)) < 0"
  - name: e
    expr: "1 / (exp(x(i,j,k)) - exp(x(i,j,k)))"
  - name: f
    expr: "pow(exp(x(i,j,k)) - 2, 2.0)"
  - name: g
    expr: "exp(x(i,j,k)) - exp(x(i,j,k)) == 0 ? 10 : 20"
  - name: h
    expr: "pow(exp(x(i,j,k)) - 2, 0.0) + exp(1000)"
"#;
        let (p, a) = program(text);
        let input = |_: ArrayId, _: [i64; 3]| 0.5;
        let e = interpret(&p, &a, &input, &[], &LibmAccuracy::glibc()).unwrap();
        let ulp_e = f64::EPSILON; // e^0.5 ~ 1.65 is in [1, 2)
        let bound = |n: usize| e.outputs[n].bounds[0];
        assert!(bound(0) >= 2.0 * ulp_e && bound(0) < 2.01 * ulp_e);
        // (r + 2u) * 4 - 1: 8 ulps of [1, 2) plus the rounding of the product (at 4-8: 4
        // ulps) and of the difference (at 4-8: 4 ulps).
        assert!(
            bound(1) >= 16.0 * ulp_e && bound(1) < 16.1 * ulp_e,
            "{}",
            bound(1)
        );
        assert_eq!(bound(2), 0.0, "e^0.5 > 1 is certain");
        assert_eq!(bound(3), 1.0, "0 < 0 is uncertain within the bounds");
        assert_eq!(bound(4), f64::INFINITY, "division by an interval around 0");
        // An integral power of a negative inexact base: |2 a ξ| |a' - a| plus the libm ulps.
        assert!(bound(5) > 0.0 && bound(5) < 1e-15, "{}", bound(5));
        // Either branch may be taken: the distance between them.
        assert!(bound(6) >= 10.0 && bound(6) < 10.1, "{}", bound(6));
        // pow(x, 0) is 1 whatever x is; exp(1000) overflows in every library.
        assert_eq!(e.outputs[7].values[0], f64::INFINITY);
        assert_eq!(bound(7), 0.0);
    }

    #[test]
    fn agreement_detects_one_ulp() {
        let x = 1.0f64 / 3.0;
        assert_eq!(agreement(x, x, 0.0), Agreement::Exact);
        assert_eq!(agreement(x.next_up(), x, 0.0), Agreement::Mismatch);
        assert_eq!(agreement(-0.0, 0.0, 0.0), Agreement::Mismatch);
        assert_eq!(agreement(f64::NAN, -f64::NAN, 0.0), Agreement::Exact);
        assert_eq!(agreement(f64::NAN, 1.0, 0.0), Agreement::Mismatch);
        let f = (1.0f32 / 3.0) as f64;
        let f_next = (1.0f32 / 3.0).next_up() as f64;
        assert_eq!(agreement(f_next, f, 0.0), Agreement::Mismatch);
        assert_eq!(
            agreement(x.next_up(), x, 2.0 * f64::EPSILON),
            Agreement::WithinBound
        );
        assert_eq!(agreement(x + 1e-10, x, 1e-12), Agreement::Mismatch);
        assert_eq!(agreement(f64::NAN, x, 1e-12), Agreement::Mismatch);
        assert_eq!(agreement(5.0, x, f64::INFINITY), Agreement::Unchecked);
    }

    #[test]
    fn absinthe_value_matches_the_c_harness() {
        // Bits printed by the C function of harness_body.j2 (tests/reference.rs compiles it
        // and compares many more points).
        for (a, i, j, k, bits) in [
            (0u64, 0i64, 0i64, 0i64, 0x3fe6_4a40_0644_cc6bu64),
            (3, -2, 5, 1, 0x3feb_ec10_cd22_20c5),
            (7, 100, -3, 40, 0x3fea_6a6e_1a2f_057f),
        ] {
            assert_eq!(
                absinthe_value(a, i, j, k).to_bits(),
                bits,
                "({a}, {i}, {j}, {k})"
            );
        }
    }

    #[test]
    fn random_programs_interpret_without_errors() {
        use crate::language::generate::{random_language_program, RandomShape};
        let shape = RandomShape {
            max_domain: 5,
            max_offset: 2,
            rich_expressions: true,
            ..RandomShape::default()
        };
        let mut with_scalars = 0;
        for seed in 0..200 {
            let text = random_language_program(seed, &shape);
            let (p, a) = program(&text);
            let scalars = p.scalar_values(&[]).unwrap();
            let e = interpret(&p, &a, &harness_inputs, &scalars, &LibmAccuracy::glibc())
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(e.outputs.len(), a.outputs.len());
            with_scalars += !p.scalars.is_empty() as usize;
        }
        assert!(
            (60..140).contains(&with_scalars),
            "{with_scalars} with scalars"
        );
    }

    #[test]
    fn random_column_programs_interpret_without_errors() {
        use crate::language::generate::random_column_program;
        let (mut sweeps, mut intervals) = (0, 0);
        for seed in 0..100 {
            let text = random_column_program(seed);
            let (p, a) = program(&text);
            let scalars = p.scalar_values(&[]).unwrap();
            let e = interpret(&p, &a, &harness_inputs, &scalars, &LibmAccuracy::glibc())
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(e.outputs.len(), a.outputs.len());
            sweeps += a.has_sweeps() as usize;
            intervals += a.stencils.iter().any(|s| s.intervals) as usize;
        }
        assert!(sweeps >= 50 && intervals >= 70, "{sweeps} {intervals}");
    }

    #[test]
    fn scalars_take_their_values_in_the_programs_type() {
        let text = "name: s\ndomain: [2, 1, 1]\nhalo: [0, 0, 0]\noutputs: [out]\ntype: float\nscalars: [dt]\nstencils:\n  - name: out\n    expr: dt * in(i,j,k)\n";
        let (p, a) = program(text);
        let one = |_: usize, _: [i64; 3]| 1.0;
        let e = interpret(&p, &a, &one, &[0.1], &LibmAccuracy::glibc()).unwrap();
        assert_eq!(e.outputs[0].values[0], 0.1f32 as f64);
        let err = interpret(&p, &a, &one, &[], &LibmAccuracy::glibc()).unwrap_err();
        assert!(err
            .0
            .contains("0 scalar values given for the program's 1 scalars"));
    }
}
