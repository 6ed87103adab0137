//! The cache model against the compiled kernel: random programs (some inlined) under random
//! configurations, streamed ones among them, built as trace builds and run with three threads;
//! the access stream each writes is replayed through a plain LRU simulator written here,
//! independently of the model's counting, and every count of every level must equal the
//! model's. `absinthe cache --trace` end to end on a shipped program.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use absinthe_codegen::compile::Toolchain;
use absinthe_codegen::render::{Flush, HarnessOptions, Renderer};
use absinthe_codegen::{lower, Schedule};
use absinthe_model::cost_model::evaluate::evaluate;
use absinthe_model::cost_model::inline_search;
use absinthe_model::formats::machine::{CacheLevel, Machine};
use absinthe_model::support::parallel::parallel_map;
use absinthe_model::support::rng::Rng;

use crate::common::{absinthe, random_codegen_case, random_configuration, root, stderr, stdout};

/// One level as the simulator sees it: lines of the thread's share, line size, sets, ways.
#[derive(Clone, Copy, Debug)]
struct SimLevel {
    lines: u64,
    line: u64,
    sets: u64,
    ways: usize,
}

/// Totals of one level: accesses, compulsory, capacity (fully associative), capacity (set
/// associative).
type Totals = [u64; 4];

/// Replays one thread's addresses through every level: a fully associative LRU cache (the
/// last-use time of each resident line, and the lines ordered by it) and a set-associative one
/// (per set, its lines most recent first).
fn simulate(addresses: &[u64], levels: &[SimLevel]) -> Vec<Totals> {
    levels
        .iter()
        .map(|l| {
            let mut totals = [0u64; 4];
            let mut seen = std::collections::HashSet::new();
            let mut last_use: HashMap<u64, u64> = HashMap::new();
            let mut by_time: BTreeMap<u64, u64> = BTreeMap::new();
            let mut sets: HashMap<u64, VecDeque<u64>> = HashMap::new();
            for (time, &a) in addresses.iter().enumerate() {
                let line = a / l.line;
                let time = time as u64;
                totals[0] += 1;
                let first = seen.insert(line);
                let hit = match last_use.insert(line, time) {
                    Some(t) => {
                        by_time.remove(&t);
                        true
                    }
                    None => false,
                };
                by_time.insert(time, line);
                if by_time.len() as u64 > l.lines {
                    let (_, evicted) = by_time.pop_first().unwrap();
                    last_use.remove(&evicted);
                }
                let set = sets.entry(line % l.sets).or_default();
                let hit_sa = match set.iter().position(|&x| x == line) {
                    Some(at) => {
                        set.remove(at);
                        true
                    }
                    None => false,
                };
                set.push_front(line);
                set.truncate(l.ways);
                if first {
                    totals[1] += 1;
                } else {
                    totals[2] += u64::from(!hit);
                    totals[3] += u64::from(!hit_sa);
                }
            }
            totals
        })
        .collect()
}

/// A trace file's addresses per thread.
fn read_trace(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut threads: Vec<Vec<u64>> = Vec::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        let t: usize = parts.next().unwrap().parse().unwrap();
        let rw = parts.next().unwrap();
        assert!(rw == "R" || rw == "W", "{line}");
        let a: u64 = parts.next().unwrap().parse().unwrap();
        if threads.len() <= t {
            threads.resize(t + 1, Vec::new());
        }
        threads[t].push(a);
    }
    threads
}

/// Two sets of levels. Small ones, so that the random programs' few KiB miss in them: two line
/// sizes, a shared level; rows' counting per line entered runs out of room and goes on access
/// by access (`count::Class::row`). Larger ones, which hold a whole row of every access, so
/// that rows are counted per line entered to their end.
fn level_sets() -> [Vec<CacheLevel>; 2] {
    let level = |name: &str, bytes, line, ways, shared| CacheLevel {
        name: name.into(),
        bytes,
        line,
        ways,
        shared,
    };
    [
        vec![
            level("L1", 512, 64, 2, false),
            level("L2", 4096, 128, 4, false),
            level("L3", 3 * 8192, 64, 8, true),
        ],
        vec![
            level("L1", 8192, 64, 8, false),
            level("L2", 8192, 64, 4, false),
            level("L3", 3 * 65536, 128, 16, true),
        ],
    ]
}

/// The simulated totals of a trace, summed over threads, for `levels` (each thread's).
fn simulated(trace: &[Vec<u64>], levels: &[SimLevel]) -> Vec<Totals> {
    let mut sum = vec![[0u64; 4]; levels.len()];
    for addresses in trace {
        for (s, t) in sum.iter_mut().zip(simulate(addresses, levels)) {
            for (a, b) in s.iter_mut().zip(t) {
                *a += b;
            }
        }
    }
    sum
}

