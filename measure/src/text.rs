//! Reports as text for people: `bench`'s table and summaries ([`BenchReport`]), `tune`'s
//! candidates and verdict ([`TuneReport`]) and `bench --ranks`'s table ([`RankReport`]).

use std::fmt::Write;

use absinthe_model::language::program::Program;
use absinthe_model::output::text::{groups_cell, human_seconds, table, tiles_cell};

use crate::accuracy::summarize;
use crate::bench::{BenchReport, Build, Row, Verification};
use crate::ranks::RankReport;
use crate::runner::rounds_for;
use crate::tune::{Candidate, TuneReport};
use crate::variants::Variant;

/// Seconds, or `-` for none.
fn seconds_cell(x: Option<f64>) -> String {
    x.map_or("-".to_string(), human_seconds)
}

/// Whether a row ran faster than the bandwidth bound allows (marked `(!)`).
fn disturbed(r: &Row) -> bool {
    r.roofline_fraction.is_some_and(|f| f > 1.0)
}

impl BenchReport<'_> {
    /// The table of the rows under its header (the runs, the flush, the build, the roofline),
    /// then the model's accuracy ([`BenchReport::accuracy_summary`]) and what `opt` chose and
    /// gained, each after a blank line.
    pub fn text(&self) -> String {
        let mut out = self.header();
        let warm = self.rows.iter().any(|r| r.measured_warm_seconds.is_some());
        let body: Vec<Vec<String>> = self.rows.iter().map(|r| row_cells(r, warm)).collect();
        let mut headers = vec![
            "variant",
            "groups",
            "tiles",
            "predicted",
            "measured",
            "min",
            "max",
            "roofline",
            "schedule",
            "verified",
            "status",
        ];
        if warm {
            headers.insert(5, "warm");
        }
        out.push_str(&table(&headers, &body));
        if self.rows.iter().any(disturbed) {
            out.push_str("(!) faster than the bandwidth bound allows: the timing or the bandwidth measurement was disturbed (other load on the machine?); not a result, run again\n");
        }
        for summary in [
            self.accuracy_summary(),
            speedup_summary(&self.bench.program, &self.rows),
        ]
        .into_iter()
        .flatten()
        {
            let _ = writeln!(out, "\n{summary}");
        }
        out
    }

    /// The lines above the table: how the runs were kept, flushed, built and verified, and
    /// the roofline, then a blank line.
    fn header(&self) -> String {
        let (bench, rows) = (self.bench, &self.rows);
        let runs = bench.options.runs;
        let rounds = rounds_for(runs);
        let warm = rows.iter().any(|r| r.measured_warm_seconds.is_some());
        let mut out = format!(
            "{}: median of the runs kept from {} ({} interleaved round(s) of {}, the first quarter of each discarded), {}{}; {}\n",
            bench.program.name,
            rounds * runs.div_ceil(rounds),
            rounds,
            runs.div_ceil(rounds),
            bench.flush_phrase(),
            if warm {
                " (`warm`: as many runs with none flushed)"
            } else {
                ""
            },
            match rows.iter().find_map(|r| r.verification) {
                Some(Verification::Tolerance) if bench.options.build == Build::RelaxedMath => "relaxed-math build (FMA, reassociation and reciprocals in the kernels; the reference IEEE), verified within 1024 ulps of each array's largest magnitude",
                Some(Verification::Tolerance) => "FMA build, verified within 1024 ulps of each array's largest magnitude (--exact: bit for bit)",
                _ => "exact build (-ffp-contract=off), verified bit for bit",
            }
        );
        if let (Some(b), Some(r)) = (bench.bandwidth, rows.first()) {
            let _ = writeln!(
                out,
                "roofline: triad bandwidth {:.2} GB/s; compulsory traffic {:.1} MB (inputs read once over the box their readers touch, halo included; outputs written once) -> at least {}",
                b / 1e9,
                r.compulsory_bytes as f64 / 1e6,
                seconds_cell(r.roofline_seconds)
            );
        }
        let divided = rows
            .first()
            .filter(|r| r.divider_seconds.is_some_and(|s| s > 0.0));
        if let (Some(t), Some(r)) = (bench.divider, divided) {
            let ops = &bench.operations;
            let _ = writeln!(
                out,
                "divider: {:.1} M divisions, {:.1} M square roots, {:.1} M calls (each stencil once over its box) at {:.2}, {:.2}, {:.2} ns each, measured here (a lower bound; calls run beside the divider) -> at least {}",
                bench.divisions() as f64 / 1e6,
                ops.sqrt as f64 / 1e6,
                ops.call as f64 / 1e6,
                t[0] * 1e9,
                t[1] * 1e9,
                t[2] * 1e9,
                seconds_cell(r.divider_seconds)
            );
        }
        out.push('\n');
        out
    }

    /// The model's accuracy over the timed variants (the reference excepted), when there are
    /// at least three: R² and rank correlation over two points say nothing.
    pub fn accuracy_summary(&self) -> Option<String> {
        if self.points.len() < 3 {
            return None;
        }
        let s = summarize(&self.points);
        Some(format!(
            "{} model's accuracy over {} generated variants: R² {:.3}, {:.0}% within 20% of measured, Spearman rank correlation {:.3}",
            self.bench.view.model,
            s.variants,
            s.r2,
            s.within_20_percent * 100.0,
            s.spearman
        ))
    }

    /// A warning line for each variant measured faster than the bandwidth bound allows (the
    /// table marks those `(!)` instead), and for each the cache model could not count.
    pub fn warnings(&self) -> String {
        let mut out = String::new();
        // One line per reason, naming the variants it kept from counting.
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for r in &self.rows {
            if let Some(e) = &r.cache_error {
                match reasons.iter_mut().find(|(why, _)| why == e) {
                    Some((_, variants)) => variants.push(&r.variant),
                    None => reasons.push((e, vec![&r.variant])),
                }
            }
        }
        for (why, variants) in reasons {
            let _ = writeln!(
                out,
                "warning: {}: no cache counts: {why}",
                variants.join(", ")
            );
        }
        for r in self.rows.iter().filter(|r| disturbed(r)) {
            let _ = writeln!(
                out,
                "warning: {} measured faster than the bandwidth bound allows ({:.0}%): the timing was disturbed; run again",
                r.variant,
                r.roofline_fraction.unwrap_or(0.0) * 100.0
            );
        }
        out
    }
}

