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
}

/// One problem found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Key path inside the file, e.g. `stencils[3].expr`; empty for the whole file.
    pub path: String,
    pub message: String,
    pub snippet: Option<Snippet>,
}

impl Diagnostic {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            path: path.into(),
            message: message.into(),
            snippet: None,
        }
    }

    pub fn with_snippet(mut self, text: &str, column: usize, len: usize) -> Self {
        self.snippet = Some(Snippet {
            text: text.to_string(),
            column: column.max(1),
            len: len.max(1),
        });
        self
    }
}

/// All problems found in one file. Displayed one per paragraph:
/// `error: FILE: KEY: MESSAGE` followed by the snippet and caret when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    pub file: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
}

impl FileError {
    pub fn new(file: impl Into<PathBuf>, diagnostics: Vec<Diagnostic>) -> Self {
        FileError {
            file: file.into(),
            diagnostics,
        }
    }

    pub fn single(file: impl Into<PathBuf>, diagnostic: Diagnostic) -> Self {
        FileError::new(file, vec![diagnostic])
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, d) in self.diagnostics.iter().enumerate() {
            if n > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {}", self.file.display())?;
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
        Ok(())
    }
}

impl std::error::Error for FileError {}

/// Reads the file at `path` and parses it with `parse`; a file that cannot be read, or text
/// that does not parse, is a [`FileError`] naming the file.
pub fn load_file<T>(
    path: &std::path::Path,
    parse: impl FnOnce(&str) -> Result<T, Vec<Diagnostic>>,
) -> Result<T, FileError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        FileError::single(
            path,
            Diagnostic::new("", format!("cannot read the file: {e}")),
        )
    })?;
    parse(&text).map_err(|d| FileError::new(path, d))
}
