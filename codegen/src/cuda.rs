//! CUDA generation (codegen.md, "CUDA"): the shared [`Schedule`] laid out as one kernel per
//! group and one thread block per tile.
//!
//! The kernels are written once (`templates/cuda_kernels.j2`) with the `ABS_*` macros of
//! `templates/absinthe_cuda_emu.h`: nvcc builds them as CUDA (`<program>.cu`), a plain C++
//! compiler as a host emulation (`<program>_emu.cpp`) in which every barrier-separated phase
//! runs for all threads of a block before the next. Inside a phase the threads stride over
//! the tile's x (coalesced) and y extent of the stencil's loop box while the block walks z,
//! so any tile size works with a fixed block shape. The loop and store boxes are those of the
//! schedule, exactly as in the OpenMP kernel.
//!
//! [`plan`] decides what the schedule leaves to the target: the block shape and, per group,
//! which tile-local buffers live in shared memory (in order, while the group's total stays
//! within the machine's per-block limit) and which in per-block global scratch.

use absinthe_model::machine::{Gpu, Machine};
use minijinja::context;
use serde::Serialize;

use crate::render::{file_stem, Files, HarnessOptions, Renderer};
use crate::schedule::Schedule;
use crate::CodegenError;

/// The name of the portability header every CUDA file includes.
pub const EMULATION_HEADER: &str = "absinthe_cuda_emu.h";

/// Threads per block along x and y.
pub const BLOCK: [usize; 2] = [32, 4];

/// The device limits the generator respects (a machine file's `gpu:` section).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GpuLimits {
    pub shared_bytes_per_block: u64,
    pub registers_per_thread: usize,
    pub max_threads_per_block: usize,
}

impl GpuLimits {
    /// The limits of an H100-class device (sm_90): 48 KiB of static shared memory per block,
    /// 255 registers per thread, 1024 threads per block (`machines/h100.yaml`).
    pub fn h100() -> GpuLimits {
        GpuLimits {
            shared_bytes_per_block: 48 << 10,
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

    /// The machine's `gpu:` section, or the H100 limits when it has none.
    pub fn of_machine(machine: &Machine) -> GpuLimits {
        machine
            .gpu
            .as_ref()
            .map(GpuLimits::from_gpu)
            .unwrap_or_else(GpuLimits::h100)
    }
}

/// Where one tile-local buffer lives.
#[derive(Clone, Debug, Serialize)]
pub struct CudaBuffer {
    pub ident: String,
    pub size: usize,
    pub stride_y: usize,
    pub stride_z: usize,
    /// In shared memory; otherwise at `offset` in the block's global scratch.
    pub shared: bool,
    pub offset: usize,
}

/// One group's kernel.
#[derive(Clone, Debug, Serialize)]
pub struct CudaGroup {
    pub index: usize,
    /// The kernel's C identifier.
    pub kernel: String,
    pub buffers: Vec<CudaBuffer>,
    /// Static shared memory of the kernel, in bytes.
    pub shared_bytes: u64,
    /// Global scratch values per block (0 when every buffer is in shared memory).
    pub scratch_per_block: usize,
}

/// What the CUDA target adds to a schedule.
#[derive(Clone, Debug, Serialize)]
pub struct CudaPlan {
    pub block: [usize; 2],
    pub limits: GpuLimits,
    pub groups: Vec<CudaGroup>,
}

/// Places every group's buffers: shared memory while the group's total fits the limit, in
/// the schedule's order, the rest in global scratch.
pub fn plan(schedule: &Schedule, limits: &GpuLimits) -> CudaPlan {
    let bx = BLOCK[0].min(limits.max_threads_per_block.max(1));
    let by = BLOCK[1].min((limits.max_threads_per_block / bx).max(1));
    let groups = schedule
        .groups
        .iter()
        .map(|g| {
            let mut shared_bytes = 0u64;
            let mut scratch = 0usize;
            let buffers = g
                .steps
                .iter()
                .filter_map(|st| st.buffer.as_ref())
                .map(|b| {
                    let bytes = (b.size * schedule.value_bytes) as u64;
                    let shared = shared_bytes + bytes <= limits.shared_bytes_per_block;
                    let offset = if shared {
                        shared_bytes += bytes;
                        0
                    } else {
                        scratch += b.size;
                        scratch - b.size
                    };
                    CudaBuffer {
                        ident: b.ident.clone(),
                        size: b.size,
                        stride_y: b.stride_y,
                        stride_z: b.stride_z,
                        shared,
                        offset,
                    }
                })
                .collect();
            CudaGroup {
                index: g.index,
                kernel: format!("{}_g{}", schedule.kernel, g.index),
                buffers,
                shared_bytes,
                scratch_per_block: scratch,
            }
        })
        .collect();
    CudaPlan {
        block: [bx, by],
        limits: *limits,
        groups,
    }
}

/// A case of an emulated bundle.
#[derive(Serialize)]
pub struct CudaBundleCase<'a> {
    pub s: &'a Schedule,
    pub c: &'a CudaPlan,
    pub h: &'a HarnessOptions,
}

/// How to build the generated CUDA on a GPU machine (bit-exact against the CPU reference:
/// no FMA contraction on either side).
pub fn nvcc_build_hint(stem: &str) -> String {
    format!(
        "nvcc -O3 -arch=sm_90 --fmad=false -Xcompiler -fopenmp,-ffp-contract=off {stem}.cu -lgomp -o {stem}_cuda"
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
        if let Some(g) = schedule
            .groups
            .iter()
            .find(|g| g.stream.is_some() || g.loops.iter().any(|l| l.len() > 1))
        {
            return Err(CodegenError::Configuration(format!(
                "group {} streams or shares row loops, which the CUDA kernels do not: lower the configuration with `lower_plain`",
                g.index
            )));
        }
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

    /// Several emulated kernels with their harnesses in one translation unit.
    pub fn cuda_bundle(&self, cases: &[CudaBundleCase<'_>]) -> Result<String, CodegenError> {
        self.render("cuda_bundle.cpp.j2", context! { cases => cases })
    }
}
