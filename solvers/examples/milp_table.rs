//! MILP size and solve time per backend for the shipped programs and generated chains.
//!
//! `cargo run --release -p absinthe-solvers --example milp_table [-- --time-limit S] [-- --chains 8,16]`
//! prints a markdown table (the one in docs/PERFORMANCE.md).

use std::path::Path;
use std::time::Instant;

use absinthe_model::analysis::Analysis;
use absinthe_model::generate::chain;
use absinthe_model::machine::Machine;
use absinthe_model::milp::{milp, MilpOptions};
use absinthe_model::program::Program;
use absinthe_solvers::optimize::optimize;
use absinthe_solvers::SolveOptions;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|p| args.get(p + 1))
            .cloned()
    };
    let time_limit: f64 = flag("--time-limit")
        .and_then(|s| s.parse().ok())
        .unwrap_or(60.0);
    let chains: Vec<usize> = flag("--chains")
        .unwrap_or_else(|| "8,16,32,64".into())
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();
    let solvers: Vec<String> = flag("--solvers")
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_else(|| {
            absinthe_solvers::available()
                .iter()
                .map(|s| s.to_string())
                .collect()
        });
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let machine = Machine::load(&root.join("machines/default.yaml"))
        .expect("machine")
        .model_view(8)
        .expect("machine view");

    let mut programs: Vec<(String, String)> = Vec::new();
    for p in ["example2", "hdiff", "heat4", "j3d7pt"] {
        let text =
            std::fs::read_to_string(root.join(format!("configs/{p}.yaml"))).expect("program");
        programs.push((p.to_string(), text));
    }
    for n in chains {
        programs.push((format!("chain{n}"), chain(n, [64, 64, 32])));
    }

    println!(
        "time limit {time_limit} s per solve, relative gap 1e-4, machine machines/default.yaml"
    );
    println!();
    println!("| program | stencils | variables | binaries | integers | constraints | build s | solver | status | gap | solve s | estimate s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, text) in programs {
        let program = Program::from_yaml(&text).expect("valid program");
        let analysis = Analysis::new(&program).expect("valid analysis");
        let options = MilpOptions::default();
        let started = Instant::now();
        let size = milp(&analysis, &machine, &options).milp.size();
        let build = started.elapsed().as_secs_f64();
        for s in &solvers {
            let solver = absinthe_solvers::by_name(s).expect("solver");
            let so = SolveOptions {
                time_limit: Some(time_limit),
                ..SolveOptions::default()
            };
            let (status, gap, secs, est) =
                match optimize(&analysis, &machine, &options, solver.as_ref(), &so) {
                    Ok(o) => (
                        o.solution.status.to_string(),
                        format!("{:.2e}", o.solution.gap),
                        format!("{:.2}", o.solution.seconds),
                        format!("{:.4e}", o.cost.total),
                    ),
                    Err(e) => (format!("error: {e}"), "-".into(), "-".into(), "-".into()),
                };
            println!(
                "| {name} | {} | {} | {} | {} | {} | {build:.3} | {s} | {status} | {gap} | {secs} | {est} |",
                analysis.stencils.len(),
                size.variables,
                size.binaries,
                size.integers,
                size.constraints
            );
        }
    }
}
