//! Errors about user files: each names the file, the key path inside it (`stencils[3].expr`) and,
//! for expressions, the column with a caret under it.

use std::fmt;
use std::path::PathBuf;

/// A piece of source text with a marked column, printed with a caret under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snippet {
    /// The text (an expression as written in the file).
    pub text: String,
    /// 1-based character column of the marked position.
    pub column: usize,
    /// Number of characters to underline (at least 1).
    pub len: usize,
    /// 0-based character offset of the marked position in the whole text given.
    pub offset: usize,
}

/// The most characters of a message or key path a diagnostic keeps.
pub const MAX_MESSAGE: usize = 2000;

/// The most characters of source text a snippet shows.
pub const SNIPPET_WINDOW: usize = 120;

/// Whether `c` would change how a terminal shows the text around it: a control character, a
/// bidirectional override or isolate (which reorders what follows), or a zero-width one.
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// A diagnostic at `key` where `text`, which commands print as it is, holds a control
/// character (an escape sequence would reach the terminal): `{subject} holds the control
/// character U+XXXX; {printed} is printed as it is`. None when it holds none.
pub fn control_character_in(
    text: &str,
    key: &str,
    subject: &str,
    printed: &str,
) -> Option<Diagnostic> {
    let c = text.chars().find(|c| c.is_control())?;
    Some(Diagnostic::new(
        key,
        format!(
            "{subject} holds the control character U+{:04X}; {printed} is printed as it is",
            c as u32
        ),
    ))
}

/// `text` with each character a terminal would not show as itself written as an escape
/// (`\n`, `\u{0}`, `\u{202e}`), so that a diagnostic stays one line and reads as written.
fn escape_controls(text: &str) -> String {
    if !text.chars().any(unprintable) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if unprintable(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `text` cut to its first and last `max / 2` characters when longer than `max`.
fn shorten(text: String, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let head: String = text.chars().take(max / 2).collect();
    let tail: String = text.chars().skip(count - max / 2).collect();
    format!("{head} ... ({} characters omitted) ... {tail}", count - max)
}

/// One problem found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Key path inside the file, e.g. `stencils[3].expr`; empty for the whole file.
    pub path: String,
    pub message: String,
    pub snippet: Option<Snippet>,
    /// The 1-based line and column in the file where `path` is written (with a snippet, where
    /// its mark is), when found ([`FileError::new`] looks it up).
    pub at: Option<(usize, usize)>,
}

impl Diagnostic {
    /// A problem at `path`; a message longer than [`MAX_MESSAGE`] characters (one that quotes a
    /// huge value) keeps its head and tail.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            path: shorten(escape_controls(&path.into()), MAX_MESSAGE),
            message: shorten(escape_controls(&message.into()), MAX_MESSAGE),
            snippet: None,
            at: None,
        }
    }

    /// Marks `len` characters from the 1-based `column` of `text`. Of a text longer than
    /// [`SNIPPET_WINDOW`] characters only a window around the mark is kept, with `...` where it
    /// was cut.
    /// Of a text of several lines only the line holding the mark is shown; control characters,
    /// bidirectional overrides and zero-width characters show as spaces.
    pub fn with_snippet(mut self, text: &str, column: usize, len: usize) -> Self {
        let mut column = column.max(1);
        let offset = column - 1;
        let mut line_start = 0;
        let mut line_end = text.chars().count();
        for (n, c) in text.chars().enumerate() {
            if c == '\n' {
                if n + 1 < column {
                    line_start = n + 1;
                } else {
                    line_end = n;
                    break;
                }
            }
        }
        let chars: Vec<char> = text
            .chars()
            .skip(line_start)
            .take(line_end.saturating_sub(line_start))
            .map(|c| if unprintable(c) { ' ' } else { c })
            .collect();
        let text: &str = &chars.iter().collect::<String>();
        column -= line_start;
        let len = len.max(1);
        let snippet = if chars.len() <= SNIPPET_WINDOW {
            Snippet {
                text: text.to_string(),
                column,
                len: len.min((chars.len() + 1).saturating_sub(column)).max(1),
                offset,
            }
        } else {
            let at = (column - 1).min(chars.len());
            let start = at.saturating_sub(SNIPPET_WINDOW / 2);
            let end = (start + SNIPPET_WINDOW).min(chars.len());
            let head = if start > 0 { "..." } else { "" };
            let tail = if end < chars.len() { "..." } else { "" };
            let window: String = chars[start..end].iter().collect();
            Snippet {
                text: format!("{head}{window}{tail}"),
                column: at - start + head.len() + 1,
                len: len.min(end.saturating_sub(at)).max(1),
                offset,
            }
        };
        self.snippet = Some(snippet);
        self
    }
}

