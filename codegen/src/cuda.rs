//! CUDA generation (docs/USAGE.md, "CUDA"): the shared [`Schedule`] (lowered by
//! [`crate::lower_cuda`]) laid out as one kernel per group and one thread block per tile.
//!
//! The kernels are written once (`templates/cuda_kernels.j2`) with the `ABS_*` macros of
//! `templates/absinthe_cuda_emu.h`: nvcc builds them as CUDA (`<program>.cu`), a plain C++
//! compiler as a host emulation (`<program>_emu.cpp`) in which every barrier-separated phase
//! runs for all threads of a block before the next. Inside a phase the threads stride over
//! the x (coalesced) and y extent of the stencil's loop box. A streamed group's block owns an
//! x-y tile and walks its z range one plane per step, every stencil `lag` planes ahead (its
//! forward z width), its buffers rolling windows of z planes; an unstreamed group's block walks
//! each stencil's whole 3-D loop box in turn. The loop and store boxes are those of the
//! schedule, exactly as in the OpenMP kernel.
//!
//! The block shape and the register windows come from the schedule (`boxes::block_plan`, the
//! function the GPU model's shared-memory test calls): in a streamed group, a buffer whose
//! readers read it only at x-y offset (0, 0) over the same loop box is a per-thread window of
//! z planes in registers (`ABS_REGISTERS`), shifted one plane after each step. [`plan`]
//! decides the rest: which of the other tile buffers live in (dynamic) shared memory, in order
//! while the group's total stays within the machine's per-block limit, and which in per-block
//! global scratch. Their extents are the numbers the model counts, so a configuration the model
//! accepts has all of them in shared memory.

use absinthe_model::formats::machine::{Gpu, Machine};
use minijinja::context;
use serde::Serialize;

use crate::render::{file_stem, Files, HarnessOptions, Renderer};
use crate::schedule::Schedule;
use crate::CodegenError;

/// The name of the portability header every CUDA file includes.
pub const EMULATION_HEADER: &str = "absinthe_cuda_emu.h";

use absinthe_model::formats::machine::MAX_BLOCK_THREADS;

/// Registers per SM on every device since sm_50.
pub const REGISTERS_PER_SM: usize = 65536;

/// Registers per thread a kernel may count on: `__launch_bounds__` asks for as many resident
/// blocks as leave each thread this many (ptxas then caps registers at 65536 / (threads x
/// blocks) and did spill with a bare thread count: 4 bytes at 40 registers on hdiff).
pub const REGISTER_BUDGET: usize = 128;

/// The device limits the generator respects (a machine file's `gpu:` section).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GpuLimits {
    pub shared_bytes_per_block: u64,
    pub registers_per_thread: usize,
    pub max_threads_per_block: usize,
}

impl GpuLimits {
    /// The limits of an H100-class device (sm_90): 227 KiB of dynamic shared memory per block
    /// (with the opt-in), 255 registers per thread, 1024 threads per block
    /// (`machines/h100.yaml`).
    pub fn h100() -> GpuLimits {
        GpuLimits {
            shared_bytes_per_block: 227 << 10,
            registers_per_thread: 255,
            max_threads_per_block: 1024,
        }
    }

    pub fn from_gpu(gpu: &Gpu) -> GpuLimits {
        GpuLimits {
            shared_bytes_per_block: gpu.shared_bytes_per_block,
            registers_per_thread: gpu.registers_per_thread,
            max_threads_per_block: gpu.max_threads_per_block,
        }
    }

    /// The most threads per block the kernels use: [`MAX_BLOCK_THREADS`], or fewer when the
    /// device allows fewer (`ModelMachine::block_threads`, the same number).
    pub fn block_threads(&self) -> usize {
        MAX_BLOCK_THREADS.min(self.max_threads_per_block)
    }

    /// The machine's `gpu:` section, or the H100 limits when it has none.
    pub fn of_machine(machine: &Machine) -> GpuLimits {
        machine
            .gpu
            .as_ref()
            .map(GpuLimits::from_gpu)
            .unwrap_or_else(GpuLimits::h100)
    }
}

