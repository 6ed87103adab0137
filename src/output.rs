//! Output helpers shared by the commands: formats, error printing, the shipped-file lookup.

use std::path::Path;

use clap::ValueEnum;

/// How a command prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Table,
    /// JSON for scripts.
    Json,
    /// YAML (the file formats' own syntax).
    Yaml,
}

/// How a command that prints no YAML prints its result (`verify`, `compare`, `cache`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TableOrJson {
    Table,
    Json,
}

/// Writes a command's result to standard output. A write that fails (a full disk, a closed
/// descriptor) is an error naming standard output, where `print!` would panic.
pub fn emit(text: std::fmt::Arguments) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(text)
        .and_then(|()| out.flush())
        .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))
}

/// Prints a command's result as `format` asks: `table` for people, else `data` as JSON or YAML.
pub fn print(
    format: impl Into<Format>,
    data: &impl serde::Serialize,
    table: impl std::fmt::Display,
) -> anyhow::Result<()> {
    match format.into() {
        Format::Table => emit(format_args!("{table}")),
        Format::Json => emit(format_args!("{}\n", serde_json::to_string_pretty(data)?)),
        Format::Yaml => emit(format_args!("{}", yaml_text(data)?)),
    }
}

fn yaml_text(data: &impl serde::Serialize) -> anyhow::Result<String> {
    absinthe_model::formats::yaml::to_string(data).map_err(anyhow::Error::msg)
}

impl From<TableOrJson> for Format {
    fn from(f: TableOrJson) -> Format {
        match f {
            TableOrJson::Table => Format::Table,
            TableOrJson::Json => Format::Json,
        }
    }
}

/// Prints a step line (what a command is doing now) to standard error, unless
/// `ABSINTHE_PROGRESS=0` hides them.
pub fn step(line: &str) {
    if !absinthe_measure::progress::steps_hidden() {
        eprintln!("{line}");
    }
}

/// Prints `message` (an `error: ...` line) to standard error: the exit status 1.
pub fn failed(message: &str) -> std::process::ExitCode {
    eprintln!("{message}");
    std::process::ExitCode::from(1)
}

/// Prints an error chain: a `FileError` already carries file, key and caret; other errors get
/// an `error:` prefix and their causes.
pub fn format_error(err: &anyhow::Error) -> String {
    if let Some(fe) = err.downcast_ref::<absinthe_model::FileError>() {
        return fe.to_string();
    }
    let mut out = format!("error: {err}");
    let mut said = err.to_string();
    // A message that quotes its cause (`building variant opt: CAUSE`) is not followed by it.
    for cause in err.chain().skip(1).map(|c| c.to_string()) {
        if !said.contains(&cause) {
            out.push_str(&format!("\n  caused by: {cause}"));
        }
        said = cause;
    }
    out
}

/// Finds a file shipped with absinthe (`machines/default.yaml`, ...) from any working
/// directory: `$ABSINTHE_HOME/REL`, then `./REL`, then beside the executable (`REL` next to it,
/// or in the source tree two levels up for `target/release/absinthe`), then the source tree the
/// binary was built from. The error names every place looked at.
pub fn shipped_file(rel: &str) -> anyhow::Result<std::path::PathBuf> {
    use std::path::PathBuf;
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("ABSINTHE_HOME") {
        candidates.push(PathBuf::from(home).join(rel));
    }
    candidates.push(PathBuf::from(rel));
    if let Ok(exe) = std::env::current_exe() {
        let exe = exe.canonicalize().unwrap_or(exe);
        for up in exe.ancestors().skip(1).take(4) {
            candidates.push(up.join(rel));
        }
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel));
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    anyhow::bail!(
        "the shipped file {rel} was not found (looked at: {}); pass the file explicitly or set ABSINTHE_HOME to the absinthe source directory",
        tried.join(", ")
    )
}

/// Serialises a solution as YAML or JSON (what `solve -o` and `tune -o` write).
pub fn solution_text(
    solution: &absinthe_model::output::solution::Solution,
    json: bool,
) -> anyhow::Result<String> {
    Ok(if json {
        serde_json::to_string_pretty(solution)? + "\n"
    } else {
        absinthe_model::formats::yaml::to_string(solution).map_err(anyhow::Error::msg)?
    })
}
