//! `absinthe check PROGRAM`: validate and summarise a program.

use std::path::PathBuf;
use std::process::ExitCode;

use absinthe_model::output::check::Report;
use absinthe_model::FileError;
use clap::Args;

use crate::args::load;
use crate::output::Format;

/// Validate a program and print its stencils with their reads, bounding boxes, fetch weights
/// and required evaluation extents.
///
/// Exit status is 0 when the program is valid, 1 otherwise; errors name the file, the line
/// and column, and the key (`FILE:LINE:COLUMN: stencils[3].expr: ...`).
///
/// Examples:
///   absinthe check configs/hdiff.yaml
///   absinthe check configs/cosmo_vdiff_implicit.yaml --format json   # fields, sweeps, intervals
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct CheckArgs {
    /// The program file (YAML, see docs/MODEL.md, "Program file").
    program: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let (program, analysis) = load(&args.program)?;
    let r = Report::new(&program, &analysis);
    let warnings = absinthe_model::output::check::warnings(&program, &analysis);
    if !warnings.is_empty() {
        eprintln!("{}", FileError::new(&args.program, warnings).warnings());
    }
    crate::output::print(args.format, &r, &r)?;
    Ok(ExitCode::SUCCESS)
}