/// The table cells of one row; `warm` adds the warm time after `measured`.
fn row_cells(r: &Row, warm: bool) -> Vec<String> {
    let mut cells = vec![
        r.variant.clone(),
        groups_cell(&r.groups),
        tiles_cell(&r.tiles),
        if r.predicted_seconds.is_finite() {
            human_seconds(r.predicted_seconds)
        } else {
            "-".into()
        },
        seconds_cell(r.measured_seconds),
        seconds_cell(r.min),
        seconds_cell(r.max),
        r.roofline_fraction.map_or("-".into(), |f| {
            let mark = if f > 1.0 { " (!)" } else { "" };
            format!("{:.1}%{mark}", f * 100.0)
        }),
        r.schedule.clone(),
        match r.verified {
            Some(true) if r.verification == Some(Verification::Tolerance) => "yes (tol)".into(),
            Some(true) => "yes".into(),
            Some(false) => "NO".into(),
            None => "-".into(),
        },
        r.status.to_string(),
    ];
    if warm {
        cells.insert(5, seconds_cell(r.measured_warm_seconds));
    }
    cells
}

/// One paragraph for people: what `opt` chose, how much faster it ran than `naive` and
/// `unfused` (when measured), and how far the model's prediction was from the measurement.
/// None when a variant failed verification: a wrong result's speed means nothing.
fn speedup_summary(program: &Program, rows: &[Row]) -> Option<String> {
    if rows.iter().any(|r| r.verified == Some(false)) {
        return None;
    }
    let opt = rows.iter().find(|r| r.of == Some(Variant::Opt))?;
    let measured = opt.measured_seconds?;
    let ranges = absinthe_model::cost_model::evaluate::ranges_of(&opt.groups);
    // `groups` index the stencils that are not inlined.
    let kept: Vec<&str> = program
        .stencils
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !opt.inline.iter().any(|i| i == n))
        .collect();
    let groups: Vec<String> = ranges
        .iter()
        .zip(&opt.tiles)
        .enumerate()
        .map(|(g, (r, t))| {
            let names: Vec<&str> = r.clone().map(|i| kept[i]).collect();
            let streamed = if opt.stream.contains(&g) {
                ", streamed"
            } else {
                ""
            };
            format!(
                "[{}] in {}x{}x{} tiles{streamed}",
                names.join(" "),
                t[0],
                t[1],
                t[2]
            )
        })
        .collect();
    let mut out = format!(
        "summary: opt runs {} stencils as {} group{}: {}.",
        opt.groups.len(),
        ranges.len(),
        if ranges.len() == 1 { "" } else { "s" },
        groups.join(", ")
    );
    if !opt.inline.is_empty() {
        let _ = write!(
            out,
            "\n  inlined (computed where read): {}",
            opt.inline.join(" ")
        );
    }
    for (base, variant) in [("naive", Variant::Naive), ("unfused", Variant::Unfused)] {
        if let Some(m) = rows
            .iter()
            .find(|r| r.of.as_ref() == Some(&variant))
            .and_then(|r| r.measured_seconds)
        {
            let _ = write!(
                out,
                "\n  {:.2}x faster than {base} ({} -> {})",
                m / measured,
                human_seconds(m),
                human_seconds(measured)
            );
        }
    }
    if opt.predicted_seconds.is_finite() && measured > 0.0 {
        let _ = write!(
            out,
            "\n  the model predicted {} for opt: {:+.0}% off the measured {}",
            human_seconds(opt.predicted_seconds),
            (opt.predicted_seconds / measured - 1.0) * 100.0,
            human_seconds(measured)
        );
    }
    Some(out)
}

