//! The cache levels a thread is modelled with: the machine file's `caches:` (or sysfs's), a
//! shared level cut into equal shares, one per thread of the run.

use std::path::Path;

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

/// The data and unified caches sysfs reports for cpu0, nearest first; None when it reports
/// none.
pub fn sysfs_caches() -> Option<Vec<CacheLevel>> {
    sysfs_caches_in(Path::new("/sys/devices/system/cpu/cpu0/cache"))
}

/// [`sysfs_caches`] read from `dir` (a `cpuN/cache` directory of `indexN` entries). Entries
/// without a level, size, line or associativity, and instruction caches, are left out; a
/// level whose size is not whole sets of its ways and line is rounded down to whole sets.
pub fn sysfs_caches_in(dir: &Path) -> Option<Vec<CacheLevel>> {
    let mut found: Vec<(u32, CacheLevel)> = Vec::new();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let p = entry.path();
        let read = |f: &str| {
            std::fs::read_to_string(p.join(f))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        if kind == "Instruction" {
            continue;
        }
        let (Some(level), Some(bytes)) = (level.parse::<u32>().ok(), parse_size(&size)) else {
            continue;
        };
        let line = read("coherency_line_size")
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|l| l.is_power_of_two() && (8..=4096).contains(l))
            .unwrap_or(64);
        // 0 (or absent) is how sysfs says fully associative.
        let ways = match read("ways_of_associativity").and_then(|s| s.parse::<u64>().ok()) {
            Some(w) if w > 0 => w,
            _ => (bytes / line).max(1),
        };
        let ways = ways.min(absinthe_model::formats::limits::MAX_CACHE_WAYS);
        let sets = bytes / (line * ways);
        if sets == 0 {
            continue;
        }
        let shared = read("shared_cpu_list").is_some_and(|l| l.contains([',', '-']));
        found.push((
            level,
            CacheLevel {
                name: format!("L{level}"),
                bytes: sets * line * ways,
                line,
                ways,
                shared,
            },
        ));
    }
    found.sort_by_key(|(level, _)| *level);
    found.dedup_by_key(|(level, _)| *level);
    (!found.is_empty()).then(|| found.into_iter().map(|(_, c)| c).collect())
}

/// `levels` as a machine file's `caches:` value, in flow style on one line.
pub fn flow_yaml(levels: &[CacheLevel]) -> String {
    let items: Vec<String> = levels
        .iter()
        .map(|l| {
            format!(
                "{{name: {}, bytes: {}, line: {}, ways: {}, shared: {}}}",
                l.name, l.bytes, l.line, l.ways, l.shared
            )
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// `32K`, `1024K`, `32M` or a plain byte count.
fn parse_size(text: &str) -> Option<u64> {
    let (digits, shift) = match text.as_bytes().last()? {
        b'K' => (&text[..text.len() - 1], 10),
        b'M' => (&text[..text.len() - 1], 20),
        b'G' => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, index: &str, files: &[(&str, &str)]) {
        let d = dir.join(index);
        std::fs::create_dir_all(&d).unwrap();
        for (f, v) in files {
            std::fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn sysfs_levels_are_read_nearest_first_without_instruction_caches() {
        let dir = std::env::temp_dir().join(format!("absinthe-sysfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let level = |l, t, s, w, shared| {
            [
                ("level", l),
                ("type", t),
                ("size", s),
                ("ways_of_associativity", w),
                ("coherency_line_size", "64"),
                ("shared_cpu_list", shared),
            ]
        };
        write(
            &dir,
            "index3",
            &level("3", "Unified", "32768K", "16", "0-1"),
        );
        write(&dir, "index0", &level("1", "Data", "48K", "12", "0"));
        write(&dir, "index1", &level("1", "Instruction", "32K", "8", "0"));
        write(&dir, "index2", &level("2", "Unified", "1024K", "8", "0"));
        let caches = sysfs_caches_in(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let got: Vec<_> = caches
            .iter()
            .map(|c| (c.name.as_str(), c.bytes, c.ways, c.shared))
            .collect();
        assert_eq!(
            got,
            [
                ("L1", 48 << 10, 12, false),
                ("L2", 1 << 20, 8, false),
                ("L3", 32 << 20, 16, true)
            ]
        );
    }

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
        let per = thread_levels(&[l1.clone(), l3], 3);
        assert_eq!(per[0].bytes, 48 << 10);
        assert_eq!(per[0].sets, 64);
        // 32768 sets / 3 threads = 10922 whole sets.
        assert_eq!(per[1].sets, 10922);
        assert_eq!(per[1].bytes, 10922 * 64 * 16);
        assert_eq!(parse_size("32M"), Some(32 << 20));
        let text = format!("name: m\ncaches: {}\n", flow_yaml(&[l1]));
        let m = absinthe_model::formats::machine::Machine::from_yaml(&text).unwrap();
        assert_eq!(m.caches.unwrap()[0].bytes, 48 << 10);
        assert_eq!(parse_size("x"), None);
    }
}
