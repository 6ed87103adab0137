//! The training programs (docs/decisions/0009-training-design.md) and their tile shapes, and the
//! model's counts for one run — taken from `absinthe_model::cost_model::evaluate::group_cost`, the function `solve`
//! uses, never recomputed here.
//!
//! - **Fast memory**: a chain of nine stencils that read one input at 12 or 20 distinct
//!   positions of its 3x3x3 neighbourhood in all, with their predecessor, only the last one
//!   stored; the middle one reads its predecessor at width 0 or 1 (caches are not flushed
//!   between runs). A third pair reads 12 positions and adds [`HEAVY_TERMS`] products of
//!   differences of those reads, so that operations vary apart from accesses and the fit can tell the
//!   compute parameter from the fast-memory ones. See [`fast_program`].
//! - **Slow memory**: nine stencils, each reading 1, 2 or 3 inputs of its own at boundary width
//!   0, 1 or 2 through the diagonal offsets `(-w,-w,-w), (0,0,0), (w,w,w)`; the even ones are
//!   stored, each odd one feeds the next through the tile's buffer (caches are flushed before
//!   every run). See [`slow_program`].
//!
//! Every program runs as one fused group; the tile counts of a shape are kernel arguments.

use std::fmt::Write;

use absinthe_model::cost_model::evaluate::{
    group_cost, group_shape, prefers_stream, stream_shape, tile_cells, Configuration,
    PeelBodyCount, STORE_WEIGHT,
};
use absinthe_model::formats::machine::{Compute, Crowded, ModelMachine, Params, PeelBody, Slack};
use absinthe_model::formats::model_kind::ModelKind;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::{program_header, Program};

use crate::LearnError;

/// Stencils per training program.
pub const STENCILS: usize = 9;

/// Which parameters a family's runs determine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// `P^f, B^f`, and the compute part's `K^p, K^b`.
    Fast,
    /// `P^b, B^b, P^v, B^v`.
    Slow,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Fast => "fast",
            Family::Slow => "slow",
        }
    }
    /// Names of the fitted coefficients, in the order of [`RunCounts::fit_counts`].
    pub fn coefficient_names(self) -> &'static [&'static str] {
        match self {
            Family::Fast => &["fast.peel", "fast.body", "compute.peel", "compute.body"],
            Family::Slow => &[
                "slow_base.peel",
                "slow_base.body",
                "slow_stream.peel",
                "slow_stream.body",
                "crowded.stream_body",
            ],
        }
    }
}

/// One training program.
#[derive(Clone, Debug)]
pub struct TrainingProgram {
    pub family: Family,
    /// Program YAML.
    pub text: String,
    pub program: Program,
    pub analysis: Analysis,
}

/// The domain every training program runs on: big enough for the largest tile (80 x 55 x 55)
/// and for many tiles per thread, small enough that a run takes milliseconds.
pub const DOMAIN: [usize; 3] = [128, 64, 64];

/// The offsets of a 3x3x3 neighbourhood, nearest first, then a fixed order: the centre, the
/// faces, the edges, the corners.
fn neighbourhood() -> Vec<[i32; 3]> {
    let mut offsets: Vec<[i32; 3]> = Vec::new();
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                offsets.push([dx, dy, dz]);
            }
        }
    }
    offsets.sort_by_key(|o| o.iter().map(|x| x.abs()).sum::<i32>());
    offsets
}

/// The stencil of a fast chain whose read of its predecessor sets the chain's widths.
const WIDENING_STENCIL: usize = STENCILS / 2;

