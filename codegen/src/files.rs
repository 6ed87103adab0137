//! Files written whole: [`write_atomic`] replaces a file so that a reader never sees half of it
//! and a failure leaves the old one untouched (generated code, solutions, machine files).

use std::io::Write;

use absinthe_model::support::files::open_without_waiting;
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

/// Writes `files` (name, text) into `dir`, creating it, as one change: every file is first
/// written to a temporary beside its target, and only when all of them are written are they
/// renamed into place, so that a failure (a full disk, a target that cannot be written) leaves
/// every old file untouched and no temporary behind (a directory in the way among them). A
/// target that is not a regular file (a FIFO, a device) is written to directly, after every
/// temporary and before the renames. A file that would replace one of `inputs` (a program named
/// like the header `codegen` writes beside it) is refused before anything is written.
pub fn write_files(
    dir: &Path,
    files: &[(String, String)],
    inputs: &[&Path],
) -> Result<(), WriteError> {
    check_output(dir, true)?;
    for (name, _) in files {
        not_an_input(&dir.join(name), inputs)?;
    }
    // A link to a directory that does not exist yet: the directory is made where it points,
    // as a file written through such a link is.
    let target = dangling_target(dir);
    std::fs::create_dir_all(target.as_deref().unwrap_or(dir))
        .or_say(|| format!("cannot create {}", dir.display()))?;
    // Two names linked to one file would leave it holding one of them and the command failed.
    let paths: Vec<PathBuf> = files.iter().map(|(name, _)| dir.join(name)).collect();
    let outputs: Vec<Option<&Path>> = paths.iter().map(|p| Some(p.as_path())).collect();
    outputs_apart(&outputs, inputs)?;
    let mut staged = Vec::new();
    let mut special = Vec::new();
    let mut written = || -> Result<(), WriteError> {
        for (name, text) in files {
            match target_of(&dir.join(name))? {
                Target::Regular(path, existing) => {
                    staged.push(stage(&path, text.as_bytes(), existing.as_ref())?)
                }
                Target::Special(path) => special.push((path, text)),
            }
        }
        for (path, text) in &special {
            write_special(path, text.as_bytes())?;
        }
        Ok(())
    };
    if let Err(e) = written() {
        staged.into_iter().for_each(Staged::discard);
        return Err(e);
    }
    let mut pending = staged.into_iter();
    while let Some(file) = pending.next() {
        if let Err(e) = file.commit() {
            pending.for_each(Staged::discard);
            return Err(e);
        }
    }
    Ok(())
}

/// Refuses, before any work, an output path a command could not write at its end: an existing
/// directory, or a path under something that is not a directory (`-o notes.txt/x`). `dir`: the
/// path is a directory to write files into (`--keep-data`), which may exist.
pub fn check_output(path: &Path, dir: bool) -> Result<(), WriteError> {
    use std::os::unix::ffi::OsStrExt;
    if !dir && path.as_os_str().as_bytes().ends_with(b"/") {
        return Err(WriteError::new(format!(
            "{} ends in `/`, which names a directory; give the file's name",
            path.display()
        )));
    }
    if !dir && path.is_dir() {
        return Err(WriteError::new(format!(
            "{} is a directory, not a file",
            path.display()
        )));
    }
    let mut parent = if dir { Some(path) } else { path.parent() };
    while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(WriteError::new(format!(
                    "cannot write {}: {} is not a directory",
                    path.display(),
                    p.display()
                )))
            }
            Err(_) => parent = p.parent(),
        }
    }
    Ok(())
}

