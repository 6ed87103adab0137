//! Reading a machine file with its text, and writing what `learn` found into it: only the
//! top-level `params` and `learned` blocks are replaced (and `cores` / `cache_bytes` added when
//! the file lacks them); every other line, comments included, stays as written. The result is
//! validated as a machine file before it is returned.

use std::path::Path;

use absinthe_model::formats::diagnostic::load_file;
use absinthe_model::formats::learned::Learned;
use absinthe_model::formats::machine::{Machine, Params, PeelBody};
use absinthe_model::FileError;

use crate::LearnError;

/// The machine file at `path`, parsed, and its text (which `learn` rewrites).
pub fn read(path: &Path) -> Result<(Machine, String), FileError> {
    load_file(path, |text| {
        Machine::from_yaml(text).map(|m| (m, text.to_string()))
    })
}

/// The top-level key a line opens, if it opens one (`key:` at column 0).
fn top_level_key(line: &str) -> Option<&str> {
    if line.is_empty() || line.starts_with([' ', '\t', '#', '-']) {
        return None;
    }
    let (key, _) = line.split_once(':')?;
    Some(key.trim())
}

/// Line ranges `[start, end)` of the block of each top-level key: its line and the indented
/// lines after it.
fn blocks(lines: &[&str]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(key) = top_level_key(lines[i]) {
            let start = i;
            i += 1;
            while i < lines.len() && lines[i].starts_with([' ', '\t']) {
                i += 1;
            }
            out.push((key.to_string(), start, i));
        } else {
            i += 1;
        }
    }
    out
}

/// A number in YAML: scientific with enough digits to round-trip a fit.
fn number(x: f64) -> String {
    if x == 0.0 {
        "0.0".into()
    } else {
        format!("{x:.4e}")
    }
}

/// The `params:` and `learned:` blocks.
pub fn learned_blocks(params: &Params, learned: &Learned) -> String {
    let pb = |p: &absinthe_model::formats::machine::PeelBody| {
        format!("{{peel: {}, body: {}}}", number(p.peel), number(p.body))
    };
    let mut text = format!(
        "params:\n  fast:        {}\n  slow_base:   {}\n  slow_stream: {}\n  compute:     {}\nlearned:\n  at: {}\n  host: {}\n  samples: {}\n  r2: {{fast: {:.4}, slow: {:.4}}}\n",
        pb(&params.fast),
        pb(&params.slow_base),
        pb(&params.slow_stream),
        pb(&PeelBody {
            peel: params.compute.peel,
            body: params.compute.body,
        }),
        quoted(&learned.at),
        quoted(&learned.host),
        learned.samples,
        learned.r2.fast,
        learned.r2.slow,
    );
    // Inside `params:`, before the `learned:` block: the crowding charge (when there is one)
    // and the operation weights.
    let mut tail = String::new();
    if !params.crowded.is_zero() {
        tail.push_str(&format!(
            "  crowded:     {{row_streams: {}, stream_body: {}}}\n",
            params.crowded.row_streams,
            number(params.crowded.stream_body)
        ));
    }
    let w = &params.operations;
    tail.push_str(&format!(
        "  operations:  {{divide: {}, sqrt: {}, call: {}}}\n",
        w.divide, w.sqrt, w.call
    ));
    if params.exposed > 0.0 {
        tail.push_str(&format!("  exposed:     {}\n", params.exposed));
    }
    let at = text.find("learned:\n").unwrap_or(text.len());
    text.insert_str(at, &tail);
    if let Some(w) = learned.wall_seconds {
        text.push_str(&format!("  wall_seconds: {w:.1}\n"));
    }
    if let Some(f) = &learned.flush {
        text.push_str(&format!("  flush: {f}\n"));
    }
    if !learned.model.is_default() {
        text.push_str(&format!("  model: {}\n", learned.model));
    }
    text.push_str(&records(learned));
    text
}