/// Edit distance (insertions, deletions, substitutions) between two names.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The candidate closest to `name` when it is a likely misspelling of it (at most one edit in
/// a name of up to four characters, two in a longer one); ties go to the first.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let allowed = if name.chars().count() <= 4 { 1 } else { 2 };
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (edit_distance(name, c), c))
        .filter(|&(d, _)| d <= allowed)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// The longest input name looked at for a misspelt stencil name: one letter off in a longer
/// name is no likely slip, and its keys would cost the square of its length.
pub const NEAR_MISS_CHARS: usize = 64;

/// For each of `names`, the first of `stencils` exactly one edit away, if any. Two names one
/// edit apart share a key (a name itself or it less one character), so each stencil is filed
/// under its keys and a name is compared only with the stencils that share one of its keys:
/// linear in the names, where comparing every pair was quadratic.
pub fn one_edit_away(names: &[&str], stencils: &[&str]) -> Vec<Option<usize>> {
    // Only stencils within one character of some name's length are filed: the keys of a name of
    // L characters take about L^2 bytes, and a name nothing can be one edit from needs none.
    let lengths: std::collections::HashSet<usize> =
        names.iter().map(|n| n.chars().count()).collect();
    let near = |s: &str| {
        let l = s.chars().count();
        (l.saturating_sub(1)..=l + 1).any(|m| lengths.contains(&m))
    };
    let mut by_key: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for (n, s) in stencils.iter().enumerate().filter(|(_, s)| near(s)) {
        for key in one_deleted(s) {
            by_key.entry(key).or_default().push(n);
        }
    }
    names
        .iter()
        .map(|name| {
            one_deleted(name)
                .filter_map(|key| by_key.get(&key))
                .flatten()
                .copied()
                .filter(|&n| edit_distance(name, stencils[n]) == 1)
                .min()
        })
        .collect()
}

/// `name` and every string made of it by deleting one character.
fn one_deleted(name: &str) -> impl Iterator<Item = String> + '_ {
    let at: Vec<usize> = name.char_indices().map(|(i, _)| i).collect();
    let cut = move |k: usize| {
        let end = at.get(k + 1).copied().unwrap_or(name.len());
        format!("{}{}", &name[..at[k]], &name[end..])
    };
    std::iter::once(name.to_string()).chain((0..name.char_indices().count()).map(cut))
}

/// All problems found in one file. Displayed one per paragraph:
/// `error: FILE:LINE:COLUMN: KEY: MESSAGE` (`error: FILE: KEY: MESSAGE` where the key is not
/// found in the file) followed by the snippet and caret when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    pub file: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
}

impl FileError {
    /// The problems `diagnostics` of `file`. Where `file` is a regular file, each key path is
    /// looked up in its text, so that the error gives the line and column it is written at
    /// (a message that already gives them, as the YAML reader's do, is left as it is).
    pub fn new(file: impl Into<PathBuf>, diagnostics: Vec<Diagnostic>) -> Self {
        let mut error = FileError {
            file: file.into(),
            diagnostics,
        };
        error.locate();
        error
    }

    fn locate(&mut self) {
        let unplaced = |d: &Diagnostic| {
            d.at.is_none() && !d.path.is_empty() && !d.message.contains(" at line ")
        };
        if !self.diagnostics.iter().any(unplaced) {
            return;
        }
        // Only a regular file is read again: opening a named pipe would wait for a writer.
        let regular = std::fs::metadata(&self.file).is_ok_and(|m| m.is_file());
        let Some(text) = regular.then(|| read_text(&self.file).ok()).flatten() else {
            return;
        };
        for d in self.diagnostics.iter_mut().take(MAX_SHOWN) {
            if unplaced(d) {
                d.at = match &d.snippet {
                    Some(s) => super::locate::locate_in_value(&text, &d.path, s.offset),
                    None => super::locate::locate(&text, &d.path),
                };
            }
        }
    }

    pub fn single(file: impl Into<PathBuf>, diagnostic: Diagnostic) -> Self {
        FileError::new(file, vec![diagnostic])
    }
}

