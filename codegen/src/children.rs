//! The processes absinthe starts (compilers, generated harnesses), ended with it.
//!
//! Each child runs in its own process group, recorded while it runs. [`forward_signals`]
//! (called once by the command line at start-up) makes SIGINT, SIGTERM and SIGHUP end every
//! recorded group before absinthe itself ends by the same signal. Without it, `kill PID` (what
//! a job scheduler sends) ended absinthe but left its compilers (g++ and the cc1plus under it)
//! or a timed run going; Ctrl-C at a terminal reached them only because they shared its group.
//! The handler also removes the temporaries of the writes in progress, which the writes'
//! own clean-up (on drop) never reaches when a signal ends the process.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

/// The most children recorded at once; more still run, unrecorded. The same for files.
const SLOTS: usize = 64;

/// The process groups of the running children (0: a free slot).
static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

/// The files a signal that ends absinthe removes: the temporaries of writes in progress
/// (`files::handoff`, `files::write_atomic`), absolute, as C strings (null: a free slot).
static FILES: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// Records `path` (which need not exist yet) to be removed if a signal ends absinthe: its
/// slot, for [`keep_on_signal`], or `None` when every slot is taken.
pub(crate) fn remove_on_signal(path: &Path) -> Option<usize> {
    let path = std::path::absolute(path).ok()?;
    let raw = CString::new(path.as_os_str().as_bytes()).ok()?.into_raw();
    let slot = FILES.iter().position(|s| {
        s.compare_exchange(
            std::ptr::null_mut(),
            raw,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_ok()
    });
    if slot.is_none() {
        // SAFETY: `raw` came from `into_raw` above and was never shared.
        drop(unsafe { CString::from_raw(raw) });
    }
    slot
}

/// Forgets the file recorded in `slot`. Its path is not freed: a handler on another thread may
/// be reading it (a few dozen bytes a write).
pub(crate) fn keep_on_signal(slot: Option<usize>) {
    if let Some(k) = slot {
        FILES[k].store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}

/// Runs `cmd` to its end, as [`Command::output`] does (standard input closed, output and
/// errors captured), in a process group of its own that a signal to absinthe ends too.
pub fn output(cmd: &mut Command) -> io::Result<Output> {
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn()?;
    let group = i32::try_from(child.id()).unwrap_or(0);
    let slot = GROUPS.iter().find(|s| {
        group > 0
            && s.compare_exchange(0, group, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    });
    let out = child.wait_with_output();
    if let Some(s) = slot {
        s.store(0, Ordering::SeqCst);
    }
    out
}

/// Runs `mpirun --allow-run-as-root --oversubscribe -np ranks ARGS` under `timeout seconds`, as
/// [`output`] runs a child, with `OMP_NUM_THREADS=threads` and Open MPI's session directory
/// (`ompi.HOST.UID`; `prte.HOST.UID` from Open MPI 5) under a temporary directory of its own
/// (`TMPDIR`), removed afterwards. Without one, every `mpirun` of the user makes its session
/// directory under the same `/tmp/ompi.HOST.UID`, and two started at once (two runs of
/// absinthe, or the tests) race to create it: the loser fails in `orte_init` with
/// "mkdir ... File exists" before any rank starts. A signal that ends absinthe
/// ([`forward_signals`]) ends `mpirun`, which removes its session directory, but leaves the
/// empty directory above it.
pub fn mpirun(seconds: u32, ranks: usize, threads: usize, args: &[&OsStr]) -> io::Result<Output> {
    let session = tempfile::Builder::new().prefix("absinthe-mpi-").tempdir()?;
    output(
        Command::new("timeout")
            .arg(seconds.to_string())
            .args(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np"])
            .arg(ranks.to_string())
            .args(args)
            .env("OMP_NUM_THREADS", threads.to_string())
            .env("TMPDIR", session.path()),
    )
}

/// Removes the temporaries of writes in progress and ends the children's groups (SIGTERM) when
/// absinthe receives SIGINT, SIGTERM or SIGHUP, then ends absinthe by that signal, as it would
/// have ended without the handler.
pub fn forward_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that calls only async-signal-safe functions (`unlink`,
        // `kill`, `signal`, `raise`) and reads atomics.
        unsafe {
            libc::signal(signal, on_signal as *const () as libc::sighandler_t);
        }
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    for slot in &GROUPS {
        let group = slot.load(Ordering::SeqCst);
        if group > 0 {
            // SAFETY: `kill` is async-signal-safe; a group that has ended makes it fail harmlessly.
            unsafe {
                libc::kill(-group, libc::SIGTERM);
            }
        }
    }
    // After the children, so that none writes a temporary again. Best effort: a thread of
    // absinthe's own may still create one between here and the end.
    for slot in &FILES {
        let path = slot.load(Ordering::SeqCst);
        if !path.is_null() {
            // SAFETY: `unlink` is async-signal-safe; `path` is a C string that is never freed.
            unsafe {
                libc::unlink(path);
            }
        }
    }
    // SAFETY: both are async-signal-safe; the default action ends the process by `signal`.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A child's output is captured as `Command::output` captures it.
    #[test]
    fn output_captures_and_frees_the_slot() {
        let out =
            output(Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"])).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
        assert_eq!(out.status.code(), Some(3));
    }

    /// Each `mpirun` keeps its session directory (`ompi.HOST.UID` under `TMPDIR`) in a directory
    /// of its own, so that runs started at once do not race to create one shared directory.
    #[test]
    fn mpirun_runs_in_a_session_directory_of_its_own() {
        let script = "ls -d \"$TMPDIR\"/ompi.* \"$TMPDIR\"/prte.* 2>/dev/null | head -1";
        let runs: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        let args = ["sh".as_ref(), "-c".as_ref(), OsStr::new(script)];
                        let out = mpirun(60, 1, 1, &args).expect("mpirun (scripts/setup.sh)");
                        assert!(out.status.success(), "{out:?}");
                        String::from_utf8_lossy(&out.stdout).trim().to_string()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let tmp = std::env::temp_dir();
        for (i, dir) in runs.iter().enumerate() {
            let dir = Path::new(dir);
            assert!(
                dir.parent()
                    .is_some_and(|p| p.starts_with(&tmp) && p != tmp),
                "{runs:?}"
            );
            assert!(runs[..i]
                .iter()
                .all(|other| Path::new(other).parent() != dir.parent()));
            let session = dir.parent().unwrap();
            assert!(!session.exists(), "{} outlived its run", session.display());
        }
    }
}
