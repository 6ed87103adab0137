//! Array elements as C: a global array's, a tile buffer's and a register window's element at an
//! offset from the loop indices `(i, j, k)`.

use absinthe_model::cost_model::boxes::StagedInput;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::expr::{Dims, INDEX_NAMES};

use super::types::LocalBuffer;

/// Array `array`'s element at `off` from `(i, j, k)` as C, `origin` its pointer at element
/// (0, 0, 0): a 3-D array indexed with the strides `SY` and `SZ`, a field (`fields:`) along its
/// own dimensions only, with its own strides over `alloc` (the 3-D arrays' allocated extents).
pub(super) fn global_access(
    analysis: &Analysis,
    alloc: [usize; 3],
    array: &str,
    off: [i32; 3],
    origin: &str,
) -> String {
    let dims = analysis.dims_of(array);
    if dims.is_full() {
        return format!("{origin}[{}]", linear(off, &["SY".into(), "SZ".into()]));
    }
    let index = field_index(dims, alloc, |d| shifted(INDEX_NAMES[d], off[d]));
    format!("{origin}[{index}]")
}

/// The linear index over a field's own dimensions as C, `at(d)` its coordinate along `d`:
/// `at(0) + at(1) * alloc[0] + ...` (`dims` along its dimensions, the strides over `alloc`).
pub(super) fn field_index(dims: Dims, alloc: [usize; 3], at: impl Fn(usize) -> String) -> String {
    let mut stride = 1;
    let mut terms = Vec::new();
    for d in (0..3).filter(|&d| dims.has(d)) {
        terms.push(match stride {
            1 => at(d),
            _ => format!("{} * {stride}", at(d)),
        });
        stride *= alloc[d];
    }
    terms.join(" + ")
}

/// An element of a tile buffer at `off` from `(i, j, k)` as C, in the OpenMP layout: a streamed
/// buffer's coordinate along the stream dimension is a slot, `absinthe_slot(q, window)`.
pub(super) fn buffer_access(b: &LocalBuffer, off: [i32; 3], stream_dim: usize) -> String {
    let id = &b.ident;
    match b.host.window {
        None => format!(
            "{id}[{id}_base + {}]",
            linear(off, &[format!("{id}_Y"), format!("{id}_Z")])
        ),
        Some(w) => {
            let i = shifted("i", off[0]);
            if stream_dim == 2 {
                let (j, k) = (shifted("j", off[1]), shifted("k", off[2]));
                format!("{id}[{id}_base + {i} + {j} * {id}_Y + absinthe_slot({k}, {w}) * {id}_Z]")
            } else {
                // One plane at a time (no access has a z offset when streaming along y).
                let j = shifted("j", off[1]);
                format!("{id}[{id}_base + {i} + absinthe_slot({j}, {w}) * {id}_Y]")
            }
        }
    }
}

/// The C variable of the staged copy of array `a`: `in<a>`.
pub(super) fn staged_ident(a: usize) -> String {
    format!("in{a}")
}

/// An element of the staged copy of `input` (a rolling window of `extents[2]` planes) at `off`
/// from `(i, j, k)` as C: `id[id_base + (i + ox) + (j + oy) * id_Y + absinthe_slot(k + oz,
/// window) * id_Z]`.
pub(super) fn staged_access(input: &StagedInput, off: [i32; 3]) -> String {
    let (id, window) = (staged_ident(input.array), input.extents[2]);
    format!(
        "{id}[{id}_base + {} + {} * {id}_Y + absinthe_slot({}, {window}) * {id}_Z]",
        shifted("i", off[0]),
        shifted("j", off[1]),
        shifted("k", off[2])
    )
}

/// A register window's value at `slot` for the thread's current round, as C (the macro of
/// `absinthe_cuda_emu.h`: a register array on the device, per-thread storage in the emulation).
pub(super) fn register_access(b: &LocalBuffer, slot: i64) -> String {
    format!("ABS_REG({}, abs_r, {slot})", b.ident)
}

/// The index variable `v` shifted by `o`, as C: `v`, `(v + o)` or `(v - |o|)`.
pub(super) fn shifted(v: &str, o: i32) -> String {
    match o {
        0 => v.to_string(),
        o if o > 0 => format!("({v} + {o})"),
        o => format!("({v} - {})", -o),
    }
}

/// `(i + ox) + (j + oy) * SY + (k + oz) * SZ` as C.
fn linear(off: [i32; 3], strides: &[String; 2]) -> String {
    format!(
        "{} + {} * {} + {} * {}",
        shifted("i", off[0]),
        shifted("j", off[1]),
        strides[0],
        shifted("k", off[2]),
        strides[1]
    )
}