/// Where one tile buffer or staged copy (`StagedArray`) in memory lives (register windows,
/// `LocalBuffer::registers`, are declared by the kernel itself).
#[derive(Clone, Debug, Serialize)]
pub struct CudaBuffer {
    pub ident: String,
    /// Values: the product of the schedule's `LocalBuffer::device` extents.
    pub size: usize,
    pub stride_y: usize,
    pub stride_z: usize,
    /// In shared memory (at `offset` values into the block's dynamic shared memory); otherwise
    /// at `offset` in the block's global scratch.
    pub shared: bool,
    pub offset: usize,
}

/// One group's kernel.
#[derive(Clone, Debug, Serialize)]
pub struct CudaGroup {
    pub index: usize,
    /// The kernel's C identifier.
    pub kernel: String,
    /// Threads per block along x (a multiple of the warp) and y.
    pub block: [usize; 2],
    /// The resident blocks per SM `__launch_bounds__` asks for: as many as leave each thread
    /// [`REGISTER_BUDGET`] registers (at most the machine's registers per thread).
    pub min_blocks: usize,
    pub buffers: Vec<CudaBuffer>,
    /// Dynamic shared memory of the kernel, in bytes.
    pub shared_bytes: u64,
    /// Global scratch values per block (0 when every buffer is in shared memory).
    pub scratch_per_block: usize,
}

/// What the CUDA target adds to a schedule.
#[derive(Clone, Debug, Serialize)]
pub struct CudaPlan {
    pub limits: GpuLimits,
    pub groups: Vec<CudaGroup>,
}

/// Places every group's buffers that are not register windows, then its staged copies: shared
/// memory while the group's total fits the limit, in the schedule's order, the rest in global
/// scratch. The block shape is the schedule's (`boxes::block_plan`, which also chose the
/// register windows).
/// Fails when the schedule was not lowered for CUDA ([`crate::lower_cuda`]): a group streams
/// along y or shares row loops.
pub fn plan(schedule: &Schedule, limits: &GpuLimits) -> Result<CudaPlan, CodegenError> {
    if let Some(g) = schedule.groups.iter().find(|g| {
        g.stream.as_ref().is_some_and(|s| s.dim != 2) || g.loops.iter().any(|l| l.len() > 1)
    }) {
        return Err(CodegenError::Configuration(format!(
            "group {} streams along y or shares row loops, which the CUDA kernels do not: lower the configuration with `lower_cuda`",
            g.index
        )));
    }
    let groups = schedule
        .groups
        .iter()
        .map(|g| {
            let mut shared_values = 0usize;
            let mut scratch = 0usize;
            // Tile buffers first (the model counted them), then the staged copies (which
            // use what the buffers leave of the model's capacity).
            let extents = g
                .steps
                .iter()
                .filter_map(|st| st.buffer.as_ref())
                .filter(|b| b.registers.is_none())
                .map(|b| (b.ident.clone(), b.device))
                .chain(g.staged.iter().map(|a| (a.ident.clone(), a.extents)));
            let buffers = extents
                .map(|(ident, [ex, ey, ez])| {
                    let size = ex * ey * ez;
                    let shared = ((shared_values + size) * schedule.value_bytes) as u64
                        <= limits.shared_bytes_per_block;
                    let offset = if shared {
                        shared_values += size;
                        shared_values - size
                    } else {
                        scratch += size;
                        scratch - size
                    };
                    CudaBuffer {
                        ident,
                        size,
                        stride_y: ex,
                        stride_z: ex * ey,
                        shared,
                        offset,
                    }
                })
                .collect();
            let block = g.block;
            let budget = REGISTER_BUDGET.min(limits.registers_per_thread).max(1);
            CudaGroup {
                index: g.index,
                kernel: format!("{}_g{}", schedule.kernel, g.index),
                block,
                min_blocks: (REGISTERS_PER_SM / (block[0] * block[1] * budget)).max(1),
                buffers,
                shared_bytes: (shared_values * schedule.value_bytes) as u64,
                scratch_per_block: scratch,
            }
        })
        .collect();
    Ok(CudaPlan {
        limits: *limits,
        groups,
    })
}

/// A case of an emulated bundle.
#[derive(Serialize)]
pub struct CudaBundleCase<'a> {
    pub s: &'a Schedule,
    pub c: &'a CudaPlan,
    pub h: &'a HarnessOptions,
}

