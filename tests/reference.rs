//! Generated code against an independent reference: the interpreter of `model::interp`, which
//! evaluates the expression trees in Rust (no C printing involved). The harness's own check
//! compares the kernel with a reference printed by the same C printer, so a wrong translation
//! of an expression into C passes it; here each harness dumps its kernel's outputs
//! (`ABSINTHE_DUMP_OUTPUTS`) and every element is compared with the interpreter.
//!
//! Tolerances (per element, computed by the interpreter; see `model/src/language/interp.rs`):
//! - exactly, bit for bit (any NaN matching any NaN), wherever no `exp`, `log` or `pow` result
//!   flows into the element: `+ - * /`, `sqrt`, comparisons, logic, the conditional, `min`,
//!   `max`, `abs`, `fabs`, `floor`, `ceil` and literal and input conversions are exact IEEE
//!   operations (the kernels are built with `-ffp-contract=off -fno-fast-math`, x86-64 SSE
//!   arithmetic in the program's type), so any difference is a bug;
//! - `exp`, `log`, `pow`: each library result is within 1 ulp of the mathematical value in
//!   glibc (`LibmAccuracy::glibc`, worst cases 0.5-0.82 ulp documented in glibc's sources),
//!   both for the kernel and for the interpreter (Rust's `std` calls the platform libm), so the
//!   two differ by at most 2 ulps at that call; the interpreter carries that bound through
//!   every later operation with its exact error formula plus one rounding, and where a
//!   comparison or a `min`/`max` choice cannot be decided within the bounds the element gets
//!   the distance between the possible results (or is not checked, when a conforming library
//!   might produce a non-finite value there). The tests report how many elements were checked
//!   each way and require almost all of them to be checked.

use std::path::Path;

use absinthe_codegen::compile::{
    dump_path, read_output_dump, HarnessResult, Toolchain, DUMP_OUTPUTS_ENV,
};
use absinthe_codegen::cuda::{plan, CudaBundleCase, CudaPlan, GpuLimits};
use absinthe_codegen::render::{BundleCase, HarnessOptions, Renderer, TEMPLATES};
use absinthe_codegen::{lower, lower_cuda, Schedule};
use absinthe_model::cost_model::boxes::BlockLimits;
use absinthe_model::cost_model::evaluate::evaluate;
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::generate::{
    random_column_program, random_language_program, random_program, RandomShape,
};
use absinthe_model::language::inline::{candidates, inline_program};
use absinthe_model::language::interp::{
    absinthe_value, agreement, harness_inputs, interpret, Agreement, Evaluation, LibmAccuracy,
};
use absinthe_model::language::levels::Computation;
use absinthe_model::language::program::{Program, ValueType};
use absinthe_model::support::rng::Rng;

use crate::common::{build_and_run_bundles, root, valid_configuration};

fn machine() -> ModelMachine {
    Machine::load(&root().join("machines/default.yaml"))
        .unwrap()
        .model_view(8)
        .unwrap()
}

fn toolchain() -> Toolchain {
    Toolchain::new("g++", &["-O1".to_string()])
        .with_cache_dir(root().join("target/absinthe-test-cache"))
}

/// A program with its interpretation.
struct Subject {
    text: String,
    program: Program,
    analysis: Analysis,
    evaluation: Evaluation,
}

