//! `bench --ranks PX,PY`: configurations decomposed over MPI ranks (`codegen::ranks`), built with
//! `mpicxx` in the exact build and run under `mpirun`, beside the single-process kernel of the
//! same program on all the node's threads, in one run. Each MPI harness verifies its gathered
//! outputs against the single-process reference bit for bit and times, in rounds, the program
//! as generated, its computation alone and its exchanges alone; the hidden share is what the
//! generated run does not add to the computation, over the exchanges' own time.

use std::path::Path;
use std::process::Command;

use absinthe_codegen::compile::{run_harness, Toolchain};
use absinthe_codegen::ranks::{decompose, Grid, RankOptions};
use absinthe_codegen::render::{HarnessOptions, Renderer};
use absinthe_codegen::{lower, CodegenError};
use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::cost_model::model::CostModel;
use absinthe_model::cost_model::ranks::{rank_threads, Ranked};
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::formats::network::Network;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use serde::{Deserialize, Serialize};

use crate::MeasureError;

/// One decomposed variant to time.
pub struct RankVariant {
    pub label: String,
    pub config: Configuration,
    /// Compute each group's inner box while its exchanges travel.
    pub overlap: bool,
}

/// What the MPI harness prints (`ABSINTHE_MPI_RESULT`), in seconds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MpiResult {
    pub verified: bool,
    pub threads: usize,
    pub runs: usize,
    /// The program as generated: the slowest rank's time, median over the kept runs.
    pub median: f64,
    /// The same with every exchange skipped.
    pub compute: f64,
    /// The exchanges alone.
    pub exchange_alone: f64,
    /// Time spent posting and waiting for exchanges in the generated run.
    pub exchange_exposed: f64,
    /// `1 - (median - compute) / exchange_alone`.
    pub hidden: f64,
}

/// A timed decomposed variant.
#[derive(Clone, Debug, Serialize)]
pub struct RankRow {
    pub variant: String,
    pub ranks: [usize; 2],
    pub overlap: bool,
    pub groups: Vec<usize>,
    pub tiles: Vec<[usize; 3]>,
    pub measured: MpiResult,
    /// The ranked model's time of one rank, when the machine file has a `network:`.
    pub predicted_seconds: Option<f64>,
    /// Its exchanges' part.
    pub predicted_exchange_seconds: Option<f64>,
}

/// What a rank bench is given.
pub struct RankBench<'a> {
    /// The program as solved (inlined) and its analysis.
    pub program: &'a Program,
    pub analysis: &'a Analysis,
    /// The program as written and its analysis: the reference.
    pub original: (&'a Program, &'a Analysis),
    pub machine: &'a Machine,
    /// The model's view for one process on the node.
    pub view: &'a ModelMachine,
    pub grid: Grid,
    pub runs: usize,
}

impl RankBench<'_> {
    /// The ranked model of one rank (the node's threads shared among the ranks), when the
    /// machine file has a network.
    fn predict(&self, config: &Configuration) -> Option<(f64, f64)> {
        let network: Network = self.machine.network.clone()?;
        let model = Ranked::new(
            self.analysis,
            self.view,
            self.grid.dims(),
            network,
            self.program.value_type.bytes(),
        );
        let total = config
            .group_ranges()
            .into_iter()
            .enumerate()
            .map(|(g, r)| {
                let group = model.group(self.analysis, r);
                model
                    .group_seconds(self.analysis, &group, config.tiles[g])
                    .0
            })
            .sum();
        Some((total, model.exchanges_of(config)))
    }

    /// OpenMP threads per rank: the node's threads shared among the ranks (at least 1).
    pub fn rank_threads(&self) -> usize {
        rank_threads(self.view.threads, self.grid.dims())
    }

    /// Builds, runs and verifies one decomposed variant.
    pub fn run(&self, variant: &RankVariant) -> Result<RankRow, MeasureError> {
        let options = RankOptions {
            grid: self.grid,
            overlap: variant.overlap,
        };
        let d = decompose(
            self.program,
            self.analysis,
            &variant.config,
            self.view,
            options,
            self.original,
        )?;
        let harness = HarnessOptions {
            runs: self.runs,
            label: variant.label.clone(),
            ..HarnessOptions::default()
        };
        let files = Renderer::embedded().mpi(&d, Some(&harness))?;
        let toolchain = Toolchain::new("mpicxx", &self.machine.compiler.flags);
        let exe = toolchain.build(&files.files, &[])?;
        let measured = run_mpi(&exe, self.grid.ranks(), self.rank_threads())?;
        let predicted = self.predict(&variant.config);
        Ok(RankRow {
            variant: variant.label.clone(),
            ranks: self.grid.dims(),
            overlap: variant.overlap,
            groups: variant.config.groups.clone(),
            tiles: variant.config.tiles.clone(),
            measured,
            predicted_seconds: predicted.map(|p| p.0),
            predicted_exchange_seconds: predicted.map(|p| p.1),
        })
    }

    /// The single-process kernel of `config` on all the node's threads, in the same exact
    /// build: its median seconds.
    pub fn single_process(&self, config: &Configuration) -> Result<f64, MeasureError> {
        let cost = evaluate(self.analysis, self.view, config);
        let schedule = lower(self.program, self.analysis, config, &cost)?
            .with_reference(self.original.0, self.original.1);
        let harness = HarnessOptions {
            runs: self.runs,
            label: "1 process".into(),
            ..HarnessOptions::default()
        };
        let files = Renderer::embedded().openmp(&schedule, Some(&harness))?;
        let c = &self.machine.compiler;
        let exe = Toolchain::new(&c.cxx, &c.flags).build(&files.files, &[])?;
        let threads = self.view.threads.to_string();
        let results = run_harness(&exe, &[], &[("OMP_NUM_THREADS", threads.as_str())])?;
        match results.first() {
            Some(r) if r.verified => Ok(r.median),
            Some(r) => Err(CodegenError::Run {
                program: exe.display().to_string(),
                message: format!(
                    "the single-process kernel failed verification: {:?}",
                    r.mismatch
                ),
            }
            .into()),
            None => Err(CodegenError::Run {
                program: exe.display().to_string(),
                message: "no result line".into(),
            }
            .into()),
        }
    }
}

/// Runs an MPI harness on `ranks` ranks of `threads` threads each, bound to cores, under a
/// 10-minute limit; its result line.
pub fn run_mpi(exe: &Path, ranks: usize, threads: usize) -> Result<MpiResult, MeasureError> {
    let out = Command::new("timeout")
        .args(["600", "mpirun", "--allow-run-as-root", "--oversubscribe"])
        .args(["--bind-to", if threads == 1 { "core" } else { "none" }])
        .args(["-np", &ranks.to_string()])
        .arg(exe)
        .env("OMP_NUM_THREADS", threads.to_string())
        .output()
        .map_err(|e| CodegenError::Run {
            program: "mpirun".into(),
            message: format!("{e} (scripts/setup.sh installs openmpi-bin)"),
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ABSINTHE_MPI_RESULT "));
    let fail = |message: String| -> MeasureError {
        CodegenError::Run {
            program: exe.display().to_string(),
            message,
        }
        .into()
    };
    match line {
        Some(json) => serde_json::from_str(json).map_err(|e| fail(format!("{e}: {json}"))),
        None => Err(fail(format!(
            "no result line (exit {:?}):\n{stdout}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ))),
    }
}