/// Where `path` points when it is a symbolic link (or a chain of them) to nothing: the path
/// of the missing target, relative links read from the link's directory.
fn dangling_target(path: &Path) -> Option<std::path::PathBuf> {
    let mut at = path.to_path_buf();
    // A loop of links is left to `create_dir_all` to report.
    for _ in 0..40 {
        let link = std::fs::symlink_metadata(&at).ok()?;
        if !link.file_type().is_symlink() || std::fs::metadata(&at).is_ok() {
            return None;
        }
        let to = std::fs::read_link(&at).ok()?;
        at = match at.parent() {
            Some(parent) if to.is_relative() => parent.join(to),
            _ => to,
        };
        if std::fs::symlink_metadata(&at).is_err() {
            return Some(at);
        }
    }
    None
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

/// [`not_an_input`] and [`check_output`] (as a file) for each of a command's `outputs` (those
/// given), and no two of them the same file (the second write would replace the first): what a
/// command checks before any work.
pub fn outputs_apart(outputs: &[Option<&Path>], inputs: &[&Path]) -> Result<(), WriteError> {
    let outputs: Vec<&Path> = outputs.iter().flatten().copied().collect();
    // The regular file a path names, existing or not, links followed and its directory
    // resolved; None for a FIFO or a device (`/dev/stdout` twice is two writes to a stream).
    let resolved = |p: &Path| match target_of(p).ok()? {
        Target::Regular(file, Some(_)) => Some(file),
        Target::Regular(file, None) => {
            let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
            Some(
                std::fs::canonicalize(dir.unwrap_or(Path::new(".")))
                    .ok()?
                    .join(file.file_name()?),
            )
        }
        Target::Special(_) => None,
    };
    for (n, out) in outputs.iter().enumerate() {
        not_an_input(out, inputs)?;
        check_output(out, false)?;
        let twice = outputs[..n]
            .iter()
            .find(|o| resolved(o).is_some_and(|r| Some(r) == resolved(out)));
        match twice {
            Some(o) if o == out => {
                return Err(WriteError::new(format!(
                    "{} is named for two outputs; give each its own file",
                    out.display()
                )))
            }
            Some(o) => {
                return Err(WriteError::new(format!(
                    "{} and {} are one file (through a link); give each output its own file",
                    o.display(),
                    out.display()
                )))
            }
            None => {}
        }
    }
    Ok(())
}

/// Writes `contents` to `path` so that a reader never sees a half-written file and a failure
/// leaves the old file untouched: through a temporary file in the same directory and a rename.
/// A symbolic link is written through (its target is replaced, the link kept); a path that is
/// not a regular file (a FIFO, `/dev/stdout`, a device) is written to directly, and a failed
/// write there is an error. A replaced file keeps its permissions (and, as root, its owner).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    check_output(path, false)?;
    match target_of(path)? {
        Target::Special(path) => write_special(&path, contents),
        Target::Regular(path, existing) => stage(&path, contents, existing.as_ref())?.commit(),
    }
}

/// A file another program writes for this one (the trace harness's trace): the writer is given
/// [`Handoff::path`], an empty temporary beside a regular file (renamed over it by
/// [`Handoff::commit`] once the writer has finished; dropped uncommitted, it is removed), or,
/// when that is a FIFO or a device, what this process holds open on it, written to directly
/// (`/dev/stdout` is then absinthe's standard output, not the writer's). So a failed writer leaves
/// the old file as it was, and a device stays a device.
pub struct Handoff {
    staged: Option<Staged>,
    path: PathBuf,
    /// A FIFO or device held open while the writer runs: a FIFO with no reader is refused
    /// before the writer would block opening it, and its reader sees no end of file until the
    /// writer has finished.
    _special: Option<std::fs::File>,
}

/// The [`Handoff`] of `path`, refused where [`write_atomic`] would refuse it.
pub fn handoff(path: &Path) -> Result<Handoff, WriteError> {
    check_output(path, false)?;
    Ok(match target_of(path)? {
        Target::Special(path) => {
            let file = open_special(&path)?;
            Handoff {
                path: held_path(&file).unwrap_or(path),
                _special: Some(file),
                staged: None,
            }
        }
        Target::Regular(path, existing) => {
            let staged = stage(&path, b"", existing.as_ref())?;
            Handoff {
                path: staged.tmp.clone(),
                staged: Some(staged),
                _special: None,
            }
        }
    })
}

/// Where another process opens what `file` is open on: `/proc/PID/fd/FD` of this process,
/// where `/proc` shows it. So `/dev/stdout` (and `/dev/fd/N`, `/dev/stderr`) names this
/// process's stream, not the writer's own, whose standard output absinthe reads.
fn held_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let path = PathBuf::from(format!(
        "/proc/{}/fd/{}",
        std::process::id(),
        file.as_raw_fd()
    ));
    path.exists().then_some(path)
}

