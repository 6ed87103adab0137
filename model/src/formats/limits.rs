//! The bounds absinthe puts on every number a user supplies, in one place. `check` (the program
//! and machine readers) enforces them, so that no later stage overflows: with every bound
//! below, the padded array sizes, element offsets and byte offsets the code generator prints fit
//! a signed 64-bit integer, and every access offset after inlining fits an `i32` (an inlined
//! read lies within the halo, which the analysis checks).

/// Cells of the domain plus its halos, `(nx + 2hx) (ny + 2hy) (nz + 2hz)`: 2^40, an 8 TiB array
/// of doubles.
pub const MAX_CELLS: u128 = 1 << 40;

/// Cells along one dimension of the domain: 2^31 - 1, so that loop bounds fit an `int`.
pub const MAX_EXTENT: usize = i32::MAX as usize;

/// Halo width along a dimension, and so the farthest cell a program may read beyond the
/// domain, inlined reads included: 2^16.
pub const MAX_HALO: usize = 1 << 16;

/// Largest constant offset of an access as written, `|o|`: the halo bound (a larger one reads
/// beyond any halo absinthe accepts).
pub const MAX_OFFSET: i32 = MAX_HALO as i32;

/// Stencils of a program: 4096. The exact search keeps the best tilings of every contiguous
/// range of stencils that fits the cache, up to `n (n + 1) / 2` ranges, so this bounds its
/// memory.
pub const MAX_STENCILS: usize = 4096;

/// Run-time scalars of a program (`scalars:`): 1024, each an argument of the generated
/// function.
pub const MAX_SCALARS: usize = 1024;

/// Intervals of one stencil (`intervals:`).
pub const MAX_INTERVALS: usize = 1024;

/// Threads of a machine (`cores`): 4096.
pub const MAX_THREADS: usize = 4096;

/// Solver and search threads (`--threads`): 256. Each is an operating-system thread, and a
/// solver gains nothing from more threads than the machine has cores.
pub const MAX_SOLVER_THREADS: usize = 256;

/// Tile-count triples one group's search lists at most. Above it the candidate tile counts of
/// the longest dimensions are thinned to a ladder of tile sizes (`search::admissible_tile_counts`);
/// each entry takes 32 bytes, so the list stays under 64 MiB.
pub const MAX_TILINGS: usize = 1 << 21;

/// Bytes of a cache level (`cache_bytes`): 1 TiB.
pub const MAX_CACHE_BYTES: u64 = 1 << 40;
/// The most levels a machine file's `caches:` lists.
pub const MAX_CACHE_LEVELS: usize = 8;

/// The most flag sets a machine file's `compiler.candidates` may list: `learn` times its
/// kernels once per candidate and once with the base flags.
pub const MAX_FLAG_CANDIDATES: usize = 8;
/// The highest associativity of a cache level (a fully associative level of a few thousand
/// lines stays below it; the set-associative simulation scans a set's ways).
pub const MAX_CACHE_WAYS: u64 = 1 << 16;

/// Bounds of a machine file's `gpu:` section: streaming multiprocessors, resident blocks the
/// model asks for per SM, threads per block, shared memory per block, registers per thread.
pub const MAX_GPU_SMS: usize = 1 << 12;
pub const MAX_GPU_BLOCKS_PER_SM: usize = 1 << 10;
pub const MAX_GPU_THREADS_PER_BLOCK: usize = 1 << 12;
/// The fewest: one warp, since the kernels' blocks are whole warps along x
/// (`cost_model::boxes::WARP` is this).
pub const MIN_GPU_THREADS_PER_BLOCK: usize = 32;
pub const MAX_GPU_SHARED_BYTES: u64 = 1 << 30;
pub const MAX_GPU_REGISTERS: usize = 1 << 16;

/// Bytes of a program's name: 128. The generated files are named after it
/// (`NAME_harness.cpp`, and their temporaries while written), and a file name has at most 255.
pub const MAX_PROGRAM_NAME: usize = 128;

/// Seconds a solver may be given (`--time-limit`): 10^6, 11.6 days. Z3 takes its timeout in
/// milliseconds as a 32-bit count (49.7 days); a longer limit would wrap to a short one.
pub const MAX_TIME_LIMIT: f64 = 1e6;

/// Seconds a cost parameter may charge per access or operation (`params`): a millisecond, ten
/// thousand times a DRAM access. Larger ones reach no machine, and with cell counts up to
/// [`MAX_CELLS`] they would overflow the estimates and the MILP's coefficients.
pub const MAX_PARAM_SECONDS: f64 = 1e-3;

/// The least positive cost parameter: 10^-100 seconds. Below it the model's products with cell
/// counts are subnormal numbers, whose lost precision makes `verify` reject `solve`'s own
/// estimate; 0 turns a term off.
pub const MIN_PARAM_SECONDS: f64 = 1e-100;

/// Timed runs per variant (`bench --runs`, `tune --runs`).
pub const MAX_RUNS: usize = 1 << 20;

/// A number from the user as an error message shows it: as Rust writes it while that is short,
/// in exponent form beyond (`1e308` rather than 309 digits).
pub fn shown(v: f64) -> String {
    if v == 0.0 || (1e-6..1e9).contains(&v.abs()) || !v.is_finite() {
        v.to_string()
    } else {
        format!("{v:e}")
    }
}

/// A share of the cache (`--cache-fraction`): in (0, 1].
pub fn cache_fraction(f: f64) -> Result<f64, String> {
    match f > 0.0 && f <= 1.0 {
        true => Ok(f),
        false => Err(format!(
            "--cache-fraction must be in (0, 1], found {}",
            shown(f)
        )),
    }
}

/// A `--cache-fraction` value given as text.
pub fn parse_cache_fraction(text: &str) -> Result<f64, String> {
    let f = text
        .parse::<f64>()
        .map_err(|_| format!("expected a share of the cache in (0, 1], found `{text}`"))?;
    cache_fraction(f)
}

/// The largest `--flush-bytes`: 16 GiB, ten times the largest last-level caches sold; the
/// harness allocates the buffer it reads.
pub const MAX_FLUSH_BYTES: u64 = 16 << 30;

/// A `--flush-bytes` value: 0 to [`MAX_FLUSH_BYTES`].
pub fn parse_flush_bytes(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if n <= MAX_FLUSH_BYTES => Ok(n),
        _ => Err(format!(
            "expected a number of bytes from 0 to {MAX_FLUSH_BYTES} (16 GiB), found `{text}`"
        )),
    }
}

/// A count from 1 to `max` given as text (`--runs`, `--threads`), or a message naming `what`
/// was expected.
pub fn parse_count(text: &str, what: &str, max: usize) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a number of {what} from 1 to {max}, found `{text}`"
        )),
    }
}

/// A limit on the arrays one group may touch given as text: a number of at least 2, or `none`
/// (no limit).
pub fn parse_group_arrays(text: &str) -> Result<Option<usize>, String> {
    if text == "none" {
        return Ok(None);
    }
    match text.parse::<usize>() {
        Ok(n) if n >= 2 => Ok(Some(n)),
        _ => Err(format!(
            "expected a number of arrays (at least 2) or `none`, found `{text}`"
        )),
    }
}
