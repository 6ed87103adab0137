//! `learn --ranks N`: measure the MPI transport and write the machine file's `network:`
//! section, leaving the rest of the file as it is.

use std::process::ExitCode;

use absinthe_learn::machine_file::set_top_level;
use absinthe_learn::network::measure;
use absinthe_model::formats::machine::Machine;
use anyhow::Context;

use super::LearnArgs;
use crate::output::write_atomic;
use absinthe_model::output::text::table;

pub fn run(args: &LearnArgs, ranks: usize) -> anyhow::Result<ExitCode> {
    let machine = Machine::load(&args.machine)?;
    let text = std::fs::read_to_string(&args.machine)
        .with_context(|| format!("cannot read {}", args.machine.display()))?;
    if !args.quiet {
        eprintln!(
            "measuring the MPI transport of {} between {ranks} ranks: ping-pong, then halo exchanges ...",
            machine.name
        );
    }
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let m = measure(ranks, dir.path())?;
    let n = &m.network;
    let value = format!(
        "{{latency_us: {:.4}, bandwidth_gbs: {:.4}, run_ns: {:.4}, source: \"{}\"}}",
        n.latency_us,
        n.bandwidth_gbs,
        n.run_ns,
        n.source.replace('"', "'")
    );
    let new_text = set_top_level(&text, "network", &value);
    Machine::from_yaml(&new_text)
        .map_err(|d| anyhow::anyhow!("the new network section does not read back: {d:?}"))?;
    let out = args.out.as_ref().unwrap_or(&args.machine);
    write_atomic(out, new_text.as_bytes())?;
    let rows: Vec<Vec<String>> = m
        .pingpong
        .iter()
        .map(|(bytes, s)| vec![bytes.to_string(), format!("{:.2}", s * 1e6)])
        .collect();
    print!("{}", table(&["ping-pong bytes", "us one way"], &rows));
    let rows: Vec<Vec<String>> = m
        .halo
        .iter()
        .zip(&m.ratios)
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
    print!(
        "{}",
        table(
            &[
                "grid",
                "sub-domain",
                "rank",
                "messages",
                "bytes in",
                "runs",
                "us",
                "predicted/measured"
            ],
            &rows
        )
    );
    println!(
        "network: latency {:.2} us, bandwidth {:.2} GB/s, {:.2} ns per run; written to {}",
        n.latency_us,
        n.bandwidth_gbs,
        n.run_ns,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
