//! The processes absinthe starts (compilers, generated harnesses), ended with it.
//!
//! Each child runs in its own process group, recorded while it runs. [`forward_signals`]
//! (called once by the command line at start-up) makes SIGINT, SIGTERM and SIGHUP end every
//! recorded group before absinthe itself ends by the same signal. Without it, `kill PID` (what
//! a job scheduler sends) ended absinthe but left its compilers (g++ and the cc1plus under it)
//! or a timed run going; Ctrl-C at a terminal reached them only because they shared its group.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

/// The most children recorded at once; more still run, unrecorded.
const SLOTS: usize = 64;

/// The process groups of the running children (0: a free slot).
static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

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

/// Ends the children's groups (SIGTERM) when absinthe receives SIGINT, SIGTERM or SIGHUP, then
/// ends absinthe by that signal, as it would have ended without the handler.
pub fn forward_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that calls only async-signal-safe functions (`kill`,
        // `signal`, `raise`) and reads atomics.
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
    // SAFETY: both are async-signal-safe; the default action ends the process by `signal`.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child's output is captured as `Command::output` captures it.
    #[test]
    fn output_captures_and_frees_the_slot() {
        let out =
            output(Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"])).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
        assert_eq!(out.status.code(), Some(3));
    }
}
