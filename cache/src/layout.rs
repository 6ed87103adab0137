//! Where every array and tile buffer of a generated kernel (and the reference's arrays) lies,
//! as the trace build places them: each allocation on its own 2 MiB boundary, the harness's
//! arrays staggered within their first page, each thread's tile buffers in its own arena slice.
//! Within a 2 MiB span the addresses are the trace build's, modulo that span: which line an
//! element falls in never depends on it, nor the set of a level whose sets times its line
//! divide 2 MiB. Beyond it the placement is the model's own.

use absinthe_codegen::schedule::Role;
use absinthe_codegen::Schedule;

/// Every allocation starts on such a boundary (`ABSINTHE_TRACE` in the harness templates).
pub const ALIGN: u64 = 2 << 20;

/// The byte addresses of a schedule's arrays and buffers.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Per global array (in `Schedule::arrays` order): the address of element (0, 0, 0).
    pub origin: Vec<u64>,
    /// Per global array, and per group its tile buffers' arenas (one per thread and buffer):
    /// the bytes `[start, end)` of the allocation.
    pub array_span: Vec<(u64, u64)>,
    pub buffer_spans: Vec<Vec<(u64, u64)>>,
    /// Per reference array (in `Schedule::stencil_arrays` order): the same.
    pub reference: Vec<u64>,
    /// Per group, per step: per thread, the address of the thread's tile buffer (its element
    /// 0), when the step has one.
    pub buffers: Vec<Vec<Option<Vec<u64>>>>,
    /// One past the last byte of the kernel's allocations (its arrays and tile buffers).
    pub kernel_end: u64,
    /// One past the last byte of any allocation.
    pub end: u64,
}

impl Layout {
    /// The layout of `schedule` run by `threads` threads.
    pub fn of(schedule: &Schedule, threads: usize) -> Layout {
        let vb = schedule.value_bytes as u64;
        let cells: u64 = schedule.alloc.iter().map(|&a| a as u64).product();
        let mut next = ALIGN;
        let mut allocate = |bytes: u64| {
            let at = next;
            next += bytes.div_ceil(ALIGN) * ALIGN;
            (at, next)
        };
        // The harness's slots: inputs first, then the kernel's other arrays
        // (`harness_body.j2`, `absinthe_array`).
        let inputs = schedule
            .arrays
            .iter()
            .filter(|a| a.role == Role::Input)
            .count();
        let others = schedule.arrays.len() - inputs;
        let slots = (inputs + others.max(schedule.stencil_arrays.len())) as u64;
        let step = 64 * (64 / slots.max(1)).max(1);
        let mut origin = Vec::with_capacity(schedule.arrays.len());
        let mut array_span = Vec::with_capacity(schedule.arrays.len());
        let (mut input, mut other) = (0u64, 0u64);
        for a in &schedule.arrays {
            let slot = if a.role == Role::Input {
                input += 1;
                input - 1
            } else {
                other += 1;
                inputs as u64 + other - 1
            };
            // Each array over its own extent (a field's is smaller).
            let span = allocate(a.cells as u64 * vb + 8192);
            array_span.push(span);
            let base = span.0 + (slot * step) % 4096;
            origin.push(base + a.origin_offset as u64 * vb);
        }
        // Each buffer's arena is per thread and holds every thread's slice; a thread uses its
        // own (`kernel_body.j2`).
        let mut buffer_spans = Vec::with_capacity(schedule.groups.len());
        let buffers = schedule
            .groups
            .iter()
            .map(|g| {
                let mut spans = Vec::new();
                let steps = g
                    .steps
                    .iter()
                    .map(|st| {
                        st.buffer.as_ref().map(|b| {
                            let stride = b.host.thread_stride as u64 * vb;
                            let arena = (threads as u64 * stride).div_ceil(4096) * 4096;
                            (0..threads as u64)
                                .map(|t| {
                                    let span = allocate(arena);
                                    spans.push(span);
                                    span.0 + t * stride + b.host.offset as u64 * vb
                                })
                                .collect()
                        })
                    })
                    .collect();
                buffer_spans.push(spans);
                steps
            })
            .collect();
        // The reference's arrays take the slots after the inputs too; they follow the kernel's
        // allocations, so that the kernel's lines are counted over its own span alone.
        let kernel_end = allocate(0).0;
        let reference = (0..schedule.stencil_arrays.len() as u64)
            .map(|n| {
                let slot = inputs as u64 + n;
                allocate(cells * vb + 8192).0
                    + (slot * step) % 4096
                    + schedule.stencil_origins[n as usize] as u64 * vb
            })
            .collect();
        Layout {
            origin,
            array_span,
            buffer_spans,
            reference,
            buffers,
            kernel_end,
            end: next,
        }
    }
}