/// The fast-memory program: a chain of nine stencils fused into one group, each reading the
/// input at `positions - 1` (12, 16 or 20 in all) neighbours and its predecessor, which lives
/// in the tile's buffer. Only the last stencil is stored, and only the first loads the input,
/// so seven of nine stencils move nothing to or from slow memory (caches are not flushed
/// between runs, and the input stays in the last-level cache). With `width` > 0 the middle
/// stencil reads its predecessor at `±width` along every dimension instead of at the centre,
/// so the stencils before it have evaluation width `width` on each side and the fit sees the
/// recomputation terms that decide fusion.
///
/// With `heavy`, each stencil's value `v` becomes `v + 0.01 (t_1 + ... + t_12)`, summed as a
/// balanced tree, where each `t_m = (a - b) (c - d)` multiplies differences of inputs the
/// stencil already reads ([`HEAVY_TERMS`]): the same accesses, many more operations, with the
/// parallelism of real stencil arithmetic. Values stay bounded (every stencil halves its
/// predecessor and adds bounded terms), so no run meets infinities or subnormals.
pub fn fast_program(positions: usize, width: i32, heavy: bool, domain: [usize; 3]) -> String {
    let offsets = neighbourhood();
    let reads = |n: usize| -> Vec<String> {
        offsets
            .iter()
            .take(n)
            .map(|o| format!("in({})", index(*o)))
            .collect()
    };
    let names: Vec<String> = (0..STENCILS).map(|s| format!("f{s}")).collect();
    let halo = 1 + width;
    let tag = if heavy { "h" } else { "" };
    let mut text = program_header(
        &format!("learn_fast{positions}{tag}w{width}"),
        &domain,
        &format!("[{halo}, {halo}, {halo}]"),
        &names[STENCILS - 1..],
    );
    for (s, name) in names.iter().enumerate() {
        let expr = if s == 0 {
            format!("0.05 * ({})", reads(positions).join(" + "))
        } else if s == WIDENING_STENCIL && width > 0 {
            let prev = &names[s - 1];
            format!(
                "0.05 * ({}) + 0.25 * ({prev}({}) + {prev}({}))",
                reads(positions - 2).join(" + "),
                index([-width; 3]),
                index([width; 3])
            )
        } else {
            format!(
                "0.05 * ({}) + 0.5 * {}(i,j,k)",
                reads(positions - 1).join(" + "),
                names[s - 1]
            )
        };
        if heavy {
            // Reads the stencil already makes (the first `positions - 2` offsets are read by
            // every stencil of the chain), so the distinct reads do not change.
            let shared = &offsets[..positions - 2];
            let at = |m: usize| format!("in({})", index(shared[m % shared.len()]));
            let terms: Vec<String> = (0..HEAVY_TERMS)
                .map(|m| {
                    format!(
                        "({} - {}) * ({} - {})",
                        at(m),
                        at(m + 1),
                        at(m + 3),
                        at(m + 5)
                    )
                })
                .collect();
            let _ = writeln!(
                text,
                "  - name: {name}\n    let:\n      v: \"{expr}\"\n    expr: \"v + 0.01 * ({})\"",
                balanced_sum(&terms)
            );
        } else {
            let _ = writeln!(text, "  - name: {name}\n    expr: \"{expr}\"");
        }
    }
    text
}

/// The products in the heavy fast programs' extra arithmetic: 12 terms of four operations
/// (two differences, a product, a sum) and the final two, 49 more operations per cell and
/// stencil than their plain twins (which do about 16).
pub const HEAVY_TERMS: usize = 12;

/// `terms` summed as a balanced tree, parenthesised: `((a + b) + (c + d))`. Independent terms
/// and a shallow sum are how stencil arithmetic looks (a laplacian's neighbours, a flux
/// limiter's products): the vector units run them in parallel. A Horner chain, what the heavy
/// programs did before, is one long dependency chain, latency-bound, and taught the compute
/// part twice the seconds per operation that inlined COSMO kernels take.
fn balanced_sum(terms: &[String]) -> String {
    match terms {
        [] => "0.0".into(),
        [t] => t.clone(),
        _ => {
            let (a, b) = terms.split_at(terms.len() / 2);
            format!("({} + {})", balanced_sum(a), balanced_sum(b))
        }
    }
}

