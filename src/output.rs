//! Output helpers shared by the commands: formats, error printing, atomic file writes.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
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

/// Prints an error chain: a `FileError` already carries file, key and caret; other errors get
/// an `error:` prefix and their causes.
pub fn format_error(err: &anyhow::Error) -> String {
    if let Some(fe) = err.downcast_ref::<absinthe_model::FileError>() {
        return fe.to_string();
    }
    let mut out = format!("error: {err}");
    for cause in err.chain().skip(1) {
        out.push_str(&format!("\n  caused by: {cause}"));
    }
    out
}

/// Writes `contents` to `path` through a temporary file in the same directory and a rename,
/// so a reader never sees a half-written file and a failure leaves the old file untouched.
#[allow(dead_code)]
pub fn write_atomic(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?
        .to_string_lossy();
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(".{}.tmp{}", file_name, std::process::id()));
    let result = (|| -> anyhow::Result<()> {
        let mut f = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Left-aligned text table with a header row.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (c, cell) in r.iter().enumerate() {
            if c < widths.len() {
                widths[c] = widths[c].max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(|s| s.as_str()).collect()));
        out.push('\n');
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

/// Seconds as a readable quantity.
pub fn human_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} us", s * 1e6)
    }
}

/// Group indices as a table cell: `0,0,1`.
pub fn groups_cell(groups: &[usize]) -> String {
    groups
        .iter()
        .map(|g| g.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Tile counts as a table cell: `1x4x6 2x2x1`.
pub fn tiles_cell(tiles: &[[usize; 3]]) -> String {
    tiles
        .iter()
        .map(|t| format!("{}x{}x{}", t[0], t[1], t[2]))
        .collect::<Vec<_>>()
        .join(" ")
}
