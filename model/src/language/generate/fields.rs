//! Random programs' 1-D and 2-D fields and 2-D stencils ([`super::random_program`],
//! [`super::random_column_program`]).

use std::fmt::Write;

use super::{required_halo, Rng};

/// Two programs in five (by `seed`, from a generator of its own): some reads of the inputs,
/// `inN(i+a, j+b, k+c)`, rewritten as reads of the 2-D field `fij(i+a, j+b)` or of the 1-D field
/// `fk(k+c)`, declared under `fields:`. A read only loses dimensions, so the program's halo
/// still admits it.
pub(super) fn with_random_fields(text: String, seed: u64) -> String {
    let mut rng = Rng::new(seed ^ 0xF1E1_D5D2_0D1D);
    if !rng.chance(40) {
        return text;
    }
    let mut used = [false; 2];
    let mut out = String::new();
    for line in text.lines() {
        if line == "stencils:" {
            out.push_str("FIELDS");
        }
        let mut rest = line;
        while let Some(at) = input_read(rest) {
            let close = at + rest[at..].find(')').map_or(0, |c| c + 1);
            let inside = &rest[at + 4..close.saturating_sub(1)];
            let parts: Vec<&str> = inside.split(',').map(str::trim).collect();
            out.push_str(&rest[..at]);
            match (parts.len(), rng.below(4)) {
                (3, 0) => {
                    used[0] = true;
                    let _ = write!(out, "fij({}, {})", parts[0], parts[1]);
                }
                (3, 1) => {
                    used[1] = true;
                    let _ = write!(out, "fk({})", parts[2]);
                }
                _ => out.push_str(&rest[at..close]),
            }
            rest = &rest[close..];
        }
        out.push_str(rest);
        out.push('\n');
    }
    let mut fields = String::new();
    for (u, decl) in used.iter().zip(["  fij: [i, j]\n", "  fk: [k]\n"]) {
        if *u {
            fields.push_str(decl);
        }
    }
    // After the program's own `fields:` key, if it has one.
    let out = match out.contains("\nfields:\n") {
        true => {
            out.replace("FIELDS", "")
                .replacen("\nfields:\n", &format!("\nfields:\n{fields}"), 1)
        }
        false if !fields.is_empty() => out.replace("FIELDS", &format!("fields:\n{fields}")),
        false => out.replace("FIELDS", ""),
    };
    with_halo_for_fields(out)
}

/// `text` with its `halo:` line grown to what its stencils' extents need once reads have become
/// field reads (a stencil that reads only fields along a dimension is bounded by no input).
fn with_halo_for_fields(text: String) -> String {
    let Some(line) = text.lines().find(|l| l.starts_with("halo: [")) else {
        return text;
    };
    let old: Vec<usize> = line["halo: [".len()..line.len() - 1]
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    if old.len() != 3 {
        return text;
    }
    let marked = text.replacen(line, "halo: HALO", 1);
    let need = required_halo(&marked);
    let halo = [0, 1, 2].map(|d| old[d].max(need[d]));
    marked.replacen(
        "halo: HALO",
        &format!("halo: [{}, {}, {}]", halo[0], halo[1], halo[2]),
        1,
    )
}

/// Where the first read of an input `inN(` starts in `line`, the name not part of a longer one.
fn input_read(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(3)).find(|&n| {
        b[n] == b'i'
            && b[n + 1] == b'n'
            && b[n + 2].is_ascii_digit()
            && b[n + 3] == b'('
            && (n == 0 || !(b[n - 1].is_ascii_alphanumeric() || b[n - 1] == b'_'))
    })
}

/// A third of the column programs end with a 2-D stencil `pl` computed at the bottom or the
/// top level from the `last` stencil: an output, or read by a last 3-D stencil `pq`.
pub(super) fn with_random_plane(
    mut text: String,
    rng: &mut Rng,
    last: &str,
    outputs: &mut Vec<&str>,
) -> String {
    if !rng.chance(35) {
        return text;
    }
    let level = *rng.pick(&["[0, 1]", "[-1, null]"]);
    let di = match rng.range(-1, 1) {
        0 => String::new(),
        o => format!("{o:+}"),
    };
    let _ = writeln!(
        text,
        "  - name: pl\n    intervals:\n      - k: {level}\n        expr: \"0.5 * {last}(i{di}, j, k) + 0.25\""
    );
    if rng.chance(50) {
        let _ = writeln!(
            text,
            "  - name: pq\n    expr: \"pl(i, j) - {last}(i, j, k)\""
        );
        outputs.push("pq");
    } else {
        outputs.push("pl");
    }
    text.replace("stencils:\n", "fields:\n  pl: [i, j]\nstencils:\n")
}