impl Handoff {
    /// Where the writer writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is replaced on [`Handoff::commit`] (else it is a FIFO or a device,
    /// written to directly).
    pub fn replaces(&self) -> bool {
        self.staged.is_some()
    }

    /// Puts what the writer wrote in place.
    pub fn commit(mut self) -> Result<(), WriteError> {
        self.staged.take().map_or(Ok(()), Staged::commit)
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        if let Some(staged) = self.staged.take() {
            staged.discard();
        }
    }
}

/// Where a write to a path goes.
enum Target {
    /// A regular file (or none yet), links followed, and its metadata when it exists.
    Regular(PathBuf, Option<std::fs::Metadata>),
    /// Something else that exists there (a FIFO, a device): written to directly.
    Special(PathBuf),
}

/// Where writing `path` goes; a directory is refused.
fn target_of(path: &Path) -> Result<Target, WriteError> {
    let existing = std::fs::metadata(path).ok();
    match &existing {
        Some(m) if m.is_dir() => Err(WriteError::new(format!(
            "{} is a directory, not a file",
            path.display()
        ))),
        Some(m) if !m.is_file() => Ok(Target::Special(path.to_path_buf())),
        Some(_) => {
            let target = std::fs::canonicalize(path)
                .or_say(|| format!("cannot resolve {}", path.display()))?;
            Ok(Target::Regular(target, existing))
        }
        None => Ok(Target::Regular(resolve_links(path)?, None)),
    }
}

/// Writes `contents` to a path that is not a regular file (a FIFO, a device).
fn write_special(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    let mut f = open_special(path)?;
    f.write_all(contents)
        .and_then(|()| f.flush())
        .or_say(|| format!("cannot write {}", path.display()))
}

/// A FIFO or a device opened for writing, refused at once where a FIFO has no reader; writes to
/// it then wait for a reader that is slow, as they would have.
fn open_special(path: &Path) -> Result<std::fs::File, WriteError> {
    // Opened without waiting: a FIFO that no process reads would otherwise block forever.
    let mut options = std::fs::OpenOptions::new();
    options.write(true).truncate(true);
    open_without_waiting(&mut options, path).map_err(|e| match e.raw_os_error() {
        Some(libc::ENXIO) => WriteError::new(format!(
            "cannot write {}: it is a FIFO that no process reads",
            path.display()
        )),
        _ => WriteError::new(format!("cannot open {}: {e}", path.display())),
    })
}

/// A file's new contents written to a temporary beside it, waiting to be renamed over it.
struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    /// Its record among the files a signal that ends absinthe removes
    /// ([`crate::children::remove_on_signal`]).
    on_signal: Option<usize>,
}

impl Staged {
    /// Renames the temporary over the file (removing the temporary if that fails).
    fn commit(self) -> Result<(), WriteError> {
        let renamed = std::fs::rename(&self.tmp, &self.path).or_else(|e| {
            let _ = std::fs::remove_file(&self.tmp);
            Err(e).or_say(|| {
                format!(
                    "cannot rename {} to {}",
                    self.tmp.display(),
                    self.path.display()
                )
            })
        });
        crate::children::keep_on_signal(self.on_signal);
        renamed
    }

    /// Removes the temporary, leaving the file as it was.
    fn discard(self) {
        let _ = std::fs::remove_file(&self.tmp);
        crate::children::keep_on_signal(self.on_signal);
    }
}

/// Writes `contents` to a temporary in `path`'s directory (creating it), with the permissions
/// and owner of `existing`; nothing is left behind on failure.
fn stage(
    path: &Path,
    contents: &[u8],
    existing: Option<&std::fs::Metadata>,
) -> Result<Staged, WriteError> {
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
    // Recorded before it exists, so that a signal that ends absinthe from now on removes it.
    let on_signal = crate::children::remove_on_signal(&tmp);
    let staged = Staged {
        tmp,
        path: path.to_path_buf(),
        on_signal,
    };
    match write_temporary(&staged.tmp, contents, existing) {
        Ok(()) => Ok(staged),
        Err(e) => {
            staged.discard();
            Err(e)
        }
    }
}

/// Writes `contents` to `tmp` with the permissions and owner of `existing`.
fn write_temporary(
    tmp: &Path,
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
    Ok(())
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
