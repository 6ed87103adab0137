//! Files written whole: [`write_atomic`] replaces a file so that a reader never sees half of it
//! and a failure leaves the old one untouched (generated code, solutions, machine files).

use std::io::Write;
use std::path::{Path, PathBuf};

/// A file that could not be written: what failed, and the system's reason when there is one.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct WriteError {
    what: String,
    #[source]
    source: Option<std::io::Error>,
}

impl WriteError {
    fn new(what: String) -> WriteError {
        WriteError { what, source: None }
    }
}

/// Attaches "`what`" to an I/O failure.
trait Context<T> {
    fn or_say(self, what: impl FnOnce() -> String) -> Result<T, WriteError>;
}

impl<T> Context<T> for std::io::Result<T> {
    fn or_say(self, what: impl FnOnce() -> String) -> Result<T, WriteError> {
        self.map_err(|e| WriteError {
            what: what(),
            source: Some(e),
        })
    }
}

/// Writes `files` (name, text) into `dir`, creating it, each with [`write_atomic`]. Every target
/// is checked first, so that a directory in the way leaves no file of this call behind.
pub fn write_files(dir: &Path, files: &[(String, String)]) -> Result<(), WriteError> {
    if let Some((name, _)) = files.iter().find(|(n, _)| dir.join(n).is_dir()) {
        return Err(WriteError::new(format!(
            "{} is a directory, not a file",
            dir.join(name).display()
        )));
    }
    std::fs::create_dir_all(dir).or_say(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in files {
        write_atomic(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

/// Refuses an output path that names one of the command's input files (`solve P -o P` would
/// replace the program with its solution).
pub fn not_an_input(out: &Path, inputs: &[&Path]) -> Result<(), WriteError> {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    match inputs.iter().find(|i| same(out, i)) {
        Some(input) => Err(WriteError::new(format!(
            "{} is an input of this command; write the output to another file",
            input.display()
        ))),
        None => Ok(()),
    }
}

/// Writes `contents` to `path` so that a reader never sees a half-written file and a failure
/// leaves the old file untouched: through a temporary file in the same directory and a rename.
/// A symbolic link is written through (its target is replaced, the link kept); a path that is
/// not a regular file (a FIFO, `/dev/stdout`, a device) is written to directly, and a failed
/// write there is an error. A replaced file keeps its permissions (and, as root, its owner).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    let existing = std::fs::metadata(path).ok();
    if existing.as_ref().is_some_and(|m| !m.is_file()) {
        if existing.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(WriteError::new(format!(
                "{} is a directory, not a file",
                path.display()
            )));
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .or_say(|| format!("cannot open {}", path.display()))?;
        return f
            .write_all(contents)
            .and_then(|()| f.flush())
            .or_say(|| format!("cannot write {}", path.display()));
    }
    let target = match existing {
        Some(_) => {
            std::fs::canonicalize(path).or_say(|| format!("cannot resolve {}", path.display()))?
        }
        None => resolve_links(path)?,
    };
    let path = target.as_path();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Some(file_name) = path.file_name() else {
        return Err(WriteError::new(format!(
            "{} is not a file path",
            path.display()
        )));
    };
    std::fs::create_dir_all(dir).or_say(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = replace(&tmp, path, contents, existing.as_ref());
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `contents` to `tmp` (with the permissions and owner of `existing`) and renames it to
/// `path`.
fn replace(
    tmp: &Path,
    path: &Path,
    contents: &[u8],
    existing: Option<&std::fs::Metadata>,
) -> Result<(), WriteError> {
    let written = || format!("cannot write {}", tmp.display());
    let mut f = std::fs::File::create(tmp).or_say(|| format!("cannot create {}", tmp.display()))?;
    f.write_all(contents).or_say(written)?;
    f.sync_all().or_say(written)?;
    if let Some(m) = existing {
        use std::os::unix::fs::MetadataExt;
        f.set_permissions(m.permissions()).or_say(written)?;
        // Only root may give a file away; elsewhere the owner is the writer anyway.
        let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
    }
    std::fs::rename(tmp, path)
        .or_say(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}

/// `path` with symbolic links followed to the file they name (which need not exist yet).
fn resolve_links(path: &Path) -> Result<PathBuf, WriteError> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&current)
                    .or_say(|| format!("cannot read the link {}", current.display()))?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(WriteError::new(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}
