//! Text for people: aligned tables and the cells the commands' tables share.

/// Left-aligned text table with a header row.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (c, cell) in r.iter().enumerate() {
            if c < widths.len() {
                widths[c] = widths[c].max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(|s| s.as_str()).collect()));
        out.push('\n');
    }
    out
}

/// Seconds as a readable quantity.
pub fn human_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} us", s * 1e6)
    }
}

/// Group indices as a table cell: `0,0,1`.
pub fn groups_cell(groups: &[usize]) -> String {
    groups
        .iter()
        .map(|g| g.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Tile counts as a table cell: `1x4x6 2x2x1`.
pub fn tiles_cell(tiles: &[[usize; 3]]) -> String {
    tiles
        .iter()
        .map(|t| format!("{}x{}x{}", t[0], t[1], t[2]))
        .collect::<Vec<_>>()
        .join(" ")
}