fn subject(text: String) -> Subject {
    let program = Program::from_yaml(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let analysis = Analysis::new(&program).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let scalars = program.scalar_values(&[]).unwrap();
    let evaluation = interpret(
        &program,
        &analysis,
        &harness_inputs,
        &scalars,
        &LibmAccuracy::glibc(),
    )
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    Subject {
        text,
        program,
        analysis,
        evaluation,
    }
}

/// `seed`'s program: the whole language (`random_language_program`) for most seeds, the
/// code-generation tests' rich programs for every fifth; float for odd seeds. Domains up to
/// 6 x 6 x 4.
fn random_subject(seed: u64) -> Subject {
    let shape = RandomShape {
        min_stencils: 1,
        max_stencils: 5,
        min_domain: 1,
        max_domain: 6,
        max_offset: 1 + (seed % 2) as i64,
        rich_expressions: true,
    };
    let mut text = if seed % 5 == 4 {
        random_program(seed, &shape)
    } else {
        random_language_program(seed, &shape)
    };
    // At most 4 cells along k.
    let domain_line = text.lines().find(|l| l.starts_with("domain:")).unwrap();
    let dims: Vec<usize> = domain_line
        .trim_start_matches("domain: [")
        .trim_end_matches(']')
        .split(", ")
        .map(|d| d.parse().unwrap())
        .collect();
    if dims[2] > 4 {
        let shorter = format!("domain: [{}, {}, {}]", dims[0], dims[1], 1 + dims[2] % 4);
        text = text.replacen(domain_line, &shorter, 1);
    }
    if seed % 2 == 1 {
        text = text.replacen("\ndomain:", "\ntype: float\ndomain:", 1);
    }
    subject(text)
}

/// One generated kernel to check: its subject, schedule and a description for messages.
struct Case {
    label: String,
    subject: usize,
    description: String,
    schedule: Schedule,
    cuda: Option<CudaPlan>,
}

fn cases(subjects: &[Subject], per_subject: usize, cuda: bool, seed: u64) -> Vec<Case> {
    let m = machine();
    let mut out = Vec::new();
    for (n, s) in subjects.iter().enumerate() {
        let mut rng = Rng::new(seed ^ (n as u64).wrapping_mul(7919));
        for c in 0..per_subject {
            // Every third case inlines a random set of stencils: the kernel is of the
            // rewritten program, its harness and the interpreter are of the original.
            let inline: Vec<usize> = if rng.below(3) == 0 {
                candidates(&s.analysis)
                    .into_iter()
                    .filter(|_| rng.chance(60))
                    .collect()
            } else {
                Vec::new()
            };
            let (program, analysis) = match inline_program(&s.program, &inline) {
                Ok(p) => {
                    let a = Analysis::new(&p).unwrap_or_else(|e| panic!("{e:?}\n{}", s.text));
                    (p, a)
                }
                Err(_) => (s.program.clone(), s.analysis.clone()),
            };
            let inlined = s.program.stencils.len() - program.stencils.len();
            // Whole columns, nothing streamed in a program with a sweep
            // (`Infeasibility::Sweep`), and a 2-D stencil alone in its group.
            let config = valid_configuration(&mut rng, &analysis);
            let cost = evaluate(&analysis, &m, &config);
            let schedule = if cuda {
                lower_cuda(&program, &analysis, &config, &cost, BlockLimits::staged(&m)).unwrap()
            } else {
                lower(&program, &analysis, &config, &cost).unwrap()
            }
            .with_reference(&s.program, &s.analysis);
            let (cuda, smem) = if cuda {
                let limits = GpuLimits {
                    shared_bytes_per_block: *rng.pick(&[0, 600, 4096, 48 << 10]),
                    ..GpuLimits::h100()
                };
                (
                    Some(plan(&schedule, &limits).unwrap()),
                    limits.shared_bytes_per_block,
                )
            } else {
                (None, 0)
            };
            out.push(Case {
                label: format!("ref{}_{n}_{c}", if cuda.is_some() { "cuda" } else { "omp" }),
                subject: n,
                description: format!(
                    "{} inlined {inlined} groups {:?} tiles {:?}{}",
                    s.program.name,
                    config.groups,
                    config.tiles,
                    if cuda.is_some() {
                        format!(" smem {smem}")
                    } else {
                        String::new()
                    }
                ),
                schedule,
                cuda,
            });
        }
    }
    out
}

/// Renders the cases in bundles of `per_bundle`, compiles them (two at a time) and runs each
/// with the outputs dumped into `dump_dir`; every harness must also pass its own bit-for-bit
/// check.
fn run_cases(cases: &[Case], per_bundle: usize, dump_dir: &Path) {
    let renderer = Renderer::embedded();
    let options: Vec<HarnessOptions> = cases
        .iter()
        .map(|c| HarnessOptions {
            runs: 0,
            flush: absinthe_codegen::render::Flush::NONE,
            label: c.label.clone(),
            ..HarnessOptions::default()
        })
        .collect();
    let sources: Vec<String> = cases
        .chunks(per_bundle)
        .zip(options.chunks(per_bundle))
        .map(|(cs, hs)| {
            if cs[0].cuda.is_some() {
                let bundle: Vec<CudaBundleCase> = cs
                    .iter()
                    .zip(hs)
                    .map(|(c, h)| CudaBundleCase {
                        s: &c.schedule,
                        c: c.cuda.as_ref().unwrap(),
                        h,
                    })
                    .collect();
                renderer.cuda_bundle(&bundle).unwrap()
            } else {
                let bundle: Vec<BundleCase> = cs
                    .iter()
                    .zip(hs)
                    .map(|(c, h)| BundleCase { s: &c.schedule, h })
                    .collect();
                renderer.bundle(&bundle).unwrap()
            }
        })
        .collect();
    let tc = toolchain();
    let dir = dump_dir.to_str().unwrap();
    let env = [("OMP_NUM_THREADS", "2"), (DUMP_OUTPUTS_ENV, dir)];
    let results: Vec<HarnessResult> = build_and_run_bundles(&tc, &sources, &env)
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(results.len(), cases.len());
    for r in &results {
        assert!(
            r.verified,
            "{} differs from its printed reference: {:?}",
            r.label, r.mismatch
        );
    }
}

/// How the elements of some cases were checked.
#[derive(Debug, Default)]
struct Tally {
    exact: usize,
    within_bound: usize,
    unchecked: usize,
    /// The largest |got − expected| seen among elements with a finite non-zero bound, in ulps
    /// of the program's type at the expected value.
    max_ulps: f64,
}

impl Tally {
    fn total(&self) -> usize {
        self.exact + self.within_bound + self.unchecked
    }
}

fn ulp_at(x: f64, vt: ValueType) -> f64 {
    match vt {
        ValueType::Double => (x.abs().next_up() - x.abs()).max(f64::MIN_POSITIVE),
        ValueType::Float => {
            let f = x.abs() as f32;
            ((f.next_up() - f) as f64).max(f32::MIN_POSITIVE as f64)
        }
    }
}

/// Compares dumped outputs with the interpreter, element by element. The first mismatch is
/// returned as a message naming the array, the element, both values and the bound.
fn compare(
    evaluation: &Evaluation,
    dumped: &[(String, Vec<f64>)],
    tally: &mut Tally,
) -> Result<(), String> {
    if dumped.len() != evaluation.outputs.len() {
        return Err(format!(
            "{} outputs dumped, {} interpreted",
            dumped.len(),
            evaluation.outputs.len()
        ));
    }
    let [nx, ny, _] = evaluation.domain;
    for ((name, got), want) in dumped.iter().zip(&evaluation.outputs) {
        if *name != want.name || got.len() != want.values.len() {
            return Err(format!("dumped {name} does not line up with {}", want.name));
        }
        for (n, (&g, (&w, &b))) in got
            .iter()
            .zip(want.values.iter().zip(&want.bounds))
            .enumerate()
        {
            match agreement(g, w, b) {
                Agreement::Exact => tally.exact += 1,
                Agreement::WithinBound => {
                    tally.within_bound += 1;
                    let ulps = (g - w).abs() / ulp_at(w, evaluation.value_type);
                    tally.max_ulps = tally.max_ulps.max(ulps);
                }
                Agreement::Unchecked => tally.unchecked += 1,
                Agreement::Mismatch => {
                    return Err(format!(
                        "{name}({}, {}, {}): generated {g:e} ({:#x}), interpreted {w:e} ({:#x}), bound {b:e}",
                        n % nx,
                        n / nx % ny,
                        n / (nx * ny),
                        g.to_bits(),
                        w.to_bits()
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Runs the cases and compares every dump with the interpreter; panics on the first mismatch.
fn check(subjects: &[Subject], cases: &[Case], per_bundle: usize) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    run_cases(cases, per_bundle, dir.path());
    let mut tally = Tally::default();
    for c in cases {
        let s = &subjects[c.subject];
        let dumped = read_output_dump(&dump_path(dir.path(), &c.label), &c.schedule)
            .unwrap_or_else(|e| panic!("{}: {e}", c.label));
        if let Err(e) = compare(&s.evaluation, &dumped, &mut tally) {
            panic!(
                "{} ({}): the generated code differs from the interpreter: {e}\n{}",
                c.label, c.description, s.text
            );
        }
    }
    tally
}

/// Cases whose program has run-time scalars (the generated kernel takes their values as
/// arguments, the harness passes their defaults, the interpreter was given the same).
fn with_scalars(subjects: &[Subject], cases: &[Case]) -> usize {
    cases
        .iter()
        .filter(|c| !subjects[c.subject].program.scalars.is_empty())
        .count()
}

/// Cases whose program reads a field (`fields:`, from `generate::with_random_fields`).
fn with_fields(subjects: &[Subject], cases: &[Case]) -> usize {
    cases
        .iter()
        .filter(|c| !subjects[c.subject].program.fields.is_empty())
        .count()
}

fn report(what: &str, cases: usize, tally: &Tally) {
    eprintln!(
        "{what}: {cases} cases, {} elements: {} bit for bit, {} within their bound (largest \
         difference {} ulps), {} not checkable",
        tally.total(),
        tally.exact,
        tally.within_bound,
        tally.max_ulps,
        tally.unchecked
    );
    // The comparison must mostly be a real one: exact elements dominate, libm-affected ones
    // occur, unchecked ones are rare.
    assert!(tally.exact > tally.total() / 2, "{tally:?}");
    assert!(tally.within_bound > 0, "{tally:?}");
    assert!(tally.unchecked * 50 <= tally.total(), "{tally:?}");
}

#[test]
fn openmp_kernels_match_the_interpreter() {
    let subjects: Vec<Subject> = (0..120).map(random_subject).collect();
    let cases = cases(&subjects, 2, false, 1);
    let inlined = cases
        .iter()
        .filter(|c| !c.description.contains("inlined 0 "))
        .count();
    assert!(inlined >= 30, "{inlined} cases inline something");
    assert!(with_scalars(&subjects, &cases) >= 60);
    assert!(
        with_fields(&subjects, &cases) >= 30,
        "{}",
        with_fields(&subjects, &cases)
    );
    let tally = check(&subjects, &cases, 40);
    report("OpenMP", cases.len(), &tally);
    assert!(cases.len() >= 200);
}

#[test]
fn sweeps_and_intervals_match_the_interpreter() {
    let subjects: Vec<Subject> = (0..80)
        .map(|seed| {
            let text = random_column_program(seed);
            subject(match seed % 2 {
                1 => text.replacen("\ndomain:", "\ntype: float\ndomain:", 1),
                _ => text,
            })
        })
        .collect();
    let sweeps = subjects.iter().filter(|s| s.analysis.has_sweeps()).count();
    let intervals = subjects
        .iter()
        .filter(|s| s.analysis.stencils.iter().any(|st| st.intervals))
        .count();
    assert!(sweeps >= 40 && intervals >= 55, "{sweeps} {intervals}");
    let cases = cases(&subjects, 3, false, 3);
    assert!(with_scalars(&subjects, &cases) >= 60);
    assert!(
        with_fields(&subjects, &cases) >= 30,
        "{}",
        with_fields(&subjects, &cases)
    );
    // 2-D stencils, computed once per column (`generate::random_column_program`'s `pl`).
    let planes = cases
        .iter()
        .filter(|c| {
            let a = &subjects[c.subject].analysis;
            (0..a.stencils.len()).any(|s| a.is_plane(s))
        })
        .count();
    assert!(planes >= 40, "{planes} cases with a 2-D stencil");
    let tally = check(&subjects, &cases, 40);
    // No libm call in these programs: every element is compared bit for bit.
    eprintln!(
        "sweeps and intervals: {} cases, {} elements bit for bit",
        cases.len(),
        tally.exact
    );
    assert_eq!(tally.exact, tally.total(), "{tally:?}");
    assert!(cases.len() >= 240);
}

#[test]
fn emulated_cuda_sweeps_and_intervals_match_the_interpreter() {
    // Column programs: forward and backward sweeps (each thread walks its columns in the
    // sweep's order), stencils by intervals, 2-D stencils and fields, at random groupings and
    // tiles (z tiles and streaming where the program has no sweep).
    let sweeping = (0..40).map(random_column_program);
    let parallel = (40..4000)
        .map(random_column_program)
        .filter(|t| t.contains("intervals:") && !t.contains("computation:"))
        .take(16);
    let subjects: Vec<Subject> = sweeping.chain(parallel).map(subject).collect();
    let cases = cases(&subjects, 2, true, 5);
    let count = |f: &dyn Fn(&Analysis) -> bool| {
        cases
            .iter()
            .filter(|c| f(&subjects[c.subject].analysis))
            .count()
    };
    let sweeps = count(&|a| a.has_sweeps());
    let backward = count(&|a| {
        a.stencils
            .iter()
            .any(|s| s.computation == Computation::Backward)
    });
    let planes = count(&|a| (0..a.stencils.len()).any(|s| a.is_plane(s)));
    let intervals = count(&|a| a.stencils.iter().any(|s| s.intervals));
    assert!(
        sweeps >= 40 && backward >= 15 && planes >= 20 && intervals >= 70,
        "{sweeps} sweeps, {backward} backward, {planes} 2-D, {intervals} intervals"
    );
    assert!(
        with_fields(&subjects, &cases) >= 20,
        "{}",
        with_fields(&subjects, &cases)
    );
    let tally = check(&subjects, &cases, 24);
    assert_eq!(tally.exact, tally.total(), "{tally:?}");
    eprintln!(
        "CUDA emulation of sweeps and intervals: {} cases ({sweeps} with sweeps, {planes} with 2-D stencils), {} elements bit for bit",
        cases.len(),
        tally.exact
    );
}

#[test]
fn emulated_cuda_kernels_match_the_interpreter() {
    let subjects: Vec<Subject> = (1000..1060).map(random_subject).collect();
    let cases = cases(&subjects, 1, true, 2);
    let placements: Vec<bool> = cases
        .iter()
        .flat_map(|c| c.cuda.as_ref().unwrap().groups.iter())
        .flat_map(|g| g.buffers.iter().map(|b| b.shared))
        .collect();
    assert!(placements.contains(&true) && placements.contains(&false));
    assert!(with_scalars(&subjects, &cases) >= 15);
    assert!(
        with_fields(&subjects, &cases) >= 10,
        "{}",
        with_fields(&subjects, &cases)
    );
    let tally = check(&subjects, &cases, 30);
    report("CUDA emulation", cases.len(), &tally);
    assert!(cases.len() >= 50);
}

/// Literals whose decimal value rounds to a different float directly than through double: the
/// float kernel must use the float nearest to the literal as written.
#[test]
fn float_literals_in_generated_code_are_rounded_once() {
    let text = "name: literals
domain: [2, 2, 1]
halo: [0, 0, 0]
outputs: [a, b]
type: float
stencils:
  - name: a
    expr: x(i,j,k) * 0 + 1.00000005960464477539062499
  - name: b
    expr: x(i,j,k) - 1.00000017881393432617187501
"
    .to_string();
    let s = subject(text);
    assert_eq!(s.evaluation.outputs[0].values[0], 1.0);
    let subjects = [s];
    let cases = cases(&subjects, 1, false, 3);
    check(&subjects, &cases, 1);
}

/// The comparison fails on a value one ulp off, for an element that must match exactly and
/// for the dumped output of a real kernel altered by one ulp.
#[test]
fn a_value_one_ulp_off_is_detected() {
    // The first float and double programs with an element that must match exactly and one
    // with a libm bound.
    let pick = |want: ValueType| {
        (0..)
            .map(random_subject)
            .find(|s| {
                let bounds = || s.evaluation.outputs.iter().flat_map(|o| &o.bounds);
                s.program.value_type == want
                    && bounds().any(|&b| b == 0.0)
                    && bounds().any(|&b| b > 0.0 && b.is_finite())
            })
            .unwrap()
    };
    let subjects = [pick(ValueType::Float), pick(ValueType::Double)];
    let cases = cases(&subjects, 1, false, 4);
    let dir = tempfile::tempdir().unwrap();
    run_cases(&cases, 8, dir.path());
    for c in &cases {
        let s = &subjects[c.subject];
        let vt = s.program.value_type;
        let dumped = read_output_dump(&dump_path(dir.path(), &c.label), &c.schedule).unwrap();
        compare(&s.evaluation, &dumped, &mut Tally::default()).unwrap();
        let one_ulp_up = |x: f64| match vt {
            ValueType::Double => x.next_up(),
            ValueType::Float => (x as f32).next_up() as f64,
        };
        // Every exactly-checked element, perturbed by one ulp in the interpreter's result.
        let mut perturbed = 0;
        for (o, out) in s.evaluation.outputs.iter().enumerate() {
            for n in 0..out.values.len() {
                if out.bounds[n] != 0.0 || !out.values[n].is_finite() {
                    continue;
                }
                let mut wrong = s.evaluation.clone();
                wrong.outputs[o].values[n] = one_ulp_up(out.values[n]);
                let e = compare(&wrong, &dumped, &mut Tally::default())
                    .expect_err("one ulp off must be a mismatch");
                assert!(e.contains(&out.name), "{e}");
                perturbed += 1;
            }
        }
        assert!(perturbed > 0);
        // An element with a libm bound, the interpreter's value moved to the first value of
        // the type beyond the bound from the kernel's.
        let (o, n) = s
            .evaluation
            .outputs
            .iter()
            .enumerate()
            .find_map(|(o, out)| {
                (0..out.values.len())
                    .find(|&n| out.bounds[n] > 0.0 && out.bounds[n].is_finite())
                    .map(|n| (o, n))
            })
            .unwrap();
        let (got, bound) = (dumped[o].1[n], s.evaluation.outputs[o].bounds[n]);
        let mut beyond = match s.program.value_type {
            ValueType::Double => got + bound,
            ValueType::Float => (got + bound) as f32 as f64,
        };
        while (beyond - got).abs() <= bound {
            beyond = one_ulp_up(beyond);
        }
        let mut wrong = s.evaluation.clone();
        wrong.outputs[o].values[n] = beyond;
        assert!(compare(&wrong, &dumped, &mut Tally::default()).is_err());
        wrong.outputs[o].values[n] = got;
        compare(&wrong, &dumped, &mut Tally::default()).unwrap();
        // The dump of the kernel, one element one ulp off.
        let mut wrong_dump = dumped.clone();
        let (o, n) = s
            .evaluation
            .outputs
            .iter()
            .enumerate()
            .find_map(|(o, out)| {
                (0..out.values.len())
                    .find(|&n| out.bounds[n] == 0.0 && out.values[n].is_finite())
                    .map(|n| (o, n))
            })
            .unwrap();
        wrong_dump[o].1[n] = one_ulp_up(wrong_dump[o].1[n]);
        assert!(compare(&s.evaluation, &wrong_dump, &mut Tally::default()).is_err());
    }
}

/// `absinthe_value` in Rust is the harness's function: the C function is taken from the
/// template, compiled, and its bits compared for indices in and around the domain.
#[test]
fn absinthe_value_is_the_harness_function() {
    let body = TEMPLATES
        .iter()
        .find(|(n, _)| *n == "reference.j2")
        .unwrap()
        .1;
    let start = body.find("static double absinthe_value(").unwrap();
    let end = start + body[start..].find("\n}\n").unwrap() + 3;
    let function = &body[start..end];
    let points: Vec<[i64; 4]> = (0..40)
        .map(|n: i64| [n % 7, n - 20, (n * 7) % 13 - 6, (n * n) % 9 - 3])
        .chain([[0, 0, 0, 0], [12, -3, -3, -3], [3, 4095, -4096, 100000]])
        .collect();
    let calls: String = points
        .iter()
        .map(|p| {
            format!(
                "    show(absinthe_value({}ULL, {}L, {}L, {}L));\n",
                p[0], p[1], p[2], p[3]
            )
        })
        .collect();
    let source = format!(
        "#include <cstdio>\n#include <cstring>\n{function}\nstatic void show(double v) {{ unsigned long long b; std::memcpy(&b, &v, 8); std::printf(\"%llx\\n\", b); }}\nint main() {{\n{calls}    return 0;\n}}\n"
    );
    let exe = toolchain()
        .build(&[("values.cpp".to_string(), source)], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    let printed: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect();
    assert_eq!(printed.len(), points.len());
    for (p, bits) in points.iter().zip(printed) {
        let v = absinthe_value(p[0] as u64, p[1], p[2], p[3]);
        assert_eq!(
            v.to_bits(),
            bits,
            "absinthe_value{p:?}: {v} vs C {}",
            f64::from_bits(bits)
        );
    }
}

#[test]
fn inlined_programs_interpret_to_the_same_outputs_bit_for_bit() {
    // Every stencil that is not an output, and random subsets, inlined: the interpreter gives
    // the same bits (and the same bounds) for every output, on the same inputs (by name).
    let mut rng = Rng::new(77);
    let mut checked = 0;
    for seed in 0..150 {
        let s = random_subject(seed);
        let all = candidates(&s.analysis);
        let some: Vec<usize> = all.iter().copied().filter(|_| rng.chance(50)).collect();
        for set in [all, some] {
            if set.is_empty() {
                continue;
            }
            let Ok(p) = inline_program(&s.program, &set) else {
                continue;
            };
            let a = Analysis::new(&p).unwrap_or_else(|e| panic!("{e:?}\n{}", s.text));
            assert_eq!(p.stencils.len() + set.len(), s.program.stencils.len());
            let by_name = |id: usize, at: [i64; 3]| {
                harness_inputs(s.analysis.array_id(&a.arrays[id].name).unwrap(), at)
            };
            let scalars = p.scalar_values(&[]).unwrap();
            let e = interpret(&p, &a, &by_name, &scalars, &LibmAccuracy::glibc()).unwrap();
            assert_eq!(e.outputs.len(), s.evaluation.outputs.len());
            for (got, want) in e.outputs.iter().zip(&s.evaluation.outputs) {
                assert_eq!(got.name, want.name);
                for (k, (x, y)) in got.values.iter().zip(&want.values).enumerate() {
                    assert!(
                        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                        "seed {seed}, {set:?} inlined: {} element {k} is {x:e}, the original gives {y:e}\n{}",
                        got.name,
                        s.text
                    );
                }
                assert_eq!(
                    got.bounds, want.bounds,
                    "seed {seed}: bounds of {}",
                    got.name
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 100, "only {checked} inline sets checked");
}