/// The slow-memory program whose stencils read `inputs` (1-3) fresh arrays each at boundary
/// width `width` (0-2) through the diagonal offsets `(-w,-w,-w), (0,0,0), (w,w,w)`. Stencils
/// at even positions are stored (outputs); each odd one is read at the centre by the next, so
/// it lives in the tile's buffer and only loads. Real programs load far more than they store,
/// and a store moves twice the bytes of a load (`evaluate::STORE_WEIGHT`): a family in which every
/// stencil stored would fit the per-stencil base parameter to the stores.
pub fn slow_program(inputs: usize, width: i32, domain: [usize; 3]) -> String {
    let names: Vec<String> = (0..STENCILS).map(|s| format!("s{s}")).collect();
    let outputs: Vec<String> = names.iter().step_by(2).cloned().collect();
    let mut text = program_header(
        &format!("learn_slow{inputs}w{width}"),
        &domain,
        "[2, 2, 2]",
        &outputs,
    );
    let offsets: Vec<[i32; 3]> = if width == 0 {
        vec![[0; 3]]
    } else {
        vec![[-width; 3], [0; 3], [width; 3]]
    };
    for (s, name) in names.iter().enumerate() {
        let mut reads = Vec::new();
        for q in 0..inputs {
            for o in &offsets {
                reads.push(format!("a{s}_{q}({})", index(*o)));
            }
        }
        let previous = if s % 2 == 0 && s > 0 {
            format!(" + 0.5 * {}(i,j,k)", names[s - 1])
        } else {
            String::new()
        };
        let _ = writeln!(
            text,
            "  - name: {name}\n    expr: \"0.25 * ({}){previous}\"",
            reads.join(" + ")
        );
    }
    text
}

fn index(o: [i32; 3]) -> String {
    let term = |v: &str, x: i32| match x {
        0 => v.to_string(),
        x if x > 0 => format!("{v}+{x}"),
        x => format!("{v}-{}", -x),
    };
    format!(
        "{},{},{}",
        term("i", o[0]),
        term("j", o[1]),
        term("k", o[2])
    )
}

/// Evaluation widths of the fast chains.
pub const FAST_WIDTHS: [i32; 2] = [0, 1];

/// The fifteen training programs: six fast (12 and 20 positions, and 12 heavy), nine slow.
pub fn programs(domain: [usize; 3]) -> Result<Vec<TrainingProgram>, LearnError> {
    let mut texts = Vec::new();
    for (positions, heavy) in [(12, false), (20, false), (12, true)] {
        for width in FAST_WIDTHS {
            texts.push((Family::Fast, fast_program(positions, width, heavy, domain)));
        }
    }
    for inputs in 1..=3 {
        for width in 0..=2 {
            texts.push((Family::Slow, slow_program(inputs, width, domain)));
        }
    }
    texts
        .into_iter()
        .map(|(family, text)| parsed(family, text))
        .collect()
}

/// A generated program, parsed and analysed.
fn parsed(family: Family, text: String) -> Result<TrainingProgram, LearnError> {
    // A diagnostic here is a bug of the generator, shown with the program it wrote.
    let shown = |d: Vec<absinthe_model::Diagnostic>| {
        let lines: Vec<String> = d
            .iter()
            .map(|d| format!("{}: {}", d.path, d.message))
            .collect();
        LearnError::Program(format!("{}\n{text}", lines.join("\n")))
    };
    let program = Program::from_yaml(&text).map_err(shown)?;
    let analysis = Analysis::new(&program).map_err(shown)?;
    Ok(TrainingProgram {
        family,
        text,
        program,
        analysis,
    })
}

/// The cache-calibration programs ([`wide_program`] of [`WIDE_STENCILS`] stencils) on each of
/// `domains`; slow-memory programs (caches are flushed before every run).
pub fn wide_programs(domains: &[[usize; 3]]) -> Result<Vec<TrainingProgram>, LearnError> {
    domains
        .iter()
        .map(|&d| parsed(Family::Slow, wide_program(WIDE_STENCILS, d)))
        .collect()
}

/// The group-arrays calibration programs ([`fields_program`] of [`FIELDS`] fields) on each
/// of `domains`.
pub fn fields_programs(domains: &[[usize; 3]]) -> Result<Vec<TrainingProgram>, LearnError> {
    domains
        .iter()
        .map(|&d| parsed(Family::Slow, fields_program(FIELDS, d)))
        .collect()
}

/// Arrays a fused run of the whole program touches (inputs, intermediates and outputs of all
/// its stencils): what one tile's working set holds.
pub fn arrays_touched(analysis: &Analysis) -> usize {
    group_shape(analysis, 0..analysis.stencils.len(), STORE_WEIGHT).arrays_touched
}

/// The smallest tile volume (cells) trained on: below it the per-tile constants that the model
/// does not count dominate (a 10x1x1 tile makes 50,000 tiles, and its time is predicted 3.3x
/// too slow). Narrow tiles (1, 2 or 4 cells along x) are trained on: the solver and `random:N`
/// choose them, and without them the fitted per-row costs predict such variants of real
/// programs 3-5x too slow (docs/decisions/0009-training-design.md).
pub const MIN_TILE_VOLUME: usize = 64;