/// How to build the generated CUDA on a GPU machine: the timed build with FMA (verified within
/// the harness's tolerance, `ABSINTHE_FMA_BUILD`), and the exact build, bit-exact against the
/// CPU reference (no FMA contraction on either side).
pub fn nvcc_build_hint(stem: &str) -> String {
    format!(
        "nvcc -O3 -arch=sm_90 -DABSINTHE_FMA_BUILD -Xcompiler -fopenmp {stem}.cu -lgomp -o {stem}_cuda   (exact: nvcc -O3 -arch=sm_90 --fmad=false -Xcompiler -fopenmp,-ffp-contract=off {stem}.cu -lgomp -o {stem}_cuda_exact)"
    )
}

/// How to build the host emulation.
pub fn emulation_build_hint(stem: &str) -> String {
    format!("g++ -O2 -fopenmp -ffp-contract=off {stem}_emu.cpp -o {stem}_emu")
}

impl Renderer {
    fn cuda_files(
        &self,
        schedule: &Schedule,
        plan: &CudaPlan,
        harness: Option<&HarnessOptions>,
        device: bool,
        emulation: bool,
    ) -> Result<Files, CodegenError> {
        let stem = file_stem(&schedule.program);
        let kernels = format!("{stem}_kernels.cuh");
        let mut h = harness.cloned().unwrap_or_default();
        if h.label.is_empty() {
            h.label = schedule.program.clone();
        }
        let mut files = vec![
            (
                EMULATION_HEADER.to_string(),
                self.render(EMULATION_HEADER, context! {})?,
            ),
            (
                kernels.clone(),
                self.render("cuda_kernels.cuh.j2", context! { s => schedule, c => plan })?,
            ),
        ];
        let with_harness = harness.is_some();
        if device {
            let mut h = h.clone();
            h.build_hint = nvcc_build_hint(&stem);
            files.push((
                format!("{stem}.cu"),
                self.render(
                    "cuda.cu.j2",
                    context! { s => schedule, c => plan, h => h, kernels => kernels, harness => with_harness },
                )?,
            ));
        }
        if emulation {
            let mut h = h.clone();
            h.build_hint = emulation_build_hint(&stem);
            files.push((
                format!("{stem}_emu.cpp"),
                self.render(
                    "cuda_emu.cpp.j2",
                    context! { s => schedule, c => plan, h => h, kernels => kernels, harness => with_harness },
                )?,
            ));
        }
        Ok(Files { files })
    }

    /// `absinthe codegen --target cuda`: the header, the kernels (`<program>_kernels.cuh`),
    /// the CUDA host code (`<program>.cu`) and the host emulation (`<program>_emu.cpp`); with
    /// harness options both get a `main` that verifies against the CPU reference (and, on the
    /// device, times the kernels with CUDA events).
    pub fn cuda(
        &self,
        schedule: &Schedule,
        plan: &CudaPlan,
        harness: Option<&HarnessOptions>,
    ) -> Result<Files, CodegenError> {
        self.cuda_files(schedule, plan, harness, true, true)
    }

    /// Only the host emulation with its harness (what `bench --target cuda-emulated` builds):
    /// every `.cpp` among the files is the one translation unit to compile.
    pub fn cuda_emulated(
        &self,
        schedule: &Schedule,
        plan: &CudaPlan,
        harness: &HarnessOptions,
    ) -> Result<Files, CodegenError> {
        self.cuda_files(schedule, plan, Some(harness), false, true)
    }

    /// Several CUDA kernels with their harnesses in one translation unit, for a GPU: each
    /// case verifies against the CPU reference, then times its launches (`learn --target cuda`).
    pub fn cuda_device_bundle(&self, cases: &[CudaBundleCase<'_>]) -> Result<String, CodegenError> {
        self.render("cuda_device_bundle.cu.j2", context! { cases => cases })
    }

    /// Several emulated kernels with their harnesses in one translation unit.
    pub fn cuda_bundle(&self, cases: &[CudaBundleCase<'_>]) -> Result<String, CodegenError> {
        self.render("cuda_bundle.cpp.j2", context! { cases => cases })
    }
}
