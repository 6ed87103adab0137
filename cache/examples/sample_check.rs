//! `absinthe cache --sample`'s estimate (`cache/src/sample.rs`) and the layer conditions
//! (`cache/src/walk/layer.rs`) against the exact count, and the size and cost of a table of
//! every (group range, tiling) the DP prices (docs/RESULTS.md, "Cache model"; decisions 0057,
//! 0058). The machine file needs `caches:`.
//!
//! ```sh
//! cargo build --release -p absinthe-cache --example sample_check
//! E=target/release/examples/sample_check
//! $E PROGRAM MACHINE BUDGET CONFIGS SEED         # random configurations: exact, per group, sampled
//! $E table PROGRAM MACHINE BUDGET fixed N CHECK  # N random entries of the table of the chosen
//!                                                # inline set timed, the first CHECK counted whole
//! $E table PROGRAM MACHINE layer fixed N CHECK   # the same by layer conditions, each entry's
//!                                                # group lowered alone; checked against the fully
//!                                                # associative count (the sample: set-associative)
//! ```

use std::path::Path;
use std::time::Instant;

use absinthe_codegen::lower;
use absinthe_model::cost_model::evaluate::{evaluate, Configuration, GroupShape, StreamShape};
use absinthe_model::cost_model::inline_search;
use absinthe_model::cost_model::model::{Absinthe, CostModel};
use absinthe_model::cost_model::options::SearchSpace;
use absinthe_model::cost_model::search::admissible_tilings;
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use absinthe_model::support::rng::Rng;

const USAGE: &str = "usage: sample_check PROGRAM MACHINE BUDGET CONFIGS SEED\n       sample_check table PROGRAM MACHINE BUDGET fixed|all N CHECK";

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() == 8 && a[1] == "table" {
        return table(&a[2..]);
    }
    if a.len() != 6 {
        eprintln!("{USAGE}");
        std::process::exit(2);
    }
    let original = Program::load(Path::new(&a[1])).expect("program");
    let machine = Machine::load(Path::new(&a[2])).expect("machine");
    let budget: u64 = a[3].parse().unwrap();
    let configs: usize = a[4].parse().unwrap();
    let mut rng = Rng::new(a[5].parse().unwrap());
    let view = machine.model_view(8).expect("view");
    let levels = machine.caches.clone().expect("caches");
    let threads = machine.cores.unwrap_or(2);
    let model = Absinthe::new(&view);
    let mut worst = vec![0.0f64; levels.len()];
    let mut errs: Vec<Vec<f64>> = vec![Vec::new(); levels.len()];
    for c in 0..configs {
        // A random inline set of non-outputs, then random groups and feasible tilings.
        let inline: Vec<usize> = (0..original.stencils.len())
            .filter(|&s| !original.outputs.contains(&original.stencils[s].name) && rng.chance(50))
            .collect();
        let Ok((program, analysis, _)) =
            inline_search::apply(&original, view.params.operations, &inline)
        else {
            continue;
        };
        let n = program.stencils.len();
        let tilings = admissible_tilings(&analysis, &view, &SearchSpace::default());
        let stream = SearchSpace::default().stream_shape(&analysis, &view);
        let mut groups = vec![0usize; n];
        for s in 1..n {
            groups[s] = groups[s - 1] + usize::from(rng.chance(40));
        }
        let ng = groups[n - 1] + 1;
        let mut tiles = Vec::new();
        let mut streamed = Vec::new();
        for g in 0..ng {
            let lo = groups.iter().position(|&x| x == g).unwrap();
            let hi = groups.iter().rposition(|&x| x == g).unwrap() + 1;
            let shape = model.group(&analysis, lo..hi);
            let s = stream.filter(|_| rng.chance(50));
            let fit: Vec<_> = tilings
                .iter()
                .filter(|t| model.fits(&analysis, &shape, s, t.0))
                .collect();
            let t = if fit.is_empty() {
                [1, 1, 1]
            } else {
                fit[rng.below(fit.len())].0
            };
            tiles.push(t);
            if s.is_some() && !fit.is_empty() {
                streamed.push(g);
            }
        }
        let mut config = Configuration::new(groups, tiles);
        config.stream = streamed;
        let cost = evaluate(&analysis, &view, &config);
        let schedule = lower(&program, &analysis, &config, &cost).expect("lower");
        let t0 = Instant::now();
        let exact =
            absinthe_cache::model(&schedule, absinthe_cache::Code::Kernel, &levels, threads, 2)
                .expect("model");
        let t1 = Instant::now();
        let est =
            absinthe_cache::estimate(&schedule, &levels, threads, budget, 2).expect("estimate");
        let t2 = Instant::now();
        // Each group exactly, from empty caches: what the sample estimates.
        let cold =
            absinthe_cache::estimate(&schedule, &levels, threads, u64::MAX, 2).expect("cold");
        let mut line = format!(
            "{c}: {ng} groups {:?} stream {:?} exact {:.3}s est {:.3}s{}",
            config.tiles,
            config.stream,
            (t1 - t0).as_secs_f64(),
            (t2 - t1).as_secs_f64(),
            ""
        );
        for (l, ((x, e), k)) in exact
            .levels
            .iter()
            .zip(&est.levels)
            .zip(&cold.levels)
            .enumerate()
        {
            let (mx, me, mk) = (
                x.counts.misses_sa() as f64,
                e.counts.misses_sa() as f64,
                k.counts.misses_sa() as f64,
            );
            let err = me / mk.max(1.0) - 1.0;
            worst[l] = worst[l].max(err.abs());
            errs[l].push(err);
            line += &format!(
                " | {} {:.0} cold {:+.1}% est {:+.1}%",
                x.level.name,
                mx,
                100.0 * (mk / mx.max(1.0) - 1.0),
                100.0 * err
            );
        }
        println!("{line}");
    }
    for (l, e) in errs.iter_mut().enumerate() {
        e.sort_by(|a, b| a.abs().partial_cmp(&b.abs()).unwrap());
        let med = e.get(e.len() / 2).copied().unwrap_or(0.0);
        println!(
            "level {l}: median |err| {:.1}%, worst {:.1}%",
            100.0 * med.abs(),
            100.0 * worst[l]
        );
    }
}