impl TuneReport {
    /// The candidates as a table under a header, then the footnotes and the verdict; `flush`
    /// says how the runs treated the caches (`Bench::flush_phrase`).
    pub fn text(&self, flush: &str) -> String {
        let body: Vec<Vec<String>> = self
            .candidates
            .iter()
            .map(|c| candidate_row(c, self.winner_rank))
            .collect();
        let sets = {
            let mut s: Vec<&Vec<String>> = self.candidates.iter().map(|c| &c.inline).collect();
            s.sort();
            s.dedup();
            s.len()
        };
        let mut out = format!(
            "{} on {}: {} configurations over {sets} inline set(s), the model's best and {} from measured sweeps, built, verified and timed (median of {} runs, {flush})\n\n",
            self.program,
            self.machine,
            self.candidates.len(),
            self.refined,
            self.runs,
        );
        out.push_str(&table(
            &[
                "rank",
                "groups",
                "tiles",
                "streams",
                "inlined",
                "from",
                "predicted",
                "measured",
                "error",
                "verified",
                "",
            ],
            &body,
        ));
        out.push_str(&self.footer());
        out
    }

    /// The footnotes and the verdict under the table.
    fn footer(&self) -> String {
        let mut out = String::new();
        if self.confirmed > 0 {
            let _ = writeln!(
                out,
                "*: one of the {} fastest, timed again together at the end ({} runs each); the fastest of that run is written",
                self.confirmed, self.confirm_runs
            );
        }
        if self.candidates.iter().any(|c| !c.feasible) {
            out.push_str("(predicted): a configuration the model rules out (cache or parallel efficiency), timed by a sweep; its prediction ignores that\n");
        }
        out.push('\n');
        let _ = match self.speedup_over_model_optimum {
            Some(s) if self.winner_rank != self.model_optimum_rank => writeln!(
                out,
                "fastest: the model's rank {} ({}), {:.1}% faster than the model's optimum (rank {})",
                self.winner_rank,
                human_seconds(self.winner_seconds),
                (s - 1.0) * 100.0,
                self.model_optimum_rank
            ),
            _ => writeln!(
                out,
                "fastest: the model's optimum (rank {}, {})",
                self.model_optimum_rank,
                human_seconds(self.winner_seconds)
            ),
        };
        out
    }
}

/// The table row of one candidate.
fn candidate_row(c: &Candidate, winner_rank: usize) -> Vec<String> {
    vec![
        c.rank.to_string(),
        groups_cell(&c.groups),
        tiles_cell(&c.tiles),
        if c.stream.is_empty() {
            "-".into()
        } else {
            groups_cell(&c.stream)
        },
        c.inline.len().to_string(),
        c.stage.name().into(),
        if c.feasible {
            human_seconds(c.predicted_seconds)
        } else {
            format!("({})", human_seconds(c.predicted_seconds))
        },
        match (c.measured_seconds, c.confirmed) {
            (Some(m), true) => format!("{}*", human_seconds(m)),
            (m, _) => seconds_cell(m),
        },
        c.prediction_error
            .map_or("-".into(), |e| format!("{:+.1}%", e * 100.0)),
        match c.verified {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        }
        .into(),
        if c.rank == winner_rank {
            "<- fastest"
        } else {
            ""
        }
        .into(),
    ]
}

impl std::fmt::Display for RankReport {
    /// The heading, the decomposed variants as a table (each time also over the single
    /// process's), and the single-process optimum's time.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let one = self.one_process_seconds;
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let m = &r.measured;
                vec![
                    r.variant.clone(),
                    format!("{:?}", r.groups),
                    tiles_cell(&r.tiles),
                    human_seconds(m.median),
                    human_seconds(m.compute),
                    human_seconds(m.exchange_alone),
                    format!("{:.0}%", 100.0 * m.hidden),
                    seconds_cell(r.predicted_seconds),
                    format!("{:.2}", m.median / one),
                ]
            })
            .collect();
        writeln!(
            f,
            "{} over {}x{} ranks x {} thread(s), every output verified bit for bit against the single-process reference:",
            self.program, self.grid.px, self.grid.py, self.threads_per_rank
        )?;
        let headers = [
            "variant",
            "groups",
            "tiles",
            "time",
            "compute only",
            "exchanges alone",
            "hidden",
            "predicted",
            "/ 1 process",
        ];
        write!(f, "{}", table(&headers, &cells))?;
        writeln!(
            f,
            "1 process x {} threads (the single-process optimum): {}",
            self.one_process_threads,
            human_seconds(one)
        )
    }
}