/// The most full-row shapes trained on beside the even spread (see [`tile_sizes`]).
pub const FULL_ROW_SHAPES: usize = 4;

/// Full-row shapes for a spread of `count` shapes: one per five, at most [`FULL_ROW_SHAPES`]
/// (4 for the default 20 and for `--thorough`, none for a tiny test budget).
pub fn full_row_shapes(count: usize) -> usize {
    (count / 5).min(FULL_ROW_SHAPES)
}

/// Tile sizes (x from 1 to 80, y and z from 1 to 55) of at least [`MIN_TILE_VOLUME`] cells
/// whose working set of `arrays` arrays of `value_bytes` fits `capacity_bytes`, `count` of them
/// spread evenly over the grid (all of them when fewer fit), and up to
/// [`full_row_shapes`]`(count)` more whose rows span the whole domain along x (`full_row`),
/// the largest first.
///
/// The solver's optima take whole rows (one tile along x) nearly always; without such shapes
/// the longest trained row is 80 of 128 cells in tiles of at most about 1,400 cells, and the
/// optima of real programs are predicted 1.9-2.7x too slow
/// (docs/decisions/0009-training-design.md).
pub fn tile_sizes(
    arrays: usize,
    value_bytes: usize,
    capacity_bytes: f64,
    count: usize,
    full_row: usize,
) -> Vec<[usize; 3]> {
    let xs = [1, 2, 4, 10, 16, 20, 24, 32, 40, 48, 56, 64, 72, 80];
    let yz = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 40, 48, 55];
    let fits = |x: usize, y: usize, z: usize| {
        let bytes = (x * y * z * arrays * value_bytes) as f64;
        bytes <= capacity_bytes && x * y * z >= MIN_TILE_VOLUME
    };
    let mut all = Vec::new();
    for &x in &xs {
        for &y in &yz {
            for &z in &yz {
                if fits(x, y, z) {
                    all.push([x, y, z]);
                }
            }
        }
    }
    let mut chosen = if count == 0 || all.len() <= count {
        all
    } else {
        (0..count)
            .map(|k| all[k * (all.len() - 1) / (count - 1).max(1)])
            .collect()
    };
    if full_row > *xs.last().unwrap_or(&0) {
        // For each depth z, the tallest face of whole rows that fits; the largest faces first,
        // so that the tiles are as large as the cache allows, as in the optima.
        let mut rows: Vec<[usize; 3]> = Vec::new();
        for &z in &yz {
            if let Some(&y) = yz.iter().rev().find(|&&y| fits(full_row, y, z)) {
                rows.push([full_row, y, z]);
            }
        }
        rows.sort_by_key(|s| std::cmp::Reverse(s[1] * s[2]));
        let wanted = full_row_shapes(count);
        // The tallest faces one and two planes deep too: their groups keep few row streams in
        // flight (`evaluate::crowded`: `s` per plane), the faces above keep many, so the slow fit
        // sees both sides of a crowding limit where the optima are (whole rows, shallow tiles
        // on cosmo_pgrad's grid, docs/decisions/0014-crowding-charge.md).
        let shallow: Vec<[usize; 3]> = if wanted > 0 {
            SHALLOW_DEPTHS
                .iter()
                .filter_map(|&z| rows.iter().find(|s| s[2] == z).copied())
                .collect()
        } else {
            Vec::new()
        };
        chosen.extend(rows.into_iter().take(wanted));
        for s in shallow {
            if !chosen.contains(&s) {
                chosen.push(s);
            }
        }
    }
    chosen
}

/// The depths of the shallow full-row shapes [`tile_sizes`] adds.
pub const SHALLOW_DEPTHS: [usize; 2] = [1, 2];

/// The most full-row shapes [`tile_sizes`] adds for a spread of `count` shapes: the largest
/// faces ([`full_row_shapes`]) and, with them, the shallow ones ([`SHALLOW_DEPTHS`]).
pub fn most_full_row_shapes(count: usize) -> usize {
    match full_row_shapes(count) {
        0 => 0,
        n => n + SHALLOW_DEPTHS.len(),
    }
}

/// The most streamed shapes trained on per slow program (see [`streamed_sizes`]).
pub const STREAMED_SHAPES: usize = 4;

