//! `learn --ranks N`: measure the MPI transport and write the machine file's `network:`
//! section, leaving the rest of the file as it is.

use std::process::ExitCode;

use absinthe_learn::machine_file::read;
use absinthe_learn::network::learn;
use absinthe_learn::text::network_start_line;

use super::{outputs, write, LearnArgs};

pub fn run(args: &LearnArgs, ranks: usize) -> anyhow::Result<ExitCode> {
    let (machine, text) = read(&args.machine)?;
    if !args.quiet {
        eprintln!("{}", network_start_line(&machine.name, ranks));
    }
    let out = outputs(args).out;
    let measured = learn(&text, ranks, out, &write)?;
    crate::output::emit(format_args!("{}", measured.report(out)))?;
    Ok(ExitCode::SUCCESS)
}
