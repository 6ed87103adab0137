//! The `absinthe` command line: argument handling, file I/O and output formats only. All the
//! work is done by the library crates (`absinthe-model`, `absinthe-solvers`, ...).

mod args;
mod bench;
mod bench_ranks;
mod cache_cmd;
mod check;
mod codegen_cmd;
mod compare;
mod learn_cmd;
mod output;
mod solve;
mod solving;
mod tune;
#[cfg(feature = "z3")]
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// absinthe tunes stencil programs for the machine they run on: it chooses which stencils to
/// fuse and how to tile them by solving one mixed-integer linear program built from a learned
/// performance model, and emits tiled OpenMP C++ or CUDA for that choice.
///
/// Typical session:
///   absinthe learn --machine machines/template.yaml --out mybox.yaml   # once per machine
///   absinthe check configs/hdiff.yaml
///   absinthe solve configs/hdiff.yaml --machine mybox.yaml -o hdiff.solution.yaml
///   absinthe verify configs/hdiff.yaml --machine mybox.yaml --solution hdiff.solution.yaml
///   absinthe codegen configs/hdiff.yaml --machine mybox.yaml --solution hdiff.solution.yaml \
///       --harness -o out/
///   absinthe bench configs/hdiff.yaml --machine mybox.yaml --variants naive,unfused,opt
///   absinthe tune configs/hdiff.yaml --machine mybox.yaml --top 8   # the model's best 8, refined
///
/// Without --machine, commands use machines/default.yaml (hand-made for a 2-core Xeon; its
/// parameters are the original work's, an order of magnitude only). Neither it nor
/// machines/xeon-sapphire-rapids-2core.yaml (learned on one 2-core Sapphire Rapids) describes
/// your machine: `absinthe learn` writes a file that does.
#[derive(Parser)]
#[command(name = "absinthe", version, about, long_about, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Check(check::CheckArgs),
    Solve(solve::SolveArgs),
    Compare(compare::CompareArgs),
    #[cfg(feature = "z3")]
    Verify(verify::VerifyArgs),
    Codegen(codegen_cmd::CodegenArgs),
    Bench(bench::BenchArgs),
    Cache(cache_cmd::CacheArgs),
    Tune(tune::TuneArgs),
    Learn(learn_cmd::LearnArgs),
}

fn main() -> ExitCode {
    // Like other Unix filters, end quietly when the reader of standard output goes away
    // (`absinthe check x.yaml | head`) instead of failing on a broken pipe.
    // SAFETY: resetting a signal disposition to its default at start-up, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // A compiler or timed run started here ends with absinthe (`kill PID`, Ctrl-C).
    absinthe_codegen::children::forward_signals();
    // Help, the version or a usage error: clap's text and status, unless it cannot be written.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match e.print() {
            Ok(()) => return ExitCode::from(e.exit_code().clamp(0, 255) as u8),
            Err(w) => {
                return output::failed(&format!("error: cannot write to standard output: {w}"))
            }
        },
    };
    let result = match cli.command {
        Command::Check(args) => check::run(args),
        Command::Solve(args) => solve::run(args),
        Command::Compare(args) => compare::run(args),
        #[cfg(feature = "z3")]
        Command::Verify(args) => verify::run(args),
        Command::Codegen(args) => codegen_cmd::run(args),
        Command::Bench(args) => match args.search.ranks {
            Some(grid) => bench_ranks::run(&args, grid),
            None => bench::run(args),
        },
        Command::Cache(args) => cache_cmd::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Learn(args) => learn_cmd::run(args),
    };
    result.unwrap_or_else(|err| output::failed(&output::format_error(&err)))
}