/// Tile sizes at which a slow program is also timed *streamed* (as generated kernels, with
/// `learn --streamed-shapes`), for a spread of `count` shapes: one per five, at most
/// [`STREAMED_SHAPES`] (none for a tiny test budget). Each step's face is contiguous in memory
/// (whole rows when streaming along y, whole planes along z), as in the solver's optima
/// (`1x1x2`, streamed along y, on cosmo_adv5, hdiff and chain8); tiles are 1, 2 or 4 along z
/// and any power of two along y, at least `threads` in all, and the working set the model gives
/// them when streamed (`evaluate::tile_cells`) fits `capacity_bytes`: the largest tiles first.
///
/// The runtime-tiled training kernels cannot stream, so every tile they time fits the cache
/// whole (at most about 1,400 cells for the slow programs' 9-31 arrays), while the optima are
/// tiles of 100,000 cells and more. Measured (docs/decisions/0010-streamed-training-shapes-off.md):
/// streamed tiles with narrow faces, whose rows each start a plane away from the last, run
/// 1.5-3x slower than the model predicts, which has no count for that; trained on, they make
/// four real programs' predictions of six worse. Hence the contiguous faces; with them the
/// predictions are not clearly better either, and the option is off by default.
pub fn streamed_sizes(
    analysis: &Analysis,
    value_bytes: usize,
    capacity_bytes: f64,
    count: usize,
    threads: usize,
) -> Vec<[usize; 3]> {
    let domain = analysis.domain;
    let shape = stream_shape(analysis);
    let arrays = arrays_touched(analysis) as f64;
    let mut candidates: Vec<[usize; 3]> = Vec::new();
    let mut ny = 1;
    while ny <= domain[1] {
        for nz in [1, 2, 4] {
            let tiles = [1, ny, nz.min(domain[2])];
            let (cells, total) = tile_cells(domain, shape, tiles, true);
            let fits = arrays * cells as f64 * value_bytes as f64 <= capacity_bytes * total as f64;
            // Each step's face is contiguous in memory: whole rows along y, or whole planes
            // along z.
            let contiguous = shape.dim == 1 || tiles[1] == 1;
            if tiles[1] * tiles[2] >= threads
                && contiguous
                && fits
                && prefers_stream(domain, shape, tiles)
                && !candidates.contains(&tiles)
            {
                candidates.push(tiles);
            }
        }
        ny *= 2;
    }
    // The largest tiles first; of equal ones, the fewest tiles along z.
    candidates.sort_by_key(|n| (n[0] * n[1] * n[2], n[2]));
    candidates
        .into_iter()
        .take((count / 5).min(STREAMED_SHAPES))
        .map(|n| [0, 1, 2].map(|d| domain[d].div_ceil(n[d])))
        .collect()
}

/// Tile counts `ceil(D / size)` of a tile size.
pub fn tile_counts(size: [usize; 3], domain: [usize; 3]) -> [usize; 3] {
    [0, 1, 2].map(|d| domain[d].div_ceil(size[d].clamp(1, domain[d])))
}

/// The model's counts for one run of a training program at some tile counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunCounts {
    /// Summed over the group's stencils.
    pub counts: absinthe_model::cost_model::evaluate::Counts,
    /// The loop-bound overhead's count: the model charges `(B^b + B^v)` times it.
    pub overhead: f64,
    /// The group's stream weight `Σ s`, its tile counts and the domain: whether it is crowded
    /// under a limit (`evaluate::crowded`).
    pub stream_weight: u64,
    pub tiles: [usize; 3],
    pub domain: [usize; 3],
    /// The slow-memory stream counts with a store weighted like a load: the published form's
    /// (`ModelKind::Absinthe`).
    pub published_stream: PeelBodyCount,
}

impl RunCounts {
    /// Whether the run's group is crowded under the row-stream limit `limit` (0: never).
    pub fn crowded(&self, limit: u64) -> bool {
        absinthe_model::cost_model::evaluate::crowded(
            self.domain,
            self.tiles,
            self.stream_weight,
            limit,
        )
    }

    /// The columns of the family's fit, in [`Family::coefficient_names`] order, with the
    /// crowding charge's column for the row-stream limit `limit` (0: a zero column).
    pub fn fit_counts(&self, family: Family, limit: u64) -> Vec<f64> {
        self.fit_counts_in(family, limit, ModelKind::Linear)
    }

