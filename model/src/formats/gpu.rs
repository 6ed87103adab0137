//! The `gpu:` section of a machine file.

use serde::{Deserialize, Serialize};

use crate::formats::diagnostic::Diagnostic;
use crate::formats::limits;

/// The `gpu:` section of a machine file: the device limits the CUDA generator and the model use.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Streaming multiprocessors on the device.
    pub sm_count: usize,
    /// Shared memory one thread block may use, in bytes (227 KiB on sm_90 through dynamic
    /// shared memory and the opt-in the generated host code sets); tile buffers beyond it go to
    /// global scratch. The model's capacity is `cache_fraction` of it.
    pub shared_bytes_per_block: u64,
    /// Registers one thread may use (255 on sm_90); ptxas must fit the kernels without spills.
    pub registers_per_thread: usize,
    pub max_threads_per_block: usize,
    /// Tiles (thread blocks) the model asks for per SM: T = `blocks_per_sm * sm_count`.
    #[serde(default = "default_blocks_per_sm")]
    pub blocks_per_sm: usize,
}

fn default_blocks_per_sm() -> usize {
    4
}

impl Gpu {
    /// T of the model: enough tiles for a few resident blocks per SM.
    pub fn model_threads(&self) -> usize {
        self.blocks_per_sm.saturating_mul(self.sm_count)
    }

    /// Range checks of the device limits: each at least 1 (threads per block at least a warp,
    /// since the kernels' blocks are whole warps along x) and at most its bound in [`limits`].
    pub(crate) fn validate(&self, errors: &mut Vec<Diagnostic>) {
        let warp = limits::MIN_GPU_THREADS_PER_BLOCK as u64;
        for (key, v, max) in [
            (
                "gpu.sm_count",
                self.sm_count as u64,
                limits::MAX_GPU_SMS as u64,
            ),
            (
                "gpu.shared_bytes_per_block",
                self.shared_bytes_per_block,
                limits::MAX_GPU_SHARED_BYTES,
            ),
            (
                "gpu.registers_per_thread",
                self.registers_per_thread as u64,
                limits::MAX_GPU_REGISTERS as u64,
            ),
            (
                "gpu.max_threads_per_block",
                self.max_threads_per_block as u64,
                limits::MAX_GPU_THREADS_PER_BLOCK as u64,
            ),
            (
                "gpu.blocks_per_sm",
                self.blocks_per_sm as u64,
                limits::MAX_GPU_BLOCKS_PER_SM as u64,
            ),
        ] {
            let (min, why) = match key {
                "gpu.max_threads_per_block" => (warp, " (a block is whole warps of 32 threads)"),
                _ => (1, ""),
            };
            if !(min..=max).contains(&v) {
                errors.push(Diagnostic::new(
                    key,
                    format!("{key} must be between {min} and {max}, found {v}{why}"),
                ));
            }
        }
    }
}

impl crate::formats::machine::Machine {
    /// Why this machine cannot be the target of code for a GPU (`gpu`) or a CPU: a file without
    /// `gpu:` describes a CPU, and code for a GPU tuned with it would price its two cores as
    /// the device's parallelism; a file with `gpu:` prices the device's threads, which OpenMP
    /// code for a CPU does not have. None when it fits.
    pub fn target_mismatch(&self, gpu: bool) -> Option<String> {
        match (self.gpu.is_some(), gpu) {
            (false, true) => Some(format!(
                "machine `{}` has no `gpu:` section: code for a GPU needs a GPU's machine file (machines/h100.yaml, or one `learn --target cuda` wrote)",
                self.name
            )),
            (true, false) => Some(format!(
                "machine `{}` describes a GPU (`gpu:`): OpenMP code for a CPU needs a CPU's machine file (machines/default.yaml, or one `learn` wrote); for the GPU use `codegen --target cuda`, `bench --target cuda-emulated` or `learn --target cuda`",
                self.name
            )),
            _ => None,
        }
    }
}
