//! `absinthe learn --target cuda`: the training programs timed on a GPU and fitted as on a CPU
//! (`absinthe_learn::gpu_fit::learn`): all here (nvcc and a GPU), or `--emit DIR` (the bundles
//! for a GPU machine) and then `--timings DIR` (fit to what it wrote into DIR).

use std::process::ExitCode;
use std::time::Instant;

use absinthe_learn::gpu_fit;
use absinthe_learn::machine_file::read;
use absinthe_learn::text::Bar;

use super::{outputs, request, write, LearnArgs};

pub fn run(args: &LearnArgs) -> anyhow::Result<ExitCode> {
    let bar = Bar::new(Instant::now(), args.quiet);
    let (machine, text) = read(&args.machine)?;
    let file = (args.machine.as_path(), &machine, text.as_str());
    let dirs = (args.timings.as_deref(), args.emit.as_deref());
    let events = |e| bar.event(e);
    let outcome = gpu_fit::learn(file, &request(args), dirs, &outputs(args), &events, &write)?;
    crate::output::emit(format_args!("{outcome}"))?;
    Ok(ExitCode::SUCCESS)
}
