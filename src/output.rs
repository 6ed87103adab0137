//! Output helpers shared by the commands: formats, error printing, atomic file writes.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};
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

/// Writes `contents` to `path` so that a reader never sees a half-written file and a failure
/// leaves the old file untouched: through a temporary file in the same directory and a rename.
/// A symbolic link is written through (its target is replaced, the link kept); a path that is
/// not a regular file (a FIFO, `/dev/stdout`, a device) is written to directly, and a failed
/// write there is an error. A replaced file keeps its permissions (and, as root, its owner).
pub fn write_atomic(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let existing = std::fs::metadata(path).ok();
    if existing.as_ref().is_some_and(|m| !m.is_file()) {
        if existing.as_ref().is_some_and(|m| m.is_dir()) {
            bail!("{} is a directory, not a file", path.display());
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.write_all(contents)
            .and_then(|()| f.flush())
            .with_context(|| format!("cannot write {}", path.display()))?;
        return Ok(());
    }
    let target = match existing {
        Some(_) => std::fs::canonicalize(path)
            .with_context(|| format!("cannot resolve {}", path.display()))?,
        None => resolve_links(path)?,
    };
    let path = target.as_path();
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
        f.write_all(contents)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        f.sync_all()?;
        if let Some(m) = &existing {
            use std::os::unix::fs::MetadataExt;
            f.set_permissions(m.permissions())?;
            // Only root may give a file away; elsewhere the owner is the writer anyway.
            let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
        }
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `path` with symbolic links followed to the file they name (which need not exist yet).
fn resolve_links(path: &Path) -> anyhow::Result<std::path::PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&current)
                    .with_context(|| format!("cannot read the link {}", current.display()))?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(current),
        }
    }
    bail!("{}: too many levels of symbolic links", path.display())
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
