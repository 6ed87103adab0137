//! `absinthe learn`'s reports as text for people: what a run learned (the parameters, the
//! crowding fits, the operation weights, the refit, the calibrations), what `--emit` wrote,
//! the network measured, and the progress bar on standard error.

use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Instant;

use absinthe_codegen::compile::OperationTimes;
use absinthe_model::formats::learned::{CrowdingCalibration, FitQuality};
use absinthe_model::formats::machine::{Division, Machine, OperationWeights, Params};
use absinthe_model::output::text::{human_seconds, table};

use crate::calibrate::{Calibration, LimitCalibration};
use crate::flags::FlagChoice;
use crate::gpu;
use crate::gpu_fit::{GpuLearning, GpuOutcome, OUTPUT, RUN_SCRIPT};
use crate::kernels::{self, KernelRow, Refit};
use crate::network::NetworkMeasurement;
use crate::pipeline::{Event, Learning, Step};
use crate::{training, LearnOptions, LearnResult, Progress};

/// The line `learn` starts with: the machine, its threads, the tiles' cache and the budget.
pub fn start_line(machine: &Machine, options: &LearnOptions) -> String {
    format!(
        "learning {} with {} threads, tiles for {} KiB of cache: {} shapes (and up to {} full-row ones) x {} runs per program ...",
        machine.name,
        options.threads,
        (options.tile_bytes / 1024.0).round(),
        options.shapes,
        training::most_full_row_shapes(options.shapes),
        options.repeats
    )
}

impl Learning {
    /// What the run learned, once the machine file is written to `out`, `seconds` after the
    /// start: the parameters, R², the crowding fits, the operation weights, the refit and the
    /// calibrations against `machine`'s own settings.
    pub fn report(&self, machine: &Machine, seconds: f64, out: &Path) -> String {
        let result = &self.result;
        let mut text = String::new();
        if let Some(c) = &self.flag_choice {
            text.push_str(&flag_choice(c, &machine.compiler.flags));
        }
        if let Some(c) = &self.division_choice {
            text.push_str(&division_choice(c, machine.compiler.division));
        }
        text.push_str(&params_table(&result.params));
        let _ = writeln!(
            text,
            "R² (per-configuration medians): fast {:.3}, slow {:.3}; {} samples; {seconds:.0} s",
            result.r2_fast,
            result.r2_slow,
            result.measurements.len(),
        );
        text.push_str(&crowding(&result.crowding, &result.params));
        if let Some(t) = &self.operations {
            text.push_str(&operations(t, &result.params.operations));
            if result.params.compute.body == t.add_seconds() {
                let _ = writeln!(
                    text,
                    "compute.body held at one add, {:.3e} s per operation and cell; the fast fit fitted the rest",
                    t.add_seconds()
                );
            }
        }
        if let Some((r, rows)) = &self.refit {
            text.push_str(&refit(r, rows, self.synthetic_r2, r2_of(result)));
        }
        if let Some(c) = &self.calibration {
            text.push_str(&calibration(c, machine.cache_fraction));
        }
        if let Some(c) = &self.limit_calibration {
            text.push_str(&limit_calibration(c, machine.group_arrays));
        }
        let _ = writeln!(text, "wrote {}", out.display());
        text
    }
}

impl GpuLearning {
    /// What the fit learned, once the machine file is written to `out`: the parameters, R² on
    /// the device, and the refit.
    pub fn report(&self, out: &Path) -> String {
        let result = &self.result;
        let mut text = params_table(&result.params);
        let _ = writeln!(
            text,
            "{}: R² (one median per configuration): fast {:.3}, slow {:.3}; {} configurations",
            self.device,
            result.r2_fast,
            result.r2_slow,
            result.measurements.len(),
        );
        if let Some(r) = &self.refit {
            let refitted = r2_of(result);
            text.push_str(&refit(r, &self.kernel_rows, self.synthetic_r2, refitted));
        }
        let _ = writeln!(text, "wrote {}", out.display());
        text
    }
}

