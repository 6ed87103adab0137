//! What this host reports about itself: its data caches, from sysfs. The cache model, `learn`
//! (the `caches:` and `cache_bytes` it writes) and the harness's flush size all read them here.

use std::path::Path;

use absinthe_model::formats::machine::CacheLevel;

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

/// The largest cache sysfs reports (the last level): what a flush by reading must exceed.
pub fn last_level_cache_bytes() -> Option<u64> {
    sysfs_caches()?.iter().map(|c| c.bytes).max()
}

/// The per-core L2 sysfs reports, else its largest data or unified cache: the capacity
/// `learn` writes as `cache_bytes`.
pub fn l2_cache_bytes() -> Option<u64> {
    let caches = sysfs_caches()?;
    caches
        .iter()
        .find(|c| c.name == "L2")
        .or_else(|| caches.iter().max_by_key(|c| c.bytes))
        .map(|c| c.bytes)
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
    fn sizes_read_with_their_suffix() {
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("x"), None);
    }
}
