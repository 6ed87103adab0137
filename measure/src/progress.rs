//! Progress lines for work that may be slow (a solve, an inline search): after 2 s, one line on
//! standard error every 5 s saying what runs and for how long, and a closing line. Shown when
//! standard error is a terminal, or when `ABSINTHE_PROGRESS=1`; `ABSINTHE_PROGRESS=0` hides them,
//! and the commands' step lines as well ([`steps_hidden`]).

use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Silence before the first line.
const FIRST: Duration = Duration::from_secs(2);
/// Between lines.
const EVERY: Duration = Duration::from_secs(5);

struct State {
    phase: String,
    done: bool,
    shown: bool,
}

/// A running task's progress reporter; dropping it ends the reports.
pub struct Progress {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<JoinHandle<()>>,
    what: String,
    start: Instant,
}

/// Whether `ABSINTHE_PROGRESS=0` hides the step lines a command prints as it goes (`compiling
/// ...`, `[round 1/4, 2/3] running opt ...`), which are shown otherwise, to a terminal or not.
pub fn steps_hidden() -> bool {
    std::env::var("ABSINTHE_PROGRESS").as_deref() == Ok("0")
}

/// Whether progress lines are shown.
fn enabled() -> bool {
    match std::env::var("ABSINTHE_PROGRESS").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => std::io::stderr().is_terminal(),
    }
}

impl Progress {
    /// Starts reporting on `what` (e.g. `solving configs/hdiff.yaml`).
    pub fn start(what: impl Into<String>) -> Progress {
        let what = what.into();
        let shared = Arc::new((
            Mutex::new(State {
                phase: String::new(),
                done: false,
                shown: false,
            }),
            Condvar::new(),
        ));
        let start = Instant::now();
        let thread = enabled().then(|| {
            let shared = Arc::clone(&shared);
            let what = what.clone();
            std::thread::spawn(move || report(&shared, &what, start))
        });
        Progress {
            shared,
            thread,
            what,
            start,
        }
    }

    /// Names the step now running (shown in the next line).
    pub fn phase(&self, phase: impl Into<String>) {
        if let Ok(mut s) = self.shared.0.lock() {
            s.phase = phase.into();
        }
    }
}

/// The reporting thread: waits, prints, until told the task is done.
fn report(shared: &(Mutex<State>, Condvar), what: &str, start: Instant) {
    let (lock, wake) = shared;
    let Ok(mut state) = lock.lock() else { return };
    let mut next = FIRST;
    loop {
        let wait = next.saturating_sub(start.elapsed());
        let Ok((s, _)) = wake.wait_timeout_while(state, wait, |s| !s.done) else {
            return;
        };
        state = s;
        if state.done {
            return;
        }
        let phase = if state.phase.is_empty() {
            String::new()
        } else {
            format!(" ({})", state.phase)
        };
        eprintln!("{what}: {:.0} s{phase} ...", start.elapsed().as_secs_f64());
        state.shown = true;
        next += EVERY;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        let shown = match self.shared.0.lock() {
            Ok(mut s) => {
                s.done = true;
                s.shown
            }
            Err(_) => false,
        };
        self.shared.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if shown {
            eprintln!(
                "{}: done in {:.1} s",
                self.what,
                self.start.elapsed().as_secs_f64()
            );
        }
    }
}