    /// [`RunCounts::fit_counts`] for the form `model`: the published form's compute and
    /// crowding columns are zero and its stream columns count a store like a load.
    pub fn fit_counts_in(&self, family: Family, limit: u64, model: ModelKind) -> Vec<f64> {
        if model == ModelKind::Absinthe {
            let (c, s) = (&self.counts, &self.published_stream);
            return match family {
                Family::Fast => vec![c.fast.peel as f64, c.fast.body as f64, 0.0, 0.0],
                Family::Slow => vec![
                    c.slow_base.peel as f64,
                    c.slow_base.body as f64 + self.overhead,
                    s.peel as f64,
                    s.body as f64 + self.overhead,
                    0.0,
                ],
            };
        }
        let c = &self.counts;
        match family {
            Family::Fast => vec![
                c.fast.peel as f64,
                c.fast.body as f64,
                c.compute.peel as f64,
                c.compute.body as f64,
            ],
            Family::Slow => vec![
                c.slow_base.peel as f64,
                c.slow_base.body as f64 + self.overhead,
                c.slow_stream.peel as f64,
                c.slow_stream.body as f64 + self.overhead,
                if self.crowded(limit) {
                    c.slow_stream.body as f64
                } else {
                    0.0
                },
            ],
        }
    }
}

fn unit_machine(threads: usize, body_base: f64) -> ModelMachine {
    ModelMachine {
        threads,
        cache_values: f64::INFINITY,
        slack: Slack::default(),
        streams: true,
        group_arrays: usize::MAX,
        gpu: false,
        block_threads: absinthe_model::formats::machine::MAX_BLOCK_THREADS,
        model: ModelKind::Linear,
        params: Params {
            fast: PeelBody {
                peel: 0.0,
                body: 0.0,
            },
            slow_base: PeelBody {
                peel: 0.0,
                body: body_base,
            },
            slow_stream: PeelBody {
                peel: 0.0,
                body: 0.0,
            },
            compute: Compute::default(),
            crowded: Crowded::default(),
            operations: Default::default(),
            exposed: 0.0,
        },
    }
}

/// The one-group configuration of a training program at tile counts `tiles`, streamed along
/// the program's stream dimension or not.
pub fn configuration(analysis: &Analysis, tiles: [usize; 3], streamed: bool) -> Configuration {
    let mut config = Configuration::new(vec![0; analysis.stencils.len()], vec![tiles]);
    if streamed {
        config.stream = vec![0];
    }
    config
}

/// The model's counts for `analysis` fused into one group tiled by `tiles`.
pub fn run_counts(analysis: &Analysis, tiles: [usize; 3]) -> RunCounts {
    run_counts_on(analysis, tiles, None)
}

/// [`run_counts`] as a GPU counts them when `gpu_block_threads` is given (the machine's
/// `block_threads`): the fast and compute bodies per lane slot of the thread block's rounds
/// (`GroupShape::gpu_lanes`).
pub fn run_counts_on(
    analysis: &Analysis,
    tiles: [usize; 3],
    gpu_block_threads: Option<usize>,
) -> RunCounts {
    let range = 0..analysis.stencils.len();
    let len = range.len();
    let counting = ModelMachine {
        gpu: gpu_block_threads.is_some(),
        block_threads: gpu_block_threads
            .unwrap_or(absinthe_model::formats::machine::MAX_BLOCK_THREADS),
        ..unit_machine(1, 0.0)
    };
    let cost = group_cost(analysis, &counting, 0, range.clone(), tiles, false);
    let mut counts = absinthe_model::cost_model::evaluate::Counts::default();
    for s in &cost.stencils {
        counts.add(&s.counts);
    }
    let published = ModelMachine {
        model: ModelKind::Absinthe,
        ..unit_machine(1, 0.0)
    };
    let mut published_stream = PeelBodyCount::default();
    for s in &group_cost(analysis, &published, 0, range, tiles, false).stencils {
        published_stream.peel += s.counts.slow_stream.peel;
        published_stream.body += s.counts.slow_stream.body;
    }
    let tiles_total: u64 = tiles.iter().map(|&t| t as u64).product();
    RunCounts {
        counts,
        overhead: absinthe_model::cost_model::evaluate::overhead_count(tiles_total, len) as f64,
        stream_weight: cost.stencils.iter().map(|s| s.stream_weights[0]).sum(),
        tiles,
        domain: analysis.domain,
        published_stream,
    }
}

