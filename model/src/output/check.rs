//! What `absinthe check` reports of a program: its stencils with their reads, bounding boxes,
//! fetch weights, arithmetic and evaluation extents, and likely mistakes; as data (serialised to
//! JSON or YAML) and as a table for people.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::formats::diagnostic::Diagnostic;
use crate::language::analysis::Analysis;
use crate::language::program::{access_snippet, Program, DIMS};
use crate::output::text::table;

/// A program's summary.
#[derive(Serialize)]
pub struct Report {
    pub program: String,
    pub domain: [usize; 3],
    pub halo: [usize; 3],
    #[serde(rename = "type")]
    pub value_type: &'static str,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// The run-time scalars, arguments of the generated function in this order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scalars: Vec<String>,
    /// The inputs with fewer dimensions than (i, j, k), and theirs (`fields:`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, Vec<&'static str>>,
    pub stencils: Vec<StencilReport>,
    /// Likely mistakes that do not make the program invalid.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Serialize)]
pub struct StencilReport {
    pub name: String,
    pub reads: Vec<ReadReport>,
    pub fetch_weight: u64,
    /// Arithmetic per evaluation, in adds (the model's compute weight).
    pub operations: u64,
    pub readers: Vec<String>,
    pub output: bool,
    /// Cells beyond the domain the reference evaluates, [[i-, i+], [j-, j+], [k-, k+]].
    pub extent: [[usize; 2]; 3],
    /// `parallel`, `forward` or `backward`.
    pub computation: &'static str,
    /// The levels `[lo, hi)` of each interval, in the order written (absent: one body on
    /// every level).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<[i64; 2]>,
    /// A sweep's reads of its own array (offsets).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub self_reads: Vec<[i32; 3]>,
}

#[derive(Serialize)]
pub struct ReadReport {
    pub array: String,
    pub offsets: Vec<[i32; 3]>,
    /// [[lo, hi] per dimension]
    #[serde(rename = "box")]
    pub bounds: [[i32; 2]; 3],
}

impl Report {
    /// The report of `program`, whose analysis is `a`.
    pub fn new(program: &Program, a: &Analysis) -> Report {
        Report {
            program: program.name.clone(),
            domain: program.domain,
            halo: program.halo,
            value_type: program.value_type.c_name(),
            inputs: a.inputs.iter().map(|&i| a.arrays[i].name.clone()).collect(),
            fields: program
                .fields
                .iter()
                .map(|(n, d)| (n.clone(), d.names()))
                .collect(),
            outputs: a
                .outputs
                .iter()
                .map(|&s| a.stencils[s].name.clone())
                .collect(),
            scalars: program.scalars.clone(),
            stencils: a
                .stencils
                .iter()
                .enumerate()
                .map(|(n, s)| StencilReport {
                    computation: s.computation.name(),
                    intervals: match s.intervals {
                        true => (0..program.stencils[n].bodies.len())
                            .map(|b| {
                                let (lo, hi) =
                                    program.stencils[n].body_levels(b, program.domain[2]);
                                [lo, hi]
                            })
                            .collect(),
                        false => Vec::new(),
                    },
                    self_reads: s.self_reads.clone(),
                    name: s.name.clone(),
                    reads: s
                        .bounds
                        .iter()
                        .map(|(&arr, b)| ReadReport {
                            array: a.arrays[arr].name.clone(),
                            offsets: s
                                .accesses
                                .iter()
                                .filter(|(x, _)| *x == arr)
                                .map(|(_, o)| *o)
                                .collect(),
                            bounds: [[b[0].0, b[0].1], [b[1].0, b[1].1], [b[2].0, b[2].1]],
                        })
                        .collect(),
                    fetch_weight: s.fetch_weight,
                    operations: s.operations,
                    readers: s
                        .readers
                        .iter()
                        .map(|&r| a.stencils[r].name.clone())
                        .collect(),
                    output: s.is_output,
                    extent: s.extent,
                })
                .collect(),
            warnings: warnings(program, a)
                .into_iter()
                .map(|d| format!("{}: {}", d.path, d.message))
                .collect(),
        }
    }
}

/// Likely mistakes that leave the program valid, each at the first read it concerns (key path
/// and caret): inputs one letter away from a stencil's name, where the program declares no
/// `inputs:` to have such names refused.
pub fn warnings(program: &Program, analysis: &Analysis) -> Vec<Diagnostic> {
    if program.inputs.is_some() {
        return Vec::new();
    }
    analysis
        .near_miss_inputs()
        .into_iter()
        .map(|(input, stencil)| {
            let message = format!(
                "the input `{input}` is one letter away from the stencil `{stencil}`: a misspelling? Declare the inputs (`inputs: [...]`) to have undeclared names refused"
            );
            match first_read(program, &input) {
                Some((path, src, (column, len))) => {
                    Diagnostic::new(path, message).with_snippet(src, column, len)
                }
                None => Diagnostic::new("", message),
            }
        })
        .collect()
}

/// The key path, text and (column, length) of the first read of `array` in `program`.
fn first_read<'p>(program: &'p Program, array: &str) -> Option<(String, &'p str, (usize, usize))> {
    program
        .stencils
        .iter()
        .flat_map(|s| &s.bodies)
        .find_map(|b| {
            let lets = b.lets.iter().zip(&b.sources.lets);
            let lets =
                lets.map(|(l, (src, spans))| (format!("{}.let.{}", b.path, l.name), src, spans));
            let expr = (
                format!("{}.expr", b.path),
                &b.sources.expr,
                &b.sources.expr_accesses,
            );
            lets.chain([expr]).find_map(|(path, src, spans)| {
                Some((path, src.as_str(), access_snippet(src, spans, array)?))
            })
        })
}

