//! Shared helpers for the end-to-end tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use absinthe_model::support::rng::Rng;

/// The repository root (where configs/ and machines/ live).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the built `absinthe` binary in the repository root.
pub fn absinthe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_absinthe"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run absinthe")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes `text` to a file in a fresh temporary directory and returns its path.
pub fn temp_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write temp file");
    p
}

/// `machines/default.yaml` as `NAME.yaml` in `dir`, its compiler the shell script `script`
/// (written as `NAME.sh`, executable).
pub fn machine_with_compiler(dir: &Path, name: &str, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let cxx = temp_file(dir, &format!("{name}.sh"), script);
    std::fs::set_permissions(&cxx, std::fs::Permissions::from_mode(0o755)).unwrap();
    let default = std::fs::read_to_string(root().join("machines/default.yaml")).unwrap();
    temp_file(
        dir,
        &format!("{name}.yaml"),
        &default.replace("cxx: g++", &format!("cxx: {}", cxx.display())),
    )
}

pub fn analyse(text: &str) -> Analysis {
    let p = Program::from_yaml(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    Analysis::new(&p).unwrap_or_else(|e| panic!("{e:?}\n{text}"))
}

/// A random machine: threads, cache and parameters drawn so that every constraint binds in
/// some cases, and parameters are sometimes zero.
pub fn random_machine(rng: &mut Rng, cells: usize) -> ModelMachine {
    let cores = rng.range(1, 4);
    let param = |rng: &mut Rng, scale: f64| -> f64 {
        if rng.chance(20) {
            0.0
        } else {
            scale * rng.range(1, 50) as f64 / 10.0
        }
    };
    // Cache between a tenth of and a few times one array of the domain.
    let cache_values = (cells as f64 * rng.range(1, 40) as f64 / 10.0).max(1.0);
    let text = format!(
        "name: random\ncores: {cores}\ncache_bytes: {}\ncache_fraction: 1.0\nvalue_bytes: 8\nslack: {{cores: {}, size: {}}}\nparams:\n  fast: {{peel: {:e}, body: {:e}}}\n  slow_base: {{peel: {:e}, body: {:e}}}\n  slow_stream: {{peel: {:e}, body: {:e}}}\n  compute: {{peel: {:e}, body: {:e}}}\n",
        (cache_values * 8.0).round() as u64,
        rng.pick(&[0.0, 0.05, 0.2, 0.5]),
        rng.pick(&[0.0, 0.02, 0.2, 0.4]),
        param(rng, 1e-10),
        param(rng, 1e-11),
        param(rng, 1e-10),
        param(rng, 1e-11),
        param(rng, 1e-9),
        param(rng, 1e-10),
        param(rng, 1e-11),
        param(rng, 1e-12),
    );
    let mut m = Machine::from_yaml(&text).unwrap_or_else(|e| panic!("{e:?}"));
    // A limit on the arrays per group in a third of the machines.
    if rng.chance(33) {
        m.group_arrays = Some(rng.range(2, 8) as usize);
    }
    // A crowding charge in half of them, at a limit the small random programs cross
    // (`evaluate::crowded`: their groups keep up to a few hundred row streams in flight).
    if rng.chance(50) {
        if let Some(p) = m.params.as_mut() {
            p.crowded.row_streams = rng.range(1, 80) as u64;
            p.crowded.stream_body = rng.range(1, 50) as f64 * 1e-11;
        }
    }
    // An exposed share (`max + θ min`) in a third of them, the whole smaller side at times.
    if rng.chance(33) {
        if let Some(p) = m.params.as_mut() {
            p.exposed = *rng.pick(&[0.25, 0.5, 1.0]);
        }
    }
    m.model_view(8).unwrap()
}

/// A random program for the code-generation property tests (rich expressions, 1-5 stencils,
/// offsets up to 2, domains up to 12; a float program for about a third of the seeds) and its
/// analysis.
pub fn random_codegen_case(
    seed: u64,
) -> (
    absinthe_model::language::program::Program,
    absinthe_model::language::analysis::Analysis,
) {
    let shape = absinthe_model::language::generate::RandomShape {
        min_stencils: 1,
        max_stencils: 5,
        min_domain: 1,
        max_domain: 12,
        max_offset: 2,
        rich_expressions: true,
    };
    let mut text = absinthe_model::language::generate::random_program(seed, &shape);
    if seed.is_multiple_of(3) {
        text = text.replacen("\ndomain:", "\ntype: float\ndomain:", 1);
    }
    let program = Program::from_yaml(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let analysis = Analysis::new(&program).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    (program, analysis)
}

/// Builds every bundle source (`bundle.cpp`) and runs its harness, two at a time; the results of
/// bundle `b` are at index `b`. Panics on a build or run failure, naming it.
pub fn build_and_run_bundles(
    tc: &absinthe_codegen::compile::Toolchain,
    sources: &[String],
    env: &[(&str, &str)],
) -> Vec<Vec<absinthe_codegen::compile::HarnessResult>> {
    absinthe_model::support::parallel::parallel_map(sources.len(), 2, |b| {
        let exe = tc
            .build(&[("bundle.cpp".to_string(), sources[b].clone())], &[])
            .unwrap_or_else(|e| panic!("{e}"));
        absinthe_codegen::compile::run_harness(&exe, &[], env).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// Random contiguous groups and tile counts (1, D, a non-divisor, anything).
pub fn random_configuration(
    rng: &mut Rng,
    stencils: usize,
    domain: [usize; 3],
) -> absinthe_model::cost_model::evaluate::Configuration {
    let mut groups = vec![0];
    for _ in 1..stencils {
        let last = *groups.last().unwrap();
        groups.push(if rng.chance(40) { last + 1 } else { last });
    }
    let n = groups.last().unwrap() + 1;
    let tiles = (0..n)
        .map(|_| [0, 1, 2].map(|d| tile_count(rng, domain[d])))
        .collect();
    let mut config = absinthe_model::cost_model::evaluate::Configuration::new(groups, tiles);
    config.stream = (0..n).filter(|_| rng.chance(50)).collect();
    config
}

/// `config` with its groups split beside every 2-D stencil (`Analysis::forced_cut`: a 2-D
/// stencil is a group of its own); each new group keeps the tiles and the stream flag of the
/// group it came from.
pub fn with_plane_cuts(
    config: absinthe_model::cost_model::evaluate::Configuration,
    analysis: &absinthe_model::language::analysis::Analysis,
) -> absinthe_model::cost_model::evaluate::Configuration {
    let mut groups = vec![0];
    let mut from = vec![config.groups[0]];
    for s in 1..config.groups.len() {
        let cut = config.groups[s] != config.groups[s - 1] || analysis.forced_cut(s - 1);
        if cut {
            groups.push(groups[s - 1] + 1);
            from.push(config.groups[s]);
        } else {
            groups.push(groups[s - 1]);
        }
    }
    let tiles = from.iter().map(|&g| config.tiles[g]).collect();
    let mut out = absinthe_model::cost_model::evaluate::Configuration::new(groups, tiles);
    out.stream = (0..from.len())
        .filter(|&g| config.stream.contains(&from[g]))
        .collect();
    out
}

/// A random configuration the targets accept: 2-D stencils alone, whole columns in a program
/// with a sweep.
pub fn valid_configuration(
    rng: &mut Rng,
    analysis: &absinthe_model::language::analysis::Analysis,
) -> absinthe_model::cost_model::evaluate::Configuration {
    let mut config = random_configuration(rng, analysis.stencils.len(), analysis.domain);
    config = with_plane_cuts(config, analysis);
    if analysis.has_sweeps() {
        config.stream.clear();
        for t in &mut config.tiles {
            t[2] = 1;
        }
    }
    config
}

/// A tile count along an extent `d`: 1, `d`, a non-divisor, or anything.
pub fn tile_count(rng: &mut Rng, d: usize) -> usize {
    match rng.below(4) {
        0 => 1,
        1 => d,
        2 => (1..=d)
            .find(|n| !d.is_multiple_of(*n) && rng.chance(50))
            .unwrap_or(d),
        _ => rng.range(1, d as i64) as usize,
    }
}

/// Sets the streamed groups of every other case of `cases` to chunks of 1 to 3 cells
/// (`GroupSchedule::row_chunk`; 64 in the product, wider than the random programs' rows), so
/// that their rows run in several chunks, some of them empty; returns how many groups take more
/// than one chunk in some tile.
pub fn chunk_rows_finely(cases: &mut [(String, absinthe_codegen::Schedule)]) -> usize {
    let mut several = 0;
    for (n, (label, schedule)) in cases.iter_mut().enumerate().filter(|(n, _)| n % 2 == 1) {
        for g in schedule.groups.iter_mut().filter(|g| g.row_chunk.is_some()) {
            let chunk = 1 + (n / 2 % 3) as i64;
            g.row_chunk = Some(chunk);
            label.push_str(&format!(" rows in chunks of {chunk}"));
            let widest = (0..g.grid[0]).map(|t| {
                let spans = g.loops.iter().map(|lp| {
                    let [lo, hi] = g.steps[lp[0]].loop_box[0][t];
                    hi - lo
                });
                absinthe_codegen::schedule::row_chunks(spans, chunk)
            });
            several += usize::from(widest.max().unwrap_or(1) > 1);
            // Whole prefetch blocks where the finer chunks still hold them.
            let x_boxes = absinthe_codegen::schedule::loop_x_boxes(&g.steps, &g.loops);
            g.whole_blocks =
                absinthe_codegen::schedule::whole_blocks(&x_boxes, chunk, g.prefetch_cells as i64);
        }
    }
    several
}
