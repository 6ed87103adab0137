//! Criterion benchmark of building and solving the MILP of shipped programs with each
//! backend (`cargo bench -p absinthe-solvers`). The wider table, chains of 8 to 64 stencils
//! included, comes from `make bench-milp` (examples/milp_table.rs).

use std::path::Path;

use absinthe_model::cost_model::options::MilpOptions;
use absinthe_model::encodings::milp::milp;
use absinthe_model::formats::machine::Machine;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use absinthe_solvers::optimize::optimize;
use absinthe_solvers::SolveOptions;
use criterion::{criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let machine = Machine::load(&root.join("machines/default.yaml"))
        .expect("machine")
        .model_view(8)
        .expect("machine view");
    let mut group = c.benchmark_group("milp");
    group.sample_size(10);
    for p in ["example2", "hdiff", "chain8"] {
        let program = Program::load(&root.join(format!("configs/{p}.yaml"))).expect("program");
        let analysis = Analysis::new(&program).expect("analysis");
        let options = MilpOptions::default();
        group.bench_function(format!("build/{p}"), |b| {
            b.iter(|| milp(&analysis, &machine, &options))
        });
        for s in ["highs", "cbc"] {
            let solver = absinthe_solvers::by_name(s).expect("solver");
            group.bench_function(format!("solve/{s}/{p}"), |b| {
                b.iter(|| {
                    optimize(
                        &analysis,
                        &machine,
                        &options,
                        solver.as_ref(),
                        &SolveOptions::default(),
                    )
                    .expect("optimum")
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