fn range(lo: i32, hi: i32) -> String {
    if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo}..{hi}")
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self;
        writeln!(
            f,
            "program {}: {} stencils, domain {}x{}x{}, halo {}x{}x{}, {}",
            r.program,
            r.stencils.len(),
            r.domain[0],
            r.domain[1],
            r.domain[2],
            r.halo[0],
            r.halo[1],
            r.halo[2],
            r.value_type
        )?;
        let input = |n: &String| match r.fields.get(n) {
            Some(d) => format!("{n} [{}]", d.join(", ")),
            None => n.clone(),
        };
        writeln!(
            f,
            "inputs:  {}",
            r.inputs.iter().map(input).collect::<Vec<_>>().join(", ")
        )?;
        writeln!(f, "outputs: {}", r.outputs.join(", "))?;
        if !r.scalars.is_empty() {
            writeln!(f, "scalars: {}", r.scalars.join(", "))?;
        }
        writeln!(f)?;
        let rows = stencil_rows(r);
        write!(
            f,
            "{}",
            table(
                &[
                    "#",
                    "stencil",
                    "reads",
                    "points",
                    "box [i, j, k]",
                    "fetch",
                    "ops",
                    "extent"
                ],
                &rows
            )
        )
    }
}

/// The stencil table's rows: one per read array, the stencil's own cells on the first.
fn stencil_rows(r: &Report) -> Vec<Vec<String>> {
    r.stencils
        .iter()
        .enumerate()
        .flat_map(|(n, s)| {
            let extent = (0..3)
                .map(|d| format!("{}{}:-{}+{}", "", DIMS[d], s.extent[d][0], s.extent[d][1]))
                .collect::<Vec<_>>()
                .join(" ");
            let mut rows = Vec::new();
            for (k, rd) in s.reads.iter().enumerate() {
                let bx = (0..3)
                    .map(|d| range(rd.bounds[d][0], rd.bounds[d][1]))
                    .collect::<Vec<_>>()
                    .join(", ");
                let first = k == 0;
                rows.push(vec![
                    if first { n.to_string() } else { String::new() },
                    if first {
                        format!("{}{}", s.name, mode(s))
                    } else {
                        String::new()
                    },
                    rd.array.clone(),
                    rd.offsets.len().to_string(),
                    format!("[{bx}]"),
                    if first {
                        s.fetch_weight.to_string()
                    } else {
                        String::new()
                    },
                    if first {
                        s.operations.to_string()
                    } else {
                        String::new()
                    },
                    if first { extent.clone() } else { String::new() },
                ]);
            }
            if rows.is_empty() {
                rows.push(vec![
                    n.to_string(),
                    format!("{}{}", s.name, mode(s)),
                    "-".into(),
                    "0".into(),
                    "-".into(),
                    s.fetch_weight.to_string(),
                    s.operations.to_string(),
                    extent,
                ]);
            }
            rows
        })
        .collect()
}

/// What the table shows after a stencil's name: `(out)`, a sweep, its intervals.
fn mode(s: &StencilReport) -> String {
    let mut parts = Vec::new();
    if s.output {
        parts.push("out".to_string());
    }
    if s.computation != "parallel" {
        parts.push(s.computation.to_string());
    }
    if !s.intervals.is_empty() {
        let levels: Vec<String> = s
            .intervals
            .iter()
            .map(|[lo, hi]| format!("{lo}..{hi}"))
            .collect();
        parts.push(format!("k {}", levels.join(" ")));
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join(", ")),
    }
}
