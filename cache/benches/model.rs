//! Criterion benchmark of the cache model (`cargo bench -p absinthe-cache`): one configuration
//! of cosmo_hdiff4 (16 stencils) counted through three levels (a 48 KiB 12-way L1, a 2 MiB
//! 16-way L2 and a 32 MiB 16-way shared L3), two threads, at 64x64x60 and 256x256x60: all in
//! one group streamed along y in two z tiles with the flux stencils inlined (the shape of its
//! optimum), and unfused untiled; each also estimated from samples of 2^21 accesses a group
//! (`absinthe cache --sample`), and by layer conditions (`absinthe_cache::layer_group`, every
//! group: what one entry of a per-(range, tiling) table costs, times the groups).

use std::path::Path;

use absinthe_codegen::lower;
use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::cost_model::inline_search;
use absinthe_model::formats::machine::{CacheLevel, Machine};
use absinthe_model::language::program::Program;
use criterion::{criterion_group, criterion_main, Criterion};

fn levels() -> Vec<CacheLevel> {
    let level = |name: &str, bytes, ways, shared| CacheLevel {
        name: name.into(),
        bytes,
        line: 64,
        ways,
        shared,
    };
    vec![
        level("L1", 48 << 10, 12, false),
        level("L2", 2 << 20, 16, false),
        level("L3", 32 << 20, 16, true),
    ]
}

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let machine = Machine::load(&root.join("machines/default.yaml")).expect("machine");
    let view = machine.model_view(8).expect("machine view");
    let mut group = c.benchmark_group("cache");
    group.sample_size(10);
    for (file, size) in [
        ("cosmo_hdiff4", "64x64x60"),
        ("cosmo_hdiff4_256", "256x256x60"),
    ] {
        let original = Program::load(&root.join(format!("configs/{file}.yaml"))).expect("program");
        // The laplacians and fluxes inlined into the four outputs.
        let inline: Vec<usize> = (0..original.stencils.len())
            .filter(|&s| !original.outputs.contains(&original.stencils[s].name))
            .collect();
        let (program, analysis, _) =
            inline_search::apply(&original, view.params.operations, &inline).expect("inline");
        let n = program.stencils.len();
        let mut fused = Configuration::new(vec![0; n], vec![[1, 1, 2]]);
        fused.stream = vec![0];
        let (plain, plain_analysis, _) =
            inline_search::apply(&original, view.params.operations, &[]).expect("program");
        let m = plain.stencils.len();
        let unfused = Configuration::new((0..m).collect(), vec![[1, 1, 1]; m]);
        for (name, program, analysis, config) in [
            ("opt-shape", &program, &analysis, fused),
            ("unfused", &plain, &plain_analysis, unfused),
        ] {
            let cost = evaluate(analysis, &view, &config);
            let schedule = lower(program, analysis, &config, &cost).expect("lower");
            group.bench_function(format!("{name}/{size}"), |b| {
                b.iter(|| {
                    absinthe_cache::model(&schedule, absinthe_cache::Code::Kernel, &levels(), 2, 2)
                        .expect("model")
                })
            });
            // `cache --sample 2097152`: each group estimated from a sample.
            group.bench_function(format!("{name}/{size}/sampled"), |b| {
                b.iter(|| {
                    absinthe_cache::estimate(&schedule, &levels(), 2, 1 << 21, 2).expect("estimate")
                })
            });
            // Layer conditions, each group's.
            group.bench_function(format!("{name}/{size}/layer"), |b| {
                b.iter(|| {
                    (0..schedule.groups.len())
                        .map(|g| absinthe_cache::layer_group(&schedule, g, &levels(), 2))
                        .collect::<Vec<_>>()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