/// The `learned` block's records of how `learn` chose what it chose, and of the refit.
fn records(learned: &Learned) -> String {
    let mut text = String::new();
    if let Some(c) = &learned.cache_calibration {
        let fractions: Vec<String> = c.fractions.iter().map(|f| format!("{f:.4}")).collect();
        text.push_str(&calibration_block(
            "cache_calibration",
            "fractions",
            &fractions,
            &c.seconds,
        ));
        text.push_str(&lists("rounds", &c.rounds, |x| format!("{x:.9e}")));
    }
    if let Some(c) = &learned.flag_calibration {
        let sets: Vec<String> = c.flags.iter().map(|f| quoted_list(f)).collect();
        text.push_str(&calibration_block(
            "flag_calibration",
            "flags",
            &sets,
            &c.seconds,
        ));
        text.push_str(&lists("ratios", &c.ratios, |x| format!("{x:.9}")));
    }
    if let Some(c) = &learned.division_calibration {
        let names: Vec<String> = c.kernels.iter().map(|n| quoted(n)).collect();
        let ratios: Vec<String> = c.ratios.iter().map(|x| format!("{x:.9}")).collect();
        text.push_str(&format!(
            "  division_calibration:\n    kernels: [{}]\n    reciprocal_seconds: {:.9e}\n    divide_seconds: {:.9e}\n    ratios: [{}]\n",
            names.join(", "),
            c.reciprocal_seconds,
            c.divide_seconds,
            ratios.join(", "),
        ));
    }
    if let Some(c) = &learned.crowding_calibration {
        let list = |v: Vec<String>| v.join(", ");
        text.push_str(&format!(
            "  crowding_calibration:\n    limits: [{}]\n    deviations: [{}]\n    r2_slow: [{}]\n",
            list(c.limits.iter().map(|l| l.to_string()).collect()),
            list(c.deviations.iter().map(|d| format!("{d:.9e}")).collect()),
            list(c.r2_slow.iter().map(|r| format!("{r:.4}")).collect()),
        ));
    }
    if let Some(k) = &learned.kernel_refit {
        let names: Vec<String> = k.programs.iter().map(|n| quoted(n)).collect();
        text.push_str(&format!(
            "  kernel_refit:\n    programs: [{}]\n    variants: {}\n    weight: {}\n    rounds: {}\n    within_20_before: {:.4}\n    within_20_after: {:.4}\n    spearman_before: {:.4}\n    spearman_after: {:.4}\n    r2_synthetic_fit: {{fast: {:.4}, slow: {:.4}}}\n",
            names.join(", "),
            k.variants,
            k.weight,
            k.rounds,
            k.within_20_before,
            k.within_20_after,
            k.spearman_before,
            k.spearman_after,
            k.r2_synthetic_fit.fast,
            k.r2_synthetic_fit.slow,
        ));
    }
    if let Some(c) = &learned.group_arrays_calibration {
        let limits: Vec<String> = c
            .limits
            .iter()
            .map(|l| l.map_or_else(|| "null".to_string(), |n| n.to_string()))
            .collect();
        text.push_str(&calibration_block(
            "group_arrays_calibration",
            "limits",
            &limits,
            &c.seconds,
        ));
        text.push_str(&lists("rounds", &c.rounds, |x| format!("{x:.9e}")));
    }
    text
}

/// A calibration record's `key: [[...], null, ...]` line (one list per setting, null where
/// there is none), with nine digits so that the choice can be made again from what is
/// written; nothing when `values` is empty.
fn lists(key: &str, values: &[Option<Vec<f64>>], show: impl Fn(f64) -> String) -> String {
    if values.is_empty() {
        return String::new();
    }
    let items: Vec<String> = values
        .iter()
        .map(|v| {
            v.as_ref().map_or_else(
                || "null".to_string(),
                |v| {
                    let v: Vec<String> = v.iter().map(|&x| show(x)).collect();
                    format!("[{}]", v.join(", "))
                },
            )
        })
        .collect();
    format!("    {key}: [{}]\n", items.join(", "))
}

/// One calibration record of the `learned` block: the settings tried under `key` and their
/// seconds, with nine digits so that `calibrate::choose` and `choose_limit` pick the same
/// setting from what is written.
fn calibration_block(
    name: &str,
    key: &str,
    settings: &[String],
    seconds: &[Option<f64>],
) -> String {
    let seconds: Vec<String> = seconds
        .iter()
        .map(|s| s.map_or_else(|| "null".to_string(), |s| format!("{s:.9e}")))
        .collect();
    format!(
        "  {name}:\n    {key}: [{}]\n    seconds: [{}]\n",
        settings.join(", "),
        seconds.join(", ")
    )
}

