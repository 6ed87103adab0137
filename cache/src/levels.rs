//! The cache levels a thread is modelled with: the machine file's `caches:` (or sysfs's,
//! `absinthe_codegen::host`), a shared level cut into equal shares, one per thread of the run.

use absinthe_model::formats::machine::CacheLevel;
use serde::Serialize;

/// One level as one thread sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadLevel {
    pub name: String,
    /// The capacity one thread is modelled with: the level's bytes, or for a shared level the
    /// whole sets of its equal share (`sets * line * ways`).
    pub bytes: u64,
    pub line: u64,
    pub ways: u64,
    /// Sets of the thread's share: `bytes / (line * ways)`.
    pub sets: u64,
    pub shared: bool,
}

impl ThreadLevel {
    /// Lines of the thread's share: the fully associative capacity.
    pub fn lines(&self) -> u64 {
        self.bytes / self.line
    }
}

/// The levels as each of `threads` threads sees them: a private level whole; a shared one cut
/// into `threads` equal shares, rounded down to whole sets (at least one set).
pub fn thread_levels(levels: &[CacheLevel], threads: usize) -> Vec<ThreadLevel> {
    levels
        .iter()
        .map(|l| {
            let set_bytes = l.line * l.ways;
            let sets = if l.shared {
                (l.sets() / threads.max(1) as u64).max(1)
            } else {
                l.sets()
            };
            ThreadLevel {
                name: l.name.clone(),
                bytes: sets * set_bytes,
                line: l.line,
                ways: l.ways,
                sets,
                shared: l.shared,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_level_is_cut_into_whole_sets_per_thread() {
        let l3 = CacheLevel {
            name: "L3".into(),
            bytes: 32 << 20,
            line: 64,
            ways: 16,
            shared: true,
        };
        let l1 = CacheLevel {
            name: "L1".into(),
            bytes: 48 << 10,
            line: 64,
            ways: 12,
            shared: false,
        };
        let per = thread_levels(&[l1, l3], 3);
        assert_eq!(per[0].bytes, 48 << 10);
        assert_eq!(per[0].sets, 64);
        // 32768 sets / 3 threads = 10922 whole sets.
        assert_eq!(per[1].sets, 10922);
        assert_eq!(per[1].bytes, 10922 * 64 * 16);
    }
}