/// The R² of a result, as a fit quality.
fn r2_of(result: &LearnResult) -> FitQuality {
    FitQuality {
        fast: result.r2_fast,
        slow: result.r2_slow,
    }
}

/// The parameters learned, in seconds per access.
fn params_table(params: &Params) -> String {
    let rows: Vec<Vec<String>> = params
        .named()
        .iter()
        .map(|(k, v)| vec![k.to_string(), format!("{v:.4e}")])
        .collect();
    table(&["parameter", "seconds per access"], &rows)
}

/// The names of a list of (name, YAML text) programs, comma-separated.
fn program_names(list: &[(&str, &str)]) -> String {
    list.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// What a step of the run is about to do.
fn step_phrase(step: &Step) -> String {
    match step {
        Step::CompilerFlags { sets } => format!(
            "choosing compiler flags: the optima of {} built with each of {sets} flag sets ...",
            program_names(&crate::flags::FLAG_KERNELS)
        ),
        Step::Division => format!(
            "choosing how to divide by literals: the optima of {} built to divide through the \
             reciprocal and with a division ...",
            program_names(&crate::division::DIVISION_KERNELS)
        ),
        Step::Training { flags } => format!(
            "timing the training programs, built with {} ...",
            flags.join(" ")
        ),
        Step::KernelRefit { variants } => format!(
            "refitting to real kernels: the optimum and {variants} random configurations of {} ...",
            program_names(&kernels::KERNELS)
        ),
        Step::CacheFraction { programs, fractions } => format!(
            "choosing cache_fraction: the model's optima of {programs} calibration program(s) at fractions {} ...",
            fractions
                .iter()
                .map(|f| format!("{f:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Step::GroupArrays { programs, limits } => format!(
            "choosing group_arrays: the model's optima of {programs} calibration program(s) under limits {} ...",
            limits
                .iter()
                .map(|l| limit_label(*l))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Step::CudaBundles {
            bundles,
            cases,
            kernel_cases,
            dir,
        } => format!(
            "building and running {bundles} CUDA bundles ({cases} training cases, {kernel_cases} kernel variants) in {} ...",
            dir.display()
        ),
    }
}

/// The operation-weight measurement: per kind the seconds one more operation a cell takes once
/// its unit is the bottleneck, that in adds, and the weight written.
fn operations(t: &OperationTimes, w: &OperationWeights) -> String {
    let rows: Vec<Vec<String>> = ["division", "sqrt", "exp, log, pow"]
        .into_iter()
        .zip(t.seconds().into_iter().zip(t.in_adds()))
        .zip([w.divide, w.sqrt, w.call])
        .map(|((name, (seconds, adds)), weight)| {
            vec![
                name.to_string(),
                format!("{seconds:.3e}"),
                format!("{adds:.1}"),
                weight.to_string(),
            ]
        })
        .collect();
    let header = [
        "operation",
        "seconds per cell",
        "in adds",
        "params.operations",
    ];
    format!(
        "operation weights, in adds (one add: {:.3e} s per cell):\n{}",
        t.add_seconds(),
        table(&header, &rows)
    )
}

/// What the kernel refit changed: the kernel variants' accuracy and the synthetic R², with the
/// synthetic fit's parameters and with the refit's.
fn refit(r: &Refit, rows: &[KernelRow], synthetic: FitQuality, refitted: FitQuality) -> String {
    let line = |name: &str, within: f64, rho: f64, q: FitQuality| {
        vec![
            name.to_string(),
            format!("{:.0}%", 100.0 * within),
            format!("{rho:.3}"),
            format!("{:.3}", q.fast),
            format!("{:.3}", q.slow),
        ]
    };
    let header = [
        "parameters",
        "kernels within 20%",
        "Spearman",
        "R² fast",
        "R² slow",
    ];
    let lines = [
        line(
            "synthetic fit",
            r.within_20_before,
            r.spearman_before,
            synthetic,
        ),
        line("refit", r.within_20_after, r.spearman_after, refitted),
    ];
    format!(
        "kernel refit: {} variants of {}, {} round(s)\n{}",
        rows.len(),
        kernels::programs(rows).join(", "),
        r.rounds,
        table(&header, &lines)
    )
}

/// The compiler-flag choice's table: per flag set its kernels' fastest medians and their
/// geometric mean, its ratio to the base set's (round by round, over the rounds) and the upper
/// end of that ratio's 95% confidence interval; then the flags chosen against `current`.
fn flag_choice(c: &FlagChoice, current: &[String]) -> String {
    let rows: Vec<Vec<String>> = c
        .sets
        .iter()
        .zip(&c.times)
        .zip(&c.ratios)
        .map(|(((flags, s), times), ratios)| {
            let mut row = vec![flags.join(" ")];
            for k in 0..c.kernels.len() {
                row.push(
                    times
                        .as_ref()
                        .map_or_else(|| "refused".into(), |t| human_seconds(t[k])),
                );
            }
            row.push(s.map_or_else(|| "-".into(), human_seconds));
            let paired = ratios.as_deref().and_then(crate::stats::paired);
            row.push(paired.map_or_else(|| "-".into(), |p| format!("{:.3}", p.0)));
            row.push(paired.map_or_else(|| "-".into(), |p| format!("{:.3}", p.1)));
            row
        })
        .collect();
    let mut head: Vec<&str> = vec!["flags"];
    head.extend(c.kernels.iter().map(String::as_str));
    head.extend(["geometric mean", "/ base", "at most (95%)"]);
    let mut text = table(&head, &rows);
    let chosen = c.flags();
    let _ = if chosen == current {
        writeln!(text, "compiler.flags: kept {}", chosen.join(" "))
    } else {
        writeln!(
            text,
            "compiler.flags: {} (was {})",
            chosen.join(" "),
            current.join(" ")
        )
    };
    text
}

/// The division choice: each form's time and the division's over the reciprocal's, round by
/// round, and the form written against the file's own (`current`).
fn division_choice(c: &crate::division::DivisionChoice, current: Division) -> String {
    let paired = crate::stats::paired(&c.ratios);
    let rows = vec![vec![
        c.kernels.join(", "),
        human_seconds(c.seconds[0]),
        human_seconds(c.seconds[1]),
        paired.map_or_else(|| "-".into(), |p| format!("{:.3}", p.0)),
        paired.map_or_else(|| "-".into(), |p| format!("{:.3}", p.1)),
    ]];
    let mut text = table(
        &[
            "division kernels",
            "reciprocal",
            "divide",
            "divide / reciprocal",
            "at most (95%)",
        ],
        &rows,
    );
    let _ = if c.chosen == current {
        writeln!(text, "compiler.division: kept {}", c.chosen.name())
    } else {
        writeln!(
            text,
            "compiler.division: {} (was {})",
            c.chosen.name(),
            current.name()
        )
    };
    text
}

/// How the calibrations choose (`calibrate::choose`), under their tables.
fn rule() -> String {
    format!(
        "chosen round by round: the file's own unless the fastest ran faster (95% confidence, by \
         over {}%); then, of those as fast as the fastest, the nearest\n",
        crate::calibrate::KEEP_TOLERANCE * 100.0
    )
}

/// The cache-fraction calibration's table: per fraction, each program's optimum and median,
/// and the mean; then the fraction chosen against `current`.
fn calibration(c: &Calibration, current: f64) -> String {
    let rows: Vec<SettingRow<'_>> = c
        .results
        .iter()
        .map(|r| (format!("{:.4}", r.fraction), &r.per_program[..], r.seconds))
        .collect();
    let mut text = settings("cache fraction", &c.programs, &rows, &c.cases);
    text.push_str(&rule());
    let _ = if c.chosen == current {
        writeln!(text, "cache_fraction: kept {current:.4}")
    } else {
        writeln!(text, "cache_fraction: {:.4} (was {current:.4})", c.chosen)
    };
    text
}

/// The crowding fits: per row-stream limit, the slow family's deviation and R², and the one
/// kept.
fn crowding(c: &CrowdingCalibration, params: &Params) -> String {
    let rows: Vec<Vec<String>> = c
        .limits
        .iter()
        .zip(&c.deviations)
        .zip(&c.r2_slow)
        .map(|((l, d), r)| {
            let label = if *l == 0 {
                "none".into()
            } else {
                l.to_string()
            };
            vec![label, format!("{d:.4e}"), format!("{r:.3}")]
        })
        .collect();
    let header = ["row-stream limit", "slow |deviation| (s)", "slow R²"];
    let mut text = table(&header, &rows);
    let _ = if params.crowded.is_zero() {
        writeln!(
            text,
            "crowding: no charge (no limit fits the slow family better)"
        )
    } else {
        writeln!(
            text,
            "crowding: groups above {} row streams pay {:.4e} s per stream-body access more",
            params.crowded.row_streams, params.crowded.stream_body
        )
    };
    text
}

/// A `group_arrays` limit as shown: the number, or `none`.
fn limit_label(limit: Option<usize>) -> String {
    limit.map_or("none".into(), |n| n.to_string())
}

/// The group-arrays calibration's table: per limit, each program's optimum and median; then
/// the limit chosen against `current`.
fn limit_calibration(c: &LimitCalibration, current: Option<usize>) -> String {
    let rows: Vec<SettingRow<'_>> = c
        .results
        .iter()
        .map(|r| (limit_label(r.limit), &r.per_program[..], r.seconds))
        .collect();
    let mut text = settings("group arrays", &c.programs, &rows, &c.cases);
    text.push_str(&rule());
    let _ = if c.chosen == current {
        writeln!(text, "group_arrays: kept {}", limit_label(current))
    } else {
        writeln!(
            text,
            "group_arrays: {} (was {})",
            limit_label(c.chosen),
            limit_label(current)
        )
    };
    text
}

/// One setting's row of a calibration table: its label, each program's optimum case and
/// median (None: infeasible), and their geometric mean.
type SettingRow<'a> = (String, &'a [Option<(usize, f64)>], Option<f64>);

/// A calibration's table (one row per setting: each program's optimum and median, and their
/// geometric mean), then each program's distinct optima.
fn settings(
    setting: &str,
    programs: &[String],
    rows: &[SettingRow<'_>],
    cases: &[Vec<String>],
) -> String {
    let mut header = vec![setting.to_string()];
    header.extend(programs.iter().cloned());
    header.push("geometric mean".into());
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(label, per_program, seconds)| {
            let mut row = vec![label.clone()];
            row.extend(per_program.iter().map(|p| match p {
                Some((case, s)) => format!("{} (optimum {case})", human_seconds(*s)),
                None => "infeasible".into(),
            }));
            row.push(seconds.map_or("-".into(), human_seconds));
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut text = table(&header, &rows);
    for (program, cases) in programs.iter().zip(cases) {
        for (k, d) in cases.iter().enumerate() {
            let _ = writeln!(text, "  {program} optimum {k}: {d}");
        }
    }
    text
}

impl fmt::Display for GpuOutcome {
    /// What `--emit` wrote and what to run next; or what the fit learned.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuOutcome::Emitted {
                bundles,
                dir,
                machine,
                shared_bytes,
                cache_fraction,
            } => {
                let (cases, kernel_cases) = bundles.cases();
                let ([x, y, z], count) = (gpu::DOMAIN, bundles.count);
                let (dir, machine) = (dir.display(), machine.display());
                writeln!(
                    f,
                    "wrote {count} bundles to {dir}: {cases} training cases (the training programs on {x}x{y}x{z} at the tile shapes the model admits with {shared_bytes} bytes of shared memory per block and cache_fraction {cache_fraction}) and {kernel_cases} kernel variants for the refit\n\
                     on a machine with the GPU and nvcc: sh {dir}/{RUN_SCRIPT}   (writes {dir}/{OUTPUT})\n\
                     then here: absinthe learn --machine {machine} --target cuda --timings {dir}"
                )
            }
            GpuOutcome::Fitted { learning, out } => f.write_str(&learning.report(out)),
        }
    }
}

/// The line `learn --ranks` starts with.
pub fn network_start_line(machine: &str, ranks: usize) -> String {
    format!(
        "measuring the MPI transport of {machine} between {ranks} ranks: ping-pong, then halo exchanges ..."
    )
}

impl NetworkMeasurement {
    /// The ping-pong and halo exchange samples, and the network written to `out`.
    pub fn report(&self, out: &Path) -> String {
        let rows: Vec<Vec<String>> = self
            .pingpong
            .iter()
            .map(|(bytes, s)| vec![bytes.to_string(), format!("{:.2}", s * 1e6)])
            .collect();
        let mut text = table(&["ping-pong bytes", "us one way"], &rows);
        let rows: Vec<Vec<String>> = self
            .halo
            .iter()
            .zip(&self.ratios)
            .map(|(h, r)| {
                vec![
                    h.grid.clone(),
                    format!("{}x{}", h.n, h.n),
                    h.rank.to_string(),
                    h.messages.to_string(),
                    h.bytes.to_string(),
                    h.runs.to_string(),
                    format!("{:.1}", h.seconds * 1e6),
                    format!("{r:.2}"),
                ]
            })
            .collect();
        let header = [
            "grid",
            "sub-domain",
            "rank",
            "messages",
            "bytes in",
            "runs",
            "us",
            "predicted/measured",
        ];
        text.push_str(&table(&header, &rows));
        let n = &self.network;
        let _ = writeln!(
            text,
            "network: latency {:.2} us, bandwidth {:.2} GB/s, {:.2} ns per run; written to {}",
            n.latency_us,
            n.bandwidth_gbs,
            n.run_ns,
            out.display()
        );
        text
    }
}

/// `learn`'s progress on standard error: a one-line bar per step, a line naming each step, and
/// warnings (shown also when quiet).
pub struct Bar {
    total: AtomicUsize,
    done: AtomicUsize,
    started: Mutex<Instant>,
    quiet: bool,
}

impl Bar {
    /// A bar started at `started`; `quiet` shows only warnings.
    pub fn new(started: Instant, quiet: bool) -> Bar {
        Bar {
            total: 0.into(),
            done: 0.into(),
            started: Mutex::new(started),
            quiet,
        }
    }

    /// Shows one event of the run.
    pub fn event(&self, event: Event) {
        match event {
            Event::Progress(p) => self.update(p),
            Event::Warning(w) => eprintln!("warning: {w}"),
            Event::Kept(dir) => eprintln!("the bundles and their output stay in {}", dir.display()),
            Event::Step(step) => {
                self.restart();
                if !self.quiet {
                    eprintln!("{}", step_phrase(&step));
                }
            }
        }
    }

    /// Empties the bar for the next step, its clock started now.
    fn restart(&self) {
        self.total.store(0, SeqCst);
        self.done.store(0, SeqCst);
        if let Ok(mut started) = self.started.lock() {
            *started = Instant::now();
        }
    }

    fn update(&self, event: Progress) {
        let what = match event {
            Progress::Start { total } => {
                self.total.store(total, SeqCst);
                "building".to_string()
            }
            Progress::Step { what } => {
                self.done.fetch_add(1, SeqCst);
                what
            }
        };
        if self.quiet {
            return;
        }
        let (done, total) = (self.done.load(SeqCst), self.total.load(SeqCst).max(1));
        let width = 30;
        let filled = width * done.min(total) / total;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {done}/{total} {:>5.0}s  {what:<24}",
            "#".repeat(filled),
            " ".repeat(width - filled),
            self.started
                .lock()
                .map_or(0.0, |s| s.elapsed().as_secs_f64())
        );
        if done >= total {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    }
}