/// `text` with the top-level key `key` set to `value`: its block (the key's line and the
/// indented lines after it) becomes one `key: value` line, keeping a comment that ended the
/// key's line; a file without the key gets the line at the end. Every other line stays.
pub fn set_top_level(text: &str, key: &str, value: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut found = false;
    let mut i = 0;
    while i < lines.len() {
        if !found && top_level_key(lines[i]) == Some(key) {
            found = true;
            let comment = lines[i]
                .find(" #")
                .map(|at| format!("  {}", lines[i][at..].trim_start()))
                .unwrap_or_default();
            out.push(format!("{key}: {value}{comment}"));
            i += 1;
            while i < lines.len() && lines[i].starts_with([' ', '\t']) {
                i += 1;
            }
            continue;
        }
        out.push(lines[i].to_string());
        i += 1;
    }
    if !found {
        out.push(format!("{key}: {value}"));
    }
    let mut result = out.join("\n");
    result.push('\n');
    result
}

/// `text` without the top-level `key` (its line and any indented lines under it); `text`
/// itself when the key is absent.
pub fn remove_top_level(text: &str, key: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if top_level_key(lines[i]) == Some(key) {
            i += 1;
            while i < lines.len() && lines[i].starts_with([' ', '\t']) {
                i += 1;
            }
            continue;
        }
        out.push(lines[i]);
        i += 1;
    }
    let mut result = out.join("\n");
    result.push('\n');
    result
}

/// `text` with its `params` and `learned` blocks replaced (in place of the old `params`
/// block, else at the end) and `extra` top-level `key: value` lines added where the file lacks
/// the key.
pub fn rewrite(
    text: &str,
    params: &Params,
    learned: &Learned,
    extra: &[(&str, String)],
) -> Result<String, LearnError> {
    let lines: Vec<&str> = text.lines().collect();
    let found = blocks(&lines);
    let has = |key: &str| found.iter().any(|b| b.0 == key);
    let mut insert_at = found.iter().find(|b| b.0 == "params").map(|b| b.1);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    let mut new_block = String::new();
    for (key, value) in extra {
        if !has(key) {
            new_block.push_str(&format!("{key}: {value}\n"));
        }
    }
    new_block.push_str(&learned_blocks(params, learned));
    while i < lines.len() {
        if insert_at == Some(i) {
            out.extend(new_block.lines().map(str::to_string));
            insert_at = None;
        }
        if let Some(b) = found
            .iter()
            .find(|b| b.1 == i && (b.0 == "params" || b.0 == "learned"))
        {
            i = b.2;
            continue;
        }
        out.push(lines[i].to_string());
        i += 1;
    }
    if insert_at.is_some() || !found.iter().any(|b| b.0 == "params") {
        out.extend(new_block.lines().map(str::to_string));
    }
    let mut result = out.join("\n");
    result.push('\n');
    Machine::from_yaml(&result).map_err(|d| {
        LearnError::MachineFile(format!(
            "the rewritten file does not read back: {}",
            d.iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    })?;
    Ok(result)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_timestamp(seconds: u64) -> String {
    let days = (seconds / 86400) as i64;
    let rem = seconds % 86400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + (month <= 2) as i64;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// `compiler` as a machine file's `compiler:` value, in flow style on one line, each string
/// quoted.
pub fn compiler_yaml(compiler: &absinthe_model::formats::machine::Compiler) -> String {
    let mut text = format!(
        "{{cxx: {}, flags: {}",
        quoted(&compiler.cxx),
        quoted_list(&compiler.flags)
    );
    if !compiler.division.is_default() {
        text.push_str(&format!(", division: {}", compiler.division.name()));
    }
    if !compiler.candidates.is_empty() {
        let sets: Vec<String> = compiler.candidates.iter().map(|c| quoted_list(c)).collect();
        text.push_str(&format!(", candidates: [{}]", sets.join(", ")));
    }
    text.push('}');
    text
}

/// `s` as a YAML double-quoted scalar (a JSON string is one).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `items` as a YAML flow list of double-quoted scalars.
fn quoted_list(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| quoted(s)).collect();
    format!("[{}]", items.join(", "))
}

/// `levels` as a machine file's `caches:` value, in flow style on one line.
pub fn caches_yaml(levels: &[absinthe_model::formats::machine::CacheLevel]) -> String {
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

/// The host's name and CPU model, for `learned.host`.
pub fn host_description() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{name} ({model}, {cpus} CPUs)")
}