/// The most diagnostics of one file printed: the rest are counted. A file of a million
/// repeated names would otherwise print a million lines.
pub const MAX_SHOWN: usize = 50;

impl FileError {
    /// The diagnostics as warnings (`warning: FILE:LINE:COLUMN: KEY: MESSAGE`), not errors.
    pub fn warnings(&self) -> impl fmt::Display + '_ {
        Labelled(self, "warning")
    }

    fn write_labelled(&self, f: &mut fmt::Formatter<'_>, label: &str) -> fmt::Result {
        for (n, d) in self.diagnostics.iter().enumerate().take(MAX_SHOWN) {
            if n > 0 {
                writeln!(f)?;
            }
            write!(f, "{label}: {}", self.file.display())?;
            if let Some((line, column)) = d.at {
                write!(f, ":{line}:{column}")?;
            }
            if !d.path.is_empty() {
                write!(f, ": {}", d.path)?;
            }
            write!(f, ": {}", d.message)?;
            if let Some(s) = &d.snippet {
                let pad: String = " ".repeat(s.column - 1);
                let carets = "^".repeat(s.len);
                write!(f, "\n    | {}\n    | {}{}", s.text, pad, carets)?;
            }
        }
        if self.diagnostics.len() > MAX_SHOWN {
            let more = self.diagnostics.len() - MAX_SHOWN;
            let file = self.file.display();
            write!(f, "\n{label}: {file}: {more} more {label}(s) not shown")?;
        }
        Ok(())
    }
}

struct Labelled<'a>(&'a FileError, &'static str);

impl fmt::Display for Labelled<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write_labelled(f, self.1)
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_labelled(f, "error")
    }
}

impl std::error::Error for FileError {}

/// Reads the file at `path` and parses it with `parse`; a file that cannot be read, or text
/// that does not parse, is a [`FileError`] naming the file.
pub fn load_file<T>(
    path: &std::path::Path,
    parse: impl FnOnce(&str) -> Result<T, Vec<Diagnostic>>,
) -> Result<T, FileError> {
    let text = read_text(path).map_err(|e| FileError::single(path, Diagnostic::new("", e)))?;
    parse(&text).map_err(|d| FileError::new(path, d))
}

/// The most bytes a program, machine or solution file may have: 16 MiB, ten times a program of
/// the most stencils with twenty inputs each. The YAML parser holds about 64 bytes a byte of a
/// file of small values (1 GiB at the limit), so the bound is what keeps a file nobody wrote
/// from taking the machine's memory.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The text of a file of at most [`MAX_FILE_BYTES`], or why not: a pipe is read (`<(...)`), a
/// device that never ends (`/dev/zero`) stops at the bound.
fn read_text(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| format!("cannot read the file: {e}");
    let mut bytes = Vec::new();
    // A FIFO that no process writes would block the open forever; read, it ends at once.
    crate::support::files::open_without_waiting(std::fs::OpenOptions::new().read(true), path)
        .map_err(cannot)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    let fifo = || {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    };
    if bytes.is_empty() && fifo() {
        return Err("it is a FIFO that no process writes".into());
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "the file is larger than {} MiB, the most absinthe reads",
            MAX_FILE_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        format!("cannot read the file: it is not UTF-8 text (byte {at})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::rng::Rng;

    /// The keyed search finds, for random names over a small alphabet (multibyte letters
    /// included), the stencil that comparing every pair finds.
    #[test]
    fn one_edit_away_equals_comparing_every_pair() {
        let letters = ['a', 'b', 'c', 'é', '_'];
        let mut rng = Rng::new(7);
        let word = |rng: &mut Rng| -> String {
            (0..rng.range(1, 5)).map(|_| *rng.pick(&letters)).collect()
        };
        let mut found = 0;
        for _ in 0..300 {
            let stencils: Vec<String> = (0..rng.range(1, 12)).map(|_| word(&mut rng)).collect();
            let names: Vec<String> = (0..12).map(|_| word(&mut rng)).collect();
            let s: Vec<&str> = stencils.iter().map(String::as_str).collect();
            let n: Vec<&str> = names.iter().map(String::as_str).collect();
            let brute: Vec<Option<usize>> = n
                .iter()
                .map(|x| s.iter().position(|y| edit_distance(x, y) == 1))
                .collect();
            found += brute.iter().flatten().count();
            assert_eq!(one_edit_away(&n, &s), brute, "{n:?} against {s:?}");
        }
        assert!(found > 500, "{found} pairs one edit apart");
    }
}
