//! The report as aligned text: the levels, then per group and per stencil (and with
//! `accesses`, per access site) the misses at each level and their share of the accesses.

use std::fmt::Write;

use crate::count::Counts;
use crate::CacheReport;

/// `part` of `whole` as a percentage with one decimal.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

/// Rows of cells as columns two spaces apart, the first left-aligned, the rest right-aligned.
fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<w$}", w = widths[0]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

impl CacheReport {
    /// What `cache` prints when it is done: the accesses, counted or estimated, and the time.
    pub fn done(&self, seconds: f64) -> String {
        let verb = match self.sampled {
            Some(_) => "estimated the misses of",
            None => "counted",
        };
        let accesses = self.levels.first().map_or(0, |l| l.counts.accesses);
        format!("{verb} {accesses} accesses in {seconds:.2} s")
    }

    /// The table's first lines: the program, the threads, the caches and, for an estimate, how
    /// it was made.
    fn header(&self) -> String {
        let mut out = format!(
            "{}: {} thread(s); each level an LRU cache per thread (write-allocate, no prefetching)\n",
            self.program, self.threads
        );
        if let Some(budget) = self.sampled {
            out += &format!("estimated: each group from empty caches, from a sample of about {budget} accesses of its first thread (docs/MODEL.md, \"Sampled counts\")\n");
        }
        out.push('\n');
        out
    }

    /// The report as text; `accesses` adds a table of every access site.
    pub fn text(&self, accesses: bool) -> String {
        let mut out = self.header();
        let mut rows = vec![[
            "level",
            "bytes/thread",
            "line",
            "ways",
            "accesses",
            "compulsory",
            "capacity",
            "miss",
            "capacity (set-assoc.)",
            "miss (set-assoc.)",
        ]
        .map(String::from)
        .to_vec()];
        for l in &self.levels {
            let c = &l.counts;
            rows.push(vec![
                format!(
                    "{}{}",
                    l.level.name,
                    if l.level.shared { " (share)" } else { "" }
                ),
                l.level.bytes.to_string(),
                l.level.line.to_string(),
                l.level.ways.to_string(),
                c.accesses.to_string(),
                c.compulsory.to_string(),
                c.capacity.to_string(),
                percent(c.misses(), c.accesses),
                c.capacity_sa.to_string(),
                percent(c.misses_sa(), c.accesses),
            ]);
        }
        out.push_str(&columns(&rows));
        let names: Vec<&str> = self.levels.iter().map(|l| l.level.name.as_str()).collect();
        let header = |first: &str| {
            let mut h = vec![first.to_string(), "accesses".into()];
            for n in &names {
                h.push(format!("{n} miss"));
                h.push(format!("{n} set-assoc."));
            }
            h
        };
        let cells = |levels: &[Counts]| {
            let mut r = vec![levels.first().map_or(0, |c| c.accesses).to_string()];
            for c in levels {
                r.push(percent(c.misses(), c.accesses));
                r.push(percent(c.misses_sa(), c.accesses));
            }
            r
        };
        out.push('\n');
        let mut rows = vec![header("group")];
        for g in &self.groups {
            let mut r = vec![format!("{}: {}", g.group, g.name)];
            r.extend(cells(&g.levels));
            rows.push(r);
        }
        out.push_str(&columns(&rows));
        out.push('\n');
        let mut rows = vec![header("stencil")];
        for s in &self.stencils {
            let mut r = vec![format!("{} (group {})", s.name, s.group)];
            r.extend(cells(&s.levels));
            rows.push(r);
        }
        out.push_str(&columns(&rows));
        if accesses {
            out.push('\n');
            let mut rows = vec![header("access")];
            for a in &self.accesses {
                let s = &a.site;
                let [x, y, z] = s.offset;
                let what = if s.kind == "read" {
                    format!(
                        "{}: {} {}({x:+},{y:+},{z:+})",
                        s.stencil,
                        if s.buffer { "buffer" } else { "reads" },
                        s.array
                    )
                } else {
                    format!(
                        "{}: writes {}",
                        s.stencil,
                        if s.buffer { "its buffer" } else { "its array" }
                    )
                };
                let mut r = vec![what];
                r.extend(cells(&a.levels));
                rows.push(r);
            }
            out.push_str(&columns(&rows));
        }
        out
    }
}
