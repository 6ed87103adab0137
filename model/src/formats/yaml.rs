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
    if let Some(d) = too_deep(text) {
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
        // serde_yaml_ng may start its message with the same path; the diagnostic names it once.
        if let Some(rest) = message.strip_prefix(&format!("{path}: ")) {
            message = rest.to_string();
        }
        Diagnostic::new(path, message)
    })
}

/// The most `[` and `{` a file may nest (no format of absinthe's nests more than three): the
/// parser's time grows with the square of the depth, 7 s at 50,000.
pub const MAX_FLOW_DEPTH: usize = 64;

/// The first `[` or `{` nested deeper than [`MAX_FLOW_DEPTH`] outside quotes and comments, as
/// an error naming its line and column.
fn too_deep(text: &str) -> Option<Diagnostic> {
    let mut depth = 0usize;
    for (line, row) in text.split('\n').enumerate() {
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        for (column, c) in row.chars().enumerate() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '#') if prev.is_whitespace() => break,
                (None, '[' | '{') => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Some(Diagnostic::new(
                            "",
                            format!(
                                "brackets nested more than {MAX_FLOW_DEPTH} deep at line {} column {}",
                                line + 1,
                                column + 1
                            ),
                        ));
                    }
                }
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                _ => {}
            }
            prev = c;
        }
    }
    None
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

/// `deserialize_with` for a mapping whose keys must differ (`let:`, `fields:`): YAML parsers
/// keep the last of two equal keys, which would silently drop the first definition.
pub fn unique_keys<'de, D, V>(de: D) -> Result<indexmap::IndexMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: serde::Deserialize<'de>,
{
    struct Keys<V>(std::marker::PhantomData<V>);
    impl<'de, V: serde::Deserialize<'de>> serde::de::Visitor<'de> for Keys<V> {
        type Value = indexmap::IndexMap<String, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a mapping with distinct keys")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = indexmap::IndexMap::new();
            while let Some((key, value)) = map.next_entry::<String, V>()? {
                if out.contains_key(&key) {
                    return Err(serde::de::Error::custom(format!(
                        "the key `{key}` is given twice"
                    )));
                }
                out.insert(key, value);
            }
            Ok(out)
        }
    }
    de.deserialize_map(Keys(std::marker::PhantomData))
}