/// A (range, tiling) the search priced: the program's stencils (joined by commas), the range's
/// start and end, the tile counts.
type Entry = (String, usize, usize, [usize; 3]);

/// The ABSINTHE model, noting every (stencils, range, tiling) the searches price.
struct Noting<'a> {
    inner: Absinthe<'a>,
    seen: std::sync::Mutex<std::collections::HashSet<Entry>>,
    calls: std::sync::atomic::AtomicUsize,
}

impl CostModel for Noting<'_> {
    type Group = (GroupShape, std::ops::Range<usize>);
    fn machine(&self) -> &ModelMachine {
        self.inner.machine()
    }
    fn group(&self, analysis: &Analysis, range: std::ops::Range<usize>) -> Self::Group {
        (self.inner.group(analysis, range.clone()), range)
    }
    fn fits(
        &self,
        analysis: &Analysis,
        group: &Self::Group,
        stream: Option<StreamShape>,
        tiles: [usize; 3],
    ) -> bool {
        self.inner.fits(analysis, &group.0, stream, tiles)
    }
    fn group_seconds(
        &self,
        analysis: &Analysis,
        group: &Self::Group,
        tiles: [usize; 3],
    ) -> (f64, f64) {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let names: Vec<&str> = analysis.stencils.iter().map(|s| s.name.as_str()).collect();
        self.seen
            .lock()
            .unwrap()
            .insert((names.join(","), group.1.start, group.1.end, tiles));
        self.inner.group_seconds(analysis, &group.0, tiles)
    }
    fn stencil_bound(&self, analysis: &Analysis, stencil: usize) -> f64 {
        self.inner.stencil_bound(analysis, stencil)
    }
}