fn modelled(report: &absinthe_cache::CacheReport) -> Vec<Totals> {
    report
        .levels
        .iter()
        .map(|l| {
            let c = &l.counts;
            assert_eq!(c.compulsory, c.compulsory_sa);
            [c.accesses, c.compulsory, c.capacity, c.capacity_sa]
        })
        .collect()
}

#[test]
fn fully_and_set_associative_misses_equal_a_simulation_of_the_kernels_trace() {
    let machine = Machine::load(&root().join("machines/default.yaml")).unwrap();
    let view = machine.model_view(8).unwrap();
    let mut cases: Vec<(String, Schedule)> = Vec::new();
    let mut fields = 0;
    for seed in 0..14u64 {
        let (program, analysis) = random_codegen_case(seed + 300);
        fields += usize::from(!program.fields.is_empty());
        let mut rng = Rng::new(seed.wrapping_mul(104729));
        // Every third case inlines a random stencil that is not an output, where one can be.
        let (program, analysis) = match (0..program.stencils.len())
            .filter(|&s| !program.outputs.contains(&program.stencils[s].name))
            .find(|_| seed % 3 == 0 && rng.chance(70))
        {
            Some(s) => match inline_search::apply(&program, view.params.operations, &[s]) {
                Ok((p, a, _)) => (p, a),
                Err(_) => (program, analysis),
            },
            None => (program, analysis),
        };
        for c in 0..2 {
            let config = random_configuration(&mut rng, program.stencils.len(), analysis.domain);
            let cost = evaluate(&analysis, &view, &config);
            let schedule = lower(&program, &analysis, &config, &cost).unwrap();
            cases.push((
                format!(
                    "seed{seed}.{c} {} stencils {:?} {:?} stream {:?}",
                    program.stencils.len(),
                    config.groups,
                    config.tiles,
                    config.stream
                ),
                schedule,
            ));
        }
    }
    assert!(fields >= 2, "{fields} programs read 1-D or 2-D fields");
    let chunked = crate::common::chunk_rows_finely(&mut cases);
    assert!(
        chunked >= 2,
        "{chunked} groups stream rows in several chunks"
    );
    let groups = cases.iter().flat_map(|(_, s)| &s.groups);
    assert!(
        groups.clone().any(|g| g.stream.is_some()),
        "a group streams"
    );
    assert!(
        groups
            .clone()
            .any(|g| g.steps.iter().any(|s| s.buffer.is_some())),
        "a group has a tile buffer"
    );
    let renderer = Renderer::embedded();
    let tc = Toolchain::new("g++", &["-O0".to_string()])
        .with_cache_dir(root().join("target/absinthe-test-cache"));
    let dir = tempfile::tempdir().unwrap();
    let level_sets = level_sets();
    parallel_map(cases.len(), 2, |n| {
        let (label, schedule) = &cases[n];
        let h = HarnessOptions {
            runs: 1,
            flush: Flush::NONE,
            label: format!("case{n}"),
            trace: true,
            ..HarnessOptions::default()
        };
        let files = renderer.openmp(schedule, Some(&h)).unwrap();
        let exe = tc
            .build(&files.files, &[])
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let path = dir.path().join(format!("case{n}.trace"));
        // Every fifth case traces and models the naive reference instead.
        let timed = if n % 5 == 4 { "reference" } else { "kernel" };
        let out = std::process::Command::new(&exe)
            .args(["1", "0", timed])
            .arg(&path)
            .env("OMP_NUM_THREADS", "3")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("\"verified\":true"),
            "{label}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let trace = read_trace(&path);
        let code = if n % 5 == 4 {
            absinthe_cache::Code::Reference
        } else {
            absinthe_cache::Code::Kernel
        };
        for levels in &level_sets {
            let report = absinthe_cache::model(schedule, code, levels, 3, 1).unwrap();
            assert_eq!(report.threads, 3);
            let per_thread: Vec<SimLevel> = report
                .levels
                .iter()
                .map(|l| SimLevel {
                    lines: l.level.bytes / l.level.line,
                    line: l.level.line,
                    sets: l.level.sets,
                    ways: l.level.ways as usize,
                })
                .collect();
            let (want, got) = (simulated(&trace, &per_thread), modelled(&report));
            assert_eq!(got, want, "{label}: model against the trace's simulation");
            assert!(want[0][0] > 0, "{label}: no access traced");
        }
    });
}

/// The shipped horizontal diffusion at 36x20x4 (its optimum inlines) and the default machine
/// file with a 1 KiB L1 and a shared 8 KiB L2, in `dir`.
fn small_hdiff(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let text = std::fs::read_to_string(root().join("configs/hdiff.yaml"))
        .unwrap()
        .replace("domain: [128, 128, 64]", "domain: [36, 20, 4]");
    let program = dir.join("hdiff_small.yaml");
    std::fs::write(&program, text).unwrap();
    let machine = dir.join("machine.yaml");
    let mut m = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    m.push_str("caches: [{name: L1, bytes: 1024, line: 64, ways: 4}, {name: L2, bytes: 8192, line: 64, ways: 8, shared: true}]\n");
    // Learned with the caches flushed by eviction: `cache` times nothing and so says nothing
    // of the flush.
    m.push_str("learned: {at: x, host: y, samples: 1, r2: {fast: 0.5, slow: 0.5}, flush: evict}\n");
    std::fs::write(&machine, m).unwrap();
    (program, machine)
}

