//! The tile buffers: their shape, the OpenMP layout (where each thread's buffers lie in its
//! slice, how rows and planes are padded) and the CUDA extents of the group's block plan.

use absinthe_model::cost_model::boxes::Interval;

use super::group::GroupLowering;
use super::types::{HostLayout, LocalBuffer};

/// Where buffer `b{stencil}` starts in its thread's page-aligned slice, in bytes: a multiple of
/// 64 that differs from buffer to buffer (steps of 9 lines, modulo a page). Threads' slices are
/// page-aligned; without a stagger every buffer would start at offset 0 of a page, and the same
/// row of two buffers of one group would alias in the L1 modulo 4 KiB (the harness staggers its
/// arrays for the same reason). On cosmo_hdiff4_256 (two buffers in separate groups) offsets of
/// 0-2240 bytes measured within 2% of each other (docs/decisions/0025-harness-memory-layout.md).
pub fn buffer_page_offset(stencil: usize) -> usize {
    (stencil * 9 % 64) * 64
}

/// Threads' tile buffers start this many bytes apart at least (a page). Packed at `size`, the
/// two threads' rolling buffers of cosmo_hdiff4 (1728 bytes each) shared a 128-byte line pair,
/// which the L2's adjacent-line prefetcher fetches together: the kernel ran 1.17-1.26 ms with
/// packed buffers against 1.01-1.03 ms with page-separated ones, in one run. A page-multiple
/// stride alone is not enough: from a 64-byte aligned base the two threads' buffers of
/// cosmo_hdiff4 at 256x256x60 still shared a page, and the L2 streamer, which prefetches within
/// a page, ran the kernel at 13.2 ms against 12.0 ms with a page-aligned arena
/// (docs/decisions/0025-harness-memory-layout.md).
pub const THREAD_STRIDE_BYTES: usize = 4096;

/// The OpenMP layout of a tile buffer of `shape` (see [`HostLayout`]): rows padded to 64 bytes,
/// planes padded off multiples of 4 KiB (which alias in the L1), the thread's slice a multiple
/// of 64 bytes, threads' slices whole pages apart ([`THREAD_STRIDE_BYTES`]), the buffer
/// `offset_bytes` into its slice.
fn host_layout(
    shape: [usize; 3],
    window: Option<usize>,
    stream_dim: usize,
    value_bytes: usize,
    offset_bytes: usize,
) -> HostLayout {
    let line = 64 / value_bytes;
    let mut ext = shape;
    if let Some(w) = window {
        ext[stream_dim] = w;
        // Streaming along y walks one plane at a time: the buffer holds one plane's window.
        if stream_dim == 1 {
            ext[2] = 1;
        }
    }
    let stride_y = ext[0].div_ceil(line) * line;
    let mut stride_z = stride_y * ext[1];
    if (stride_z * value_bytes).is_multiple_of(4096) {
        stride_z += line;
    }
    let size = (stride_z * ext[2]).div_ceil(line) * line;
    let page = THREAD_STRIDE_BYTES / value_bytes;
    let offset = offset_bytes / value_bytes;
    HostLayout {
        stride_y,
        stride_z,
        size,
        thread_stride: (offset + size).div_ceil(page) * page,
        offset,
        window,
    }
}

impl GroupLowering<'_> {
    /// The tile buffer of stencil `s`, whose loop boxes are `loop_box`: sized for its largest
    /// loop box, laid out for the OpenMP kernel ([`host_layout`]) and the CUDA kernels (the
    /// group's block plan).
    pub(super) fn local_buffer(&self, s: usize, loop_box: &[Vec<Interval>; 3]) -> LocalBuffer {
        let shape = [0, 1, 2].map(|d| {
            loop_box[d]
                .iter()
                .map(|b| (b[1] - b[0]) as usize)
                .max()
                .unwrap_or(0)
        });
        let value_bytes = self.lowering.program.value_type.bytes();
        LocalBuffer {
            ident: format!("b{s}"),
            shape,
            size: shape[0] * shape[1] * shape[2],
            stride_y: shape[0],
            stride_z: shape[0] * shape[1],
            host: host_layout(
                shape,
                self.window(s),
                self.lowering.stream_dim,
                value_bytes,
                buffer_page_offset(s),
            ),
            device: self
                .device
                .buffers
                .iter()
                .find(|b| b.stencil == s)
                .map(|b| b.extents)
                .expect("a buffered stencil has a block buffer"),
            registers: self.registers_of(s),
        }
    }
}
