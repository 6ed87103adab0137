//! Program x machine x solver x encoding: MILP size, status, wall seconds (build included) and gap.
//!
//! `cargo run --release -p absinthe-solvers --example milp_table -- [options]` (`make bench-milp`)
//! prints a markdown table (the one in docs/RESULTS.md, "Solve times"). Options:
//!   --time-limit S        per solve (default 30)
//!   --programs a,b        program files under configs/ without .yaml (default: the benchmark set)
//!   --machines a,b        machine files under machines/ without .yaml (default: every shipped one
//!                         with parameters)
//!   --runs s/e,...        solver/encoding pairs (default dp,highs/ranges,cbc/ranges,
//!                         highs/digits,cbc/digits); append `/cold` to a digits run to skip the
//!                         warm start from the DP
//! Wall seconds include building the MILP (and, for the range encoding and dp, the range table).

use std::path::Path;
use std::time::Instant;

use absinthe_model::cost_model::options::{Encoding, MilpOptions};
use absinthe_model::encodings::milp::Encoded;
use absinthe_model::formats::machine::Machine;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use absinthe_solvers::method::Method;
use absinthe_solvers::optimize::optimize_with;
use absinthe_solvers::SolveOptions;

const PROGRAMS: &[&str] = &[
    "example2",
    "hdiff",
    "heat4",
    "j3d7pt",
    "chain8",
    "chain16",
    "cosmo_pgrad",
    "cosmo_hdiff4",
    "cosmo_adv5",
    "chain64",
    "dycore150",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|p| args.get(p + 1))
            .cloned()
    };
    let list = |name: &str, default: &[&str]| -> Vec<String> {
        flag(name)
            .map(|s| s.split(',').map(str::to_string).collect())
            .unwrap_or_else(|| default.iter().map(|s| s.to_string()).collect())
    };
    let time_limit: f64 = flag("--time-limit")
        .and_then(|s| s.parse().ok())
        .unwrap_or(30.0);
    let programs = list("--programs", PROGRAMS);
    let machines = list(
        "--machines",
        &["default", "xeon-sapphire-rapids-2core", "h100"],
    );
    let runs = list(
        "--runs",
        &[
            "dp",
            "highs/ranges",
            "cbc/ranges",
            "highs/digits",
            "cbc/digits",
        ],
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");

    println!("time limit {time_limit} s per solve, relative gap 1e-4; seconds are wall time including the MILP build");
    println!();
    println!("| machine | program | stencils | solver | encoding | variables | binaries | constraints | status | gap | seconds | estimate s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for machine_name in &machines {
        let machine = Machine::load(&root.join(format!("machines/{machine_name}.yaml")))
            .expect("machine file");
        for name in &programs {
            let text = std::fs::read_to_string(root.join(format!("configs/{name}.yaml")))
                .expect("program file");
            let program = Program::from_yaml(&text).expect("valid program");
            let analysis = Analysis::new(&program).expect("valid analysis");
            let view = machine
                .model_view(program.value_type.bytes())
                .expect("machine view");
            for run in &runs {
                let parts: Vec<&str> = run.split('/').collect();
                let solver: Method = parts[0].parse().expect("solver");
                let encoding =
                    Encoding::parse(parts.get(1).copied().unwrap_or("ranges")).expect("encoding");
                let cold = parts.get(2) == Some(&"cold");
                let options = MilpOptions {
                    encoding,
                    warm_start: !cold,
                    ..MilpOptions::default()
                };
                let size = if solver == Method::Dp {
                    None
                } else {
                    Some(Encoded::build(&analysis, &view, &options).milp().size())
                };
                let so = SolveOptions {
                    time_limit: Some(time_limit),
                    ..SolveOptions::default()
                };
                let started = Instant::now();
                let result = optimize_with(&analysis, &view, &options, solver, &so);
                let wall = started.elapsed().as_secs_f64();
                let (status, gap, est) = match result {
                    Ok(o) => (
                        o.solution.status.to_string(),
                        format!("{:.2e}", o.solution.gap),
                        format!("{:.4e}", o.cost.total),
                    ),
                    Err(e) => (
                        format!("error: {}", e.to_string().replace('|', "/")),
                        "-".into(),
                        "-".into(),
                    ),
                };
                let encoding_label = match (solver == Method::Dp, cold) {
                    (true, _) => "-".to_string(),
                    (false, true) => format!("{} (cold)", encoding.name()),
                    (false, false) if encoding == Encoding::Digits => {
                        format!("{} (warm)", encoding.name())
                    }
                    _ => encoding.name().to_string(),
                };
                let (v, b, c) = size.map_or(("-".into(), "-".into(), "-".into()), |s| {
                    (
                        s.variables.to_string(),
                        s.binaries.to_string(),
                        s.constraints.to_string(),
                    )
                });
                println!(
                    "| {machine_name} | {name} | {} | {solver} | {encoding_label} | {v} | {b} | {c} | {status} | {gap} | {wall:.2} | {est} |",
                    analysis.stencils.len(),
                );
            }
        }
    }
}
