//! The one place that knows which YAML crate we use (`serde_yaml_ng`, a maintained fork of the
//! archived `serde_yaml`). Swap it here and nowhere else.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::formats::diagnostic::Diagnostic;

pub use serde_yaml_ng::{Mapping, Value};

/// Deserializes `text`, reporting failures with the key path (`stencils[2].expr`) and the line
/// and column the YAML parser gives.
///
/// A leading UTF-8 byte-order mark is skipped. A control character other than tab, line feed
/// and carriage return is an error at its own line and column (YAML forbids them).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Diagnostic> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(d) = control_character(text) {
        return Err(d);
    }
    let de = serde_yaml_ng::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let mut message = inner.to_string();
        // serde_yaml_ng appends " at line L column C" itself; keep it, it helps find the spot.
        if let Some(loc) = inner.location() {
            let suffix = format!(" at line {} column {}", loc.line(), loc.column());
            if !message.contains(&suffix) {
                message.push_str(&suffix);
            }
        }
        let path = if path == "." { String::new() } else { path };
        Diagnostic::new(path, message)
    })
}

/// The first character YAML forbids in `text`, as an error naming its line and column.
fn control_character(text: &str) -> Option<Diagnostic> {
    text.split('\n').enumerate().find_map(|(line, row)| {
        row.chars().enumerate().find_map(|(column, c)| {
            let forbidden = (c.is_control() && !matches!(c, '\t' | '\r' | '\u{85}'))
                || c == '\u{feff}';
            forbidden.then(|| {
                Diagnostic::new(
                    "",
                    format!(
                        "the control character U+{:04X} at line {} column {} is not allowed in a YAML file",
                        c as u32,
                        line + 1,
                        column + 1
                    ),
                )
            })
        })
    })
}

/// Serializes to YAML text.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, String> {
    serde_yaml_ng::to_string(value).map_err(|e| e.to_string())
}

/// Parses untyped YAML (used to rewrite a file while preserving keys we do not own).
pub fn parse_value(text: &str) -> Result<Value, Diagnostic> {
    from_str::<Value>(text)
}