/// `absinthe cache PROGRAM --machine MACHINE --variant VARIANT MORE...`.
fn cache_run(program: &Path, machine: &Path, variant: &str, more: &[&str]) -> std::process::Output {
    let mut args = vec![
        "cache",
        program.to_str().unwrap(),
        "--machine",
        machine.to_str().unwrap(),
        "--variant",
        variant,
    ];
    args.extend_from_slice(more);
    absinthe(&args)
}

#[test]
fn cache_command_counts_what_the_traced_kernel_does() {
    let dir = tempfile::tempdir().unwrap();
    let (program, machine) = small_hdiff(dir.path());
    let cache = |variant: &str, more: &[&str]| cache_run(&program, &machine, variant, more);
    for variant in ["opt", "unfused", "naive"] {
        let trace = dir.path().join(format!("{variant}.trace"));
        let out = cache(
            variant,
            &["--format", "json", "--trace", trace.to_str().unwrap()],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("(the run verified)"),
            "{}",
            stderr(&out)
        );
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let levels = json["levels"].as_array().unwrap();
        assert_eq!(levels.len(), 2);
        assert_eq!(json["threads"], 2);
        // L2 is shared by the two threads: each is modelled with half.
        assert_eq!(levels[1]["bytes"], 4096);
        let report_levels: Vec<SimLevel> = levels
            .iter()
            .map(|l| SimLevel {
                lines: l["bytes"].as_u64().unwrap() / 64,
                line: 64,
                sets: l["sets"].as_u64().unwrap(),
                ways: l["ways"].as_u64().unwrap() as usize,
            })
            .collect();
        let want = simulated(&read_trace(&trace), &report_levels);
        let field = |l: &serde_json::Value, k: &str| l[k].as_u64().unwrap();
        let got: Vec<Totals> = levels
            .iter()
            .map(|l| {
                [
                    field(l, "accesses"),
                    field(l, "compulsory"),
                    field(l, "capacity"),
                    field(l, "capacity_sa"),
                ]
            })
            .collect();
        assert_eq!(got, want, "{variant}");
        assert!(got[0][2] > 0, "{variant}: no capacity miss in a 1 KiB L1");
        // Per stencil and per access site, the counts add up to the level totals.
        let sum = |key: &str| -> u64 {
            json[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| field(&p["levels"][0], "capacity"))
                .sum()
        };
        assert_eq!(sum("stencils"), got[0][2]);
        assert_eq!(sum("accesses"), got[0][2]);
    }
    // The table names every level and stencil.
    let out = cache("unfused", &["--accesses"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    for needle in [
        "L1",
        "L2 (share)",
        "lap",
        "fli",
        "out",
        "reads in(",
        "writes its array",
    ] {
        assert!(table.contains(needle), "{needle} missing:\n{table}");
    }
}

/// `cache --sample`: a group whose first thread finishes within the budget is counted whole,
/// so a lone group's estimate is the exact count; the table and the JSON say it is an
/// estimate; the naive reference, `--trace` and a budget under 65536 are refused.
#[test]
fn cache_sample_estimates_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (program, machine) = small_hdiff(dir.path());
    let cache = |more: &[&str]| cache_run(&program, &machine, "fused", more);
    let exact = cache(&["--format", "json"]);
    let sampled = cache(&["--format", "json", "--sample", "1048576"]);
    assert!(sampled.status.success(), "{}", stderr(&sampled));
    let json = |o: &std::process::Output| -> serde_json::Value {
        serde_json::from_str(&stdout(o)).unwrap()
    };
    let (mut exact, sampled) = (json(&exact), json(&sampled));
    assert_eq!(exact["groups"].as_array().unwrap().len(), 1);
    assert_eq!(sampled["sampled"], 1048576);
    exact["sampled"] = sampled["sampled"].clone();
    assert_eq!(sampled, exact);
    let table = cache(&["--sample", "65536"]);
    assert!(table.status.success(), "{}", stderr(&table));
    assert!(stdout(&table).contains("estimated: each group from empty caches"));
    let naive = cache_run(&program, &machine, "naive", &["--sample", "65536"]);
    assert_eq!(naive.status.code(), Some(1), "{}", stderr(&naive));
    assert!(
        stderr(&naive).contains("naive reference"),
        "{}",
        stderr(&naive)
    );
    for bad in [
        vec!["--sample", "65535"],
        vec!["--sample", "65536", "--trace", "t.trace"],
    ] {
        let out = cache(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
}