/// A machine view for lowering (the schedule does not depend on the parameters).
pub fn lowering_machine(threads: usize) -> ModelMachine {
    unit_machine(threads, 0.0)
}

/// Stencils of the cache-calibration programs ([`wide_program`]).
pub const WIDE_STENCILS: usize = 6;

/// A cache-calibration program: a chain of `stencils` stencils, the way a dynamical core's
/// fast-wave step chains gradients and divergences. Stencil `s` differentiates its predecessor
/// (the first: one input) along dimension `s mod 3` by a centred difference, scales it by a
/// fresh input and divides by the sum of another fresh input at two neighbouring cells: every
/// stencil reads two arrays of its own, so a fused tile's working set holds many arrays (19
/// for six stencils: the input, twelve of their own, six stencils) and the halos grow along all three dimensions. Only the last stencil is
/// an output. Its optimum tiles and streams differently as the cache the model assumes grows,
/// which is what `learn` times to choose `cache_fraction` ([`crate::calibrate`]).
pub fn wide_program(stencils: usize, domain: [usize; 3]) -> String {
    let name = format!(
        "learn_wide{stencils}_{}x{}x{}",
        domain[0], domain[1], domain[2]
    );
    let width = stencils.div_ceil(3).max(1);
    let halo = format!("[{width}, {width}, {width}]");
    let last = vec![format!("t{}", stencils.saturating_sub(1))];
    let mut text = program_header(&name, &domain, &halo, &last);
    let along = |d: usize, o: i32| {
        let mut v = [0; 3];
        v[d] = o;
        index(v)
    };
    for s in 0..stencils {
        let d = s % 3;
        let (prev, diff) = if s == 0 {
            let p = "b_in".to_string();
            let diff = format!("{p}({}) - {p}(i,j,k)", along(d, 1));
            (p, diff)
        } else {
            let p = format!("t{}", s - 1);
            let diff = format!("{p}({}) - {p}({})", along(d, 1), along(d, -1));
            (p, diff)
        };
        let (scale, denominator) = (format!("b{}", 2 * s), format!("b{}", 2 * s + 1));
        let _ = writeln!(
            text,
            "  - name: t{s}\n    expr: \"{prev}(i,j,k) - 0.5 * ({diff}) * {scale}(i,j,k) / ({denominator}(i,j,k) + {denominator}({}))\"",
            along(d, 1)
        );
    }
    text
}

/// Fields of the group-arrays calibration programs ([`fields_program`]).
pub const FIELDS: usize = 4;

/// A group-arrays calibration program: one operator applied to `fields` prognostic fields, the
/// way a dynamical core diffuses or advects u, v, w and pp with one coefficient. Per field `f`:
/// a 5-point laplacian `d{f}` of the input `f{f}`, then the output `o{f} = f{f} - c * (the
/// laplacian's centred differences)`. The fields share only `c`: fusing them all saves re-reading
/// it, and a group holds 3 arrays per field and `c` (13 for four fields). The model predicts
/// one group of every field cheapest; what that costs in streams is what `learn` times to
/// choose `group_arrays` ([`crate::calibrate`]).
pub fn fields_program(fields: usize, domain: [usize; 3]) -> String {
    let name = format!(
        "learn_fields{fields}_{}x{}x{}",
        domain[0], domain[1], domain[2]
    );
    let outputs: Vec<String> = (0..fields).map(|f| format!("o{f}")).collect();
    let mut text = program_header(&name, &domain, "[2, 2, 0]", &outputs);
    for f in 0..fields {
        let _ = writeln!(
            text,
            "  - name: d{f}\n    expr: \"-4.0 * f{f}(i,j,k) + f{f}(i-1,j,k) + f{f}(i+1,j,k) + f{f}(i,j-1,k) + f{f}(i,j+1,k)\"\n  - name: o{f}\n    expr: \"f{f}(i,j,k) - c(i,j,k) * (d{f}(i+1,j,k) - d{f}(i-1,j,k) + d{f}(i,j+1,k) - d{f}(i,j-1,k))\""
        );
    }
    text
}
