//! `bench --ranks PX,PY`: configurations decomposed over MPI ranks (`codegen::ranks`), built with
//! `mpicxx` in the exact build and run under `mpirun`, beside the single-process kernel of the
//! same program on all the node's threads, in one run. Each MPI harness verifies its gathered
//! outputs against the single-process reference bit for bit and times, in rounds, the program
//! as generated, its computation alone and its exchanges alone; the hidden share is what the
//! generated run does not add to the computation, over the exchanges' own time.

use std::path::Path;

use absinthe_codegen::compile::{run_harness, Toolchain};
use absinthe_codegen::ranks::{decompose, Grid, RankOptions};
use absinthe_codegen::render::{HarnessOptions, Renderer};
use absinthe_codegen::{lower, CodegenError};
use absinthe_model::cost_model::evaluate::{evaluate, Configuration};
use absinthe_model::cost_model::inline_search::apply as inline_apply;
use absinthe_model::cost_model::model::CostModel;
use absinthe_model::cost_model::ranks::{rank_threads, Ranked};
use absinthe_model::formats::machine::{Machine, ModelMachine};
use absinthe_model::formats::network::Network;
use absinthe_model::language::analysis::Analysis;
use absinthe_model::language::program::Program;
use serde::{Deserialize, Serialize};

use crate::variants::{Planned, Variant};
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

/// What `bench --ranks` times on: the program as written (the reference), the machine, the
/// model's view for one process on the node, the grid, the runs a variant, the ranked optimum
/// (its inlined stencils, indices into the program as written, and its configuration) and the
/// single-process optimum (the program it solves, inlined, its analysis, inlined stencils and
/// configuration).
pub struct RankRun<'a> {
    pub original: (&'a Program, &'a Analysis),
    pub machine: &'a Machine,
    pub view: &'a ModelMachine,
    pub grid: Grid,
    pub runs: usize,
    pub ranked: (&'a [usize], &'a Configuration),
    pub single: (&'a Program, &'a Analysis, &'a [usize], &'a Configuration),
}

/// What `bench --ranks` measured: each decomposed variant, and the single-process optimum on
/// all the node's threads.
pub struct RankReport {
    /// The program's name.
    pub program: String,
    pub grid: Grid,
    /// OpenMP threads per rank.
    pub threads_per_rank: usize,
    pub rows: Vec<RankRow>,
    /// The single-process optimum's median seconds, and its threads.
    pub one_process_seconds: f64,
    pub one_process_threads: usize,
}

/// One decomposed variant to time: its stencils inlined (indices into the program as written),
/// and the variant, whose configuration is of the program with them inlined.
struct RankJob {
    inline: Vec<usize>,
    variant: RankVariant,
}

impl RankRun<'_> {
    /// The bench of `program` (with its `analysis`, some inline set of the program as written).
    fn bench<'b>(&'b self, program: &'b Program, analysis: &'b Analysis) -> RankBench<'b> {
        RankBench {
            program,
            analysis,
            original: self.original,
            machine: self.machine,
            view: self.view,
            grid: self.grid,
            runs: self.runs,
        }
    }

    /// The variants to time. Without `planned`: the ranked optimum (`opt`, and `opt+overlap`)
    /// and the single-process optimum decomposed (`single`). With `planned` (the variants
    /// `--variants` names, planned for one process): each of them, `opt` standing for the
    /// ranked optimum with and without overlap; the reference and the skipped ones are left
    /// out, each with a line to `note`.
    fn jobs(&self, planned: Option<Vec<Planned>>, note: &dyn Fn(&str)) -> Vec<RankJob> {
        let job = |label: &str, (inline, config): (&[usize], &Configuration), overlap| RankJob {
            inline: inline.to_vec(),
            variant: RankVariant {
                label: label.into(),
                config: config.clone(),
                overlap,
            },
        };
        let ranked = self.ranked;
        let Some(planned) = planned else {
            let (_, _, inline, config) = self.single;
            return vec![
                job("opt", ranked, false),
                job("opt+overlap", ranked, true),
                job("single", (inline, config), false),
            ];
        };
        let mut out = Vec::new();
        for p in planned {
            if p.variant == Some(Variant::Opt) {
                out.extend([job("opt", ranked, false), job("opt+overlap", ranked, true)]);
            } else if p.reference {
                note(&format!(
                    "note: {}: the naive reference is not decomposed over ranks; left out",
                    p.name
                ));
            } else if let Some(why) = &p.skipped {
                note(&format!("note: {}: {why}; left out", p.name));
            } else {
                out.push(RankJob {
                    inline: p.inline,
                    variant: RankVariant {
                        label: p.name,
                        config: p.config,
                        overlap: false,
                    },
                });
            }
        }
        out
    }

    /// Builds, runs and verifies the variants of `planned` (as `jobs` chooses them) decomposed
    /// over the grid, then the single-process optimum on all the node's threads; the notes on
    /// the variants left out and a line before each timing go to `progress`.
    pub fn time(
        &self,
        planned: Option<Vec<Planned>>,
        progress: &dyn Fn(&str),
    ) -> Result<RankReport, MeasureError> {
        let mut rows = Vec::new();
        for job in self.jobs(planned, progress) {
            let (program, analysis, _) =
                inline_apply(self.original.0, self.view.params.operations, &job.inline)?;
            let bench = self.bench(&program, &analysis);
            progress(&format!(
                "timing {} on {}x{} ranks ...",
                job.variant.label, self.grid.px, self.grid.py
            ));
            rows.push(bench.run(&job.variant)?);
        }
        let (program, analysis, _, config) = self.single;
        let bench = self.bench(program, analysis);
        progress(&format!(
            "timing the single-process optimum on {} threads ...",
            self.view.threads
        ));
        let one = bench.single_process(config)?;
        Ok(RankReport {
            program: program.name.clone(),
            grid: self.grid,
            threads_per_rank: bench.rank_threads(),
            rows,
            one_process_seconds: one,
            one_process_threads: self.view.threads,
        })
    }
}

impl RankReport {
    /// The report as JSON (`bench --ranks --format json`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "ranks": self.grid.dims(),
            "threads_per_rank": self.threads_per_rank,
            "one_process_seconds": self.one_process_seconds,
            "one_process_threads": self.one_process_threads,
            "rows": self.rows,
        })
    }
}

/// Runs an MPI harness on `ranks` ranks of `threads` threads each, bound to cores, under a
/// 10-minute limit; its result line. Ranks of one thread are bound to a core each, several to a
/// core where there are more ranks than cores (Open MPI refuses plain `core` binding then).
pub fn run_mpi(exe: &Path, ranks: usize, threads: usize) -> Result<MpiResult, MeasureError> {
    let bind = if threads == 1 {
        "core:overload-allowed"
    } else {
        "none"
    };
    let out = absinthe_codegen::children::mpirun(
        600,
        ranks,
        threads,
        &["--bind-to".as_ref(), bind.as_ref(), exe.as_os_str()],
    )
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
            "no result line ({}):\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))),
    }
}