/// `table PROGRAM MACHINE BUDGET [fixed]`: every (range, tiling) solve's search prices, each
/// group's misses estimated; `fixed`: the chosen inline set's table alone.
fn table(a: &[String]) {
    use absinthe_model::cost_model::inline_search::{choose_inline_with, InlinePolicy};
    let original = Program::load(Path::new(&a[0])).expect("program");
    let machine = Machine::load(Path::new(&a[1])).expect("machine");
    let layer = a[2] == "layer";
    let budget: u64 = if layer { 0 } else { a[2].parse().unwrap() };
    let view = machine.model_view(8).expect("view");
    let levels = machine.caches.clone().expect("caches");
    let threads = machine.cores.unwrap_or(2);
    let (_, analysis, _) =
        inline_search::apply(&original, view.params.operations, &[]).expect("analysis");
    let options = SearchSpace::default();
    let t0 = Instant::now();
    let noting = Noting {
        inner: Absinthe::new(&view),
        seen: Default::default(),
        calls: Default::default(),
    };
    let fixed = a.get(3).is_some_and(|x| x == "fixed");
    if fixed {
        let plain = Absinthe::new(&view);
        let c = choose_inline_with(
            &original,
            &analysis,
            &plain,
            &options,
            &InlinePolicy::Search,
            2,
        )
        .expect("inline");
        let table = absinthe_model::cost_model::search::range_table_with(
            &c.analysis,
            &noting,
            &options,
            2,
            1,
        );
        println!(
            "fixed inline set {:?}: {} ranges evaluated",
            c.names, table.ranges_evaluated
        );
    } else {
        choose_inline_with(
            &original,
            &analysis,
            &noting,
            &options,
            &InlinePolicy::Search,
            2,
        )
        .expect("inline");
    }
    let calls = noting.calls.load(std::sync::atomic::Ordering::Relaxed);
    let mut seen: Vec<_> = noting.seen.into_inner().unwrap().into_iter().collect();
    let sets = seen
        .iter()
        .map(|e| e.0.clone())
        .collect::<std::collections::HashSet<_>>()
        .len();
    seen.sort();
    // A random subset: `a[4]` entries timed, the first `a[5]` of them also counted exactly.
    let (take, check): (usize, usize) = (a[4].parse().unwrap(), a[5].parse().unwrap());
    let mut rng = Rng::new(7);
    let all = seen.len();
    for i in 0..take.min(all) {
        let j = i + rng.below(all - i);
        seen.swap(i, j);
    }
    seen.truncate(take);
    if let Ok(t) = std::env::var("ONLY") {
        seen.retain(|e| format!("{:?}", e.3) == t);
    }
    println!(
        "search {:.2}s: {calls} prices, {} distinct entries over {sets} inline sets",
        t0.elapsed().as_secs_f64(),
        seen.len()
    );
    let t1 = Instant::now();
    // Each inline set applied once.
    type Applied = std::sync::Arc<(Program, Analysis)>;
    let memo: std::sync::Mutex<std::collections::HashMap<Vec<usize>, Applied>> = Default::default();
    let results = absinthe_model::support::parallel::parallel_map(seen.len(), 2, |e| {
        let (names, start, end, tiles) = &seen[e];
        let names: Vec<&str> = names.split(',').collect();
        let range = *start..*end;
        let inline: Vec<usize> = (0..original.stencils.len())
            .filter(|&s| !names.contains(&original.stencils[s].name.as_str()))
            .collect();
        let applied = {
            let mut memo = memo.lock().unwrap();
            memo.entry(inline.clone())
                .or_insert_with(|| {
                    let (p, a, _) =
                        inline_search::apply(&original, view.params.operations, &inline)
                            .expect("apply");
                    std::sync::Arc::new((p, a))
                })
                .clone()
        };
        let (program, an) = (&applied.0, &applied.1);
        let n = program.stencils.len();
        let mut groups = Vec::new();
        let mut gi = 0;
        let mut g = 0;
        for s in 0..n {
            if s > 0 && !(range.contains(&s) && s != range.start) {
                g += 1;
            }
            if s == range.start {
                gi = g;
            }
            groups.push(g);
        }
        let mut tl = vec![[1, 1, 1]; g + 1];
        tl[gi] = *tiles;
        let config = Configuration::new(groups, tl)
            .smallest_working_set(an.domain, options.stream_shape(an, &view));
        let cost = evaluate(an, &view, &config);
        let s = Instant::now();
        let (c, exact) = if layer {
            // The group lowered alone, its misses by layer conditions (fully associative).
            let group =
                absinthe_codegen::lower_group(program, an, &config, &cost, gi).expect("lower");
            let m = absinthe_cache::layer_group(&group, 0, &levels, threads);
            let c = m
                .iter()
                .map(|&m| absinthe_cache::Counts {
                    compulsory: m.round() as u64,
                    ..Default::default()
                })
                .collect();
            (c, false)
        } else {
            let schedule = lower(program, an, &config, &cost).expect("lower");
            absinthe_cache::estimate_group(&schedule, gi, &levels, threads, budget)
                .expect("estimate")
        };
        let took = s.elapsed().as_secs_f64();
        let errs: Vec<f64> = if e < check {
            let schedule = lower(program, an, &config, &cost).expect("lower");
            let (x, _) = absinthe_cache::estimate_group(&schedule, gi, &levels, threads, u64::MAX)
                .expect("exact");
            let misses = |c: &absinthe_cache::Counts| match layer {
                true => c.misses(),
                false => c.misses_sa(),
            };
            c.iter()
                .zip(&x)
                .map(|(c, x)| misses(c) as f64 / misses(x).max(1) as f64 - 1.0)
                .collect()
        } else {
            Vec::new()
        };
        (took, errs, exact, range.len(), *tiles)
    });
    let mut by_level: Vec<Vec<f64>> = vec![Vec::new(); levels.len()];
    for r in &results {
        if !r.1.is_empty() {
            println!(
                "range of {} tiles {:?}: {:.3}s errors {:?}",
                r.3,
                r.4,
                r.0,
                r.1.iter()
                    .map(|e| format!("{:+.1}%", 100.0 * e))
                    .collect::<Vec<_>>()
            );
        }
        for (l, e) in r.1.iter().enumerate() {
            by_level[l].push(e.abs());
        }
    }
    for (l, e) in by_level.iter_mut().enumerate() {
        e.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if !e.is_empty() {
            println!(
                "level {l}: median |err| {:.2}%, 90th {:.2}%, worst {:.2}%",
                100.0 * e[e.len() / 2],
                100.0 * e[e.len() * 9 / 10],
                100.0 * e[e.len() - 1]
            );
        }
    }
    let mut times: Vec<f64> = results.iter().map(|r| r.0).collect();
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("per entry: median {:.4}s, 90th {:.4}s, max {:.4}s, mean {:.4}s; the {all} entries at the mean: {:.0}s on one core", times[times.len() / 2], times[times.len() * 9 / 10], times[times.len() - 1], times.iter().sum::<f64>() / times.len() as f64, times.iter().sum::<f64>() / times.len() as f64 * all as f64);
    let walk: f64 = results.iter().map(|r| r.0).sum();
    println!(
        "table {:.2}s wall ({:.2}s estimating, {} exact of {})",
        t1.elapsed().as_secs_f64(),
        walk,
        results.iter().filter(|r| r.2).count(),
        results.len()
    );
}
