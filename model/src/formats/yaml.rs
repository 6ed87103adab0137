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
    if let Some(d) = structure_error(text) {
        return Err(d);
    }
    let de = serde_yaml_ng::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let mut message = inner.to_string();
        // serde_yaml_ng appends " at line L column C" itself: the diagnostic gives the place
        // before the key instead (`FILE:L:C: KEY: MESSAGE`), as every other error does.
        let at = inner.location().map(|loc| (loc.line(), loc.column()));
        if let Some((line, column)) = at {
            let suffix = format!(" at line {line} column {column}");
            message = message.replace(&suffix, "");
        }
        // `?`: the parser failed before it read the key (at the top, or below `KEY`).
        let path = match path.strip_suffix('?') {
            _ if path == "." => String::new(),
            Some(head) => head.trim_end_matches('.').to_string(),
            None => path,
        };
        if path.is_empty() {
            if let Some(m) = top_level_twice(text, &message) {
                message = m;
            }
        }
        // serde_yaml_ng may start its message with the same path; the diagnostic names it once.
        if let Some(rest) = message.strip_prefix(&format!("{path}: ")) {
            message = rest.to_string();
        } else if let Some((head, rest)) = message.split_once(": ") {
            // Or with the path of the mapping that holds the key at fault.
            if !head.is_empty() && !head.contains(' ') && path.starts_with(head) {
                message = rest.to_string();
            }
        }
        // A key given twice below the top: placed at the second, where the parser places the
        // mapping that holds it.
        if let Some(twice) = nested_twice(text, &path, &message) {
            return twice;
        }
        let mut d = Diagnostic::new(path, plain_words(&short_numbers(&message)));
        // A message that places itself (a key given twice, at two lines) keeps its own words;
        // a syntax error is placed where it is, and says where the construct it broke began.
        let placed = d.message.contains(" at line ") && !d.message.contains(", while parsing ");
        d.at = at.filter(|_| !placed);
        d
    })
}

/// The YAML crate's words for the types it expected, in the words of the file's reader: a
/// whole number, a number, a mapping, a name. A number written past a double's range is read
/// as a string by the crate, and said to be out of range.
fn plain_words(message: &str) -> String {
    const WORDS: [(&str, &str); 12] = [
        ("unit value", "null"),
        ("expected usize", "expected a whole number of 0 or more"),
        ("expected u64", "expected a whole number of 0 or more"),
        ("expected u32", "expected a whole number of 0 or more"),
        ("expected u16", "expected a whole number of 0 or more"),
        ("expected u8", "expected a whole number of 0 or more"),
        ("expected i64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a YAML tag starting with '!'", "expected one name"),
        (
            "deserializing from YAML containing more than one document is not supported",
            "the file holds more than one YAML document (a `---` line starts another); absinthe reads one",
        ),
    ];
    let mut out = message.to_string();
    for (from, to) in WORDS {
        out = out.replace(from, to);
    }
    // `found integer `2^70` as u128`: an integer past 64 bits, in the reader's words.
    out = out
        .replace("` as u128", "`, too large")
        .replace("` as i128", "`, too large");
    // `expected struct ProgramFile`: the name is the reader's own.
    if let Some(at) = out.find("expected struct ") {
        let end = out[at + 16..]
            .find(|c: char| !c.is_alphanumeric() && c != '_')
            .map_or(out.len(), |e| at + 16 + e);
        out.replace_range(at..end, "expected a mapping of keys");
    }
    // `invalid type: string "1e999", expected a number`: a number past a double's range.
    if let Some(rest) = out.strip_prefix("invalid type: string \"") {
        if let Some((text, tail)) = rest.split_once('"') {
            // Only digits that overflow: a quoted `'1'` or `'nan'` is a string where a number
            // belongs, which the general message below says.
            let overflows = matches!(text.parse::<f64>(), Ok(v) if v.is_infinite())
                && !text.to_ascii_lowercase().contains("inf");
            if tail.starts_with(", expected a number") && overflows {
                return format!("the number `{text}` is out of the range of a double");
            }
        }
    }
    // `invalid type: integer `-1`, expected ...`: what is expected first.
    for kind in ["invalid type: ", "invalid value: "] {
        if let Some((found, expected)) = out
            .strip_prefix(kind)
            .and_then(|rest| rest.split_once(", expected "))
        {
            return format!("expected {expected}, found {found}");
        }
    }
    out
}

/// `message` with each number quoted in backticks that is written out past 24 characters
/// (serde writes `1e300` where a `u64` is expected as 301 digits) shown short
/// ([`super::limits::shown`]).
fn short_numbers(message: &str) -> String {
    message
        .split('`')
        .enumerate()
        .map(|(n, part)| match part.parse::<f64>() {
            Ok(v) if n % 2 == 1 && part.len() > 24 => super::limits::shown(v),
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// A key given twice in a mapping at `path` (not the top): the diagnostic at the second, which
/// names the first's line. None when `message` is not about a duplicate key or the second is
/// not found.
fn nested_twice(text: &str, path: &str, message: &str) -> Option<Diagnostic> {
    let key = message
        .strip_prefix("duplicate field `")?
        .split('`')
        .next()?;
    if path.is_empty() {
        return None;
    }
    let full = format!("{path}.{key}");
    let ((first, _), second) = crate::formats::locate::locate_twice(text, &full)?;
    if second.0 == first {
        return None;
    }
    let mut d = Diagnostic::new(
        full,
        format!("the key `{key}` is given twice, here and at line {first}"),
    );
    d.at = Some(second);
    Some(d)
}

/// serde_yaml_ng places a duplicate key of the top-level mapping at the mapping's start (line 1).
/// A file's top-level keys in block style are lines that start with the key and a colon, so the
/// lines of both are the first two such lines. A flow collection or a quoted scalar continued at
/// column 0 with a line that looks like the key could move them; the message stays right. None
/// when the message is not about a duplicate or fewer than two such lines exist (a flow mapping
/// at the top).
fn top_level_twice(text: &str, message: &str) -> Option<String> {
    let key = message
        .strip_prefix("duplicate field `")?
        .split('`')
        .next()?;
    let lines: Vec<usize> = text
        .split('\n')
        .enumerate()
        .filter(|(_, row)| {
            [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
                .iter()
                .any(|k| {
                    row.strip_prefix(k.as_str())
                        .is_some_and(|r| r.trim_start().starts_with(':'))
                })
        })
        .map(|(n, _)| n + 1)
        .collect();
    match (lines.as_slice(), flow_keys(text, key).as_slice()) {
        ([first, second, ..], _) => Some(format!(
            "the key `{key}` is given twice, at line {first} and at line {second} column 1"
        )),
        (_, [(l1, _), (l2, c2), ..]) => Some(format!(
            "the key `{key}` is given twice, at line {l1} and at line {l2} column {c2}"
        )),
        _ => None,
    }
}

/// Where a top-level flow mapping (`{...}`, as JSON writes it) has the key `key`: the line and
/// column (1-based) of each `"key":` or `'key':` at depth one, outside other strings. None
/// unless the file's first character other than white space is `{` (comments are not read:
/// JSON has none).
fn flow_keys(text: &str, key: &str) -> Vec<(usize, usize)> {
    if !text.trim_start().starts_with('{') {
        return Vec::new();
    }
    let (mut found, mut depth) = (Vec::new(), 0usize);
    // The string being read: its quote, its text so far, where it opened, and an escape pending.
    let mut string: Option<(char, String, (usize, usize), bool)> = None;
    // A string that just closed at depth one: its text and where it opened.
    let mut closed: Option<(String, (usize, usize))> = None;
    for (line, row) in text.split('\n').enumerate() {
        for (col, c) in row.chars().enumerate() {
            if let Some((q, text, at, escaped)) = string.as_mut() {
                match c {
                    _ if *escaped => {
                        *escaped = false;
                        text.push(c);
                    }
                    '\\' if *q == '"' => *escaped = true,
                    _ if c == *q => {
                        closed = (depth == 1).then(|| (std::mem::take(text), *at));
                        string = None;
                    }
                    _ => text.push(c),
                }
                continue;
            }
            match c {
                ':' => {
                    if let Some((_, at)) = closed.take().filter(|(t, _)| t == key) {
                        found.push(at);
                    }
                }
                '"' | '\'' => string = Some((c, String::new(), (line + 1, col + 1), false)),
                _ if c.is_whitespace() => {}
                // Anything else between a string and a colon: the string was not a key.
                _ => {
                    closed = None;
                    match c {
                        '{' | '[' => depth += 1,
                        '}' | ']' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                }
            }
        }
    }
    found
}

/// The most `[` and `{` a file may nest (no format of absinthe's nests more than three): the
/// parser's time grows with the square of the depth, 7 s at 50,000.
pub const MAX_FLOW_DEPTH: usize = 64;

/// The first `[` or `{` nested deeper than [`MAX_FLOW_DEPTH`], or the first alias (`*name` where
/// a value starts, with an anchor `&name` in the file), as an error naming its line and column.
/// Brackets and aliases count as YAML reads them: not in comments, quoted strings (which open
/// only where a value starts, may span lines, and escape `\"` and `''`) or block scalars (`|`,
/// `>`). The parser bounds the aliases it follows, not what each expands to: a 1 MB file of
/// aliases of one long string would take gigabytes.
fn structure_error(text: &str) -> Option<Diagnostic> {
    let anchors = anchor_names(text);
    let (mut depth, mut quote, mut block) = (0usize, None::<char>, None::<usize>);
    for (line, row) in text.split('\n').enumerate() {
        let indent = row.len() - row.trim_start().len();
        match block {
            Some(i) if row.trim().is_empty() || indent > i => continue,
            _ => block = None,
        }
        let chars: Vec<char> = row.chars().collect();
        let mut last: Option<char> = None; // the last character that is not a space
        let mut c = 0;
        while c < chars.len() {
            let ch = chars[c];
            match (quote, ch) {
                (Some('"'), '\\') => c += 1,
                (Some('\''), '\'') if chars.get(c + 1) == Some(&'\'') => c += 1,
                (Some(q), ch) if ch == q => quote = None,
                (Some(_), _) => {}
                (None, '#') if c == 0 || chars[c - 1].is_whitespace() => break,
                (None, '"' | '\'') if opens_value(last, c.checked_sub(1).map(|p| chars[p])) => {
                    quote = Some(ch)
                }
                (None, '[' | '{') => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        let at = format!("line {} column {}", line + 1, c + 1);
                        let message =
                            format!("brackets nested more than {MAX_FLOW_DEPTH} deep at {at}");
                        return Some(Diagnostic::new("", message));
                    }
                }
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                (None, '*') if opens_value(last, c.checked_sub(1).map(|p| chars[p])) => {
                    let name: String = chars[c + 1..]
                        .iter()
                        .take_while(|ch| !ch.is_whitespace() && !",[]{}".contains(**ch))
                        .collect();
                    if anchors.contains(name.as_str()) {
                        let message = format!(
                            "the alias `*{name}` at line {} column {}: absinthe's files take no YAML aliases (an alias may expand a small file beyond any memory); write the value out",
                            line + 1,
                            c + 1
                        );
                        return Some(Diagnostic::new("", message));
                    }
                }
                (None, '!') if starts_node(&chars[..c], last, depth) => {
                    let tag: String = chars[c..]
                        .iter()
                        .take_while(|ch| !ch.is_whitespace() && !",[]{}".contains(**ch))
                        .collect();
                    let message = format!(
                        "the tag `{tag}` at line {} column {}: absinthe's files take no YAML tags (they would change what a value is read as, or be ignored); write the value plainly",
                        line + 1,
                        c + 1
                    );
                    return Some(Diagnostic::new("", message));
                }
                (None, '|' | '>') if depth == 0 && matches!(last, Some(':' | '-')) => {
                    block = Some(indent);
                    break;
                }
                _ => {}
            }
            if !ch.is_whitespace() {
                last = Some(ch);
            }
            c += 1;
        }
    }
    None
}

/// Every `&name` in `text`: the names an alias could refer to (a superset of the anchors, since
/// `&` also appears in comments and strings).
fn anchor_names(text: &str) -> std::collections::HashSet<&str> {
    let end_of_name = |c: char| c.is_whitespace() || ",[]{}".contains(c);
    text.match_indices('&')
        .map(|(at, _)| {
            let rest = &text[at + 1..];
            &rest[..rest.find(end_of_name).unwrap_or(rest.len())]
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// Whether a quote after `last` (the last non-space character before it on its line) and
/// `before` (the character right before it) starts a quoted scalar: at the line's start, after
/// `[`, `{` or `,`, or after `:`, `-` or `?` and a space.
/// Whether a character after `before` (its row so far) starts a YAML node, where a tag may
/// stand: after a mapping's `: `, a block sequence's `- ` that begins the row, or a flow
/// collection's `[`, `{` or `,`. Not at the start of a row (a plain scalar may go on there),
/// nor after a `-` or `,` inside a plain scalar (`1.0 - !m(i,j,k)`, `max(a, !b)`).
fn starts_node(before: &[char], last: Option<char>, depth: usize) -> bool {
    let spaced = before.last().is_some_and(|c| c.is_whitespace());
    match last {
        Some(':') => spaced,
        Some('-') => spaced && before.iter().all(|c| c.is_whitespace() || *c == '-'),
        Some('[' | '{' | ',') => depth > 0,
        _ => false,
    }
}

fn opens_value(last: Option<char>, before: Option<char>) -> bool {
    match last {
        None | Some('[' | '{' | ',') => true,
        Some(':' | '-' | '?') => before.is_some_and(char::is_whitespace),
        _ => false,
    }
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

/// Serializes to YAML text. A plain key or scalar that YAML 1.1 reads as a boolean (`on`,
/// `no`, ...; a stencil may be named so) is quoted, so that readers of YAML 1.1 such as PyYAML
/// read the name, as YAML 1.2 does.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, String> {
    let text = serde_yaml_ng::to_string(value).map_err(|e| e.to_string())?;
    Ok(quote_yaml11_booleans(&text))
}

/// The words YAML 1.1 (PyYAML's resolver) reads as booleans where YAML 1.2 reads strings.
const YAML11_BOOLEANS: [&str; 12] = [
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
];

/// `text` (serde_yaml_ng's block style) with each such plain word quoted where it is a whole
/// key (`on:`), a whole sequence item (`- on`) or a whole value (`: on`).
fn quote_yaml11_booleans(text: &str) -> String {
    let quoted = |w: &str| format!("'{w}'");
    let fix = |line: &str| -> Option<String> {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let (dash, rest) = match body.strip_prefix("- ") {
            Some(r) => ("- ", r),
            None => ("", body),
        };
        if YAML11_BOOLEANS.contains(&rest) {
            return Some(format!("{indent}{dash}{}", quoted(rest)));
        }
        let (key, value) = rest.split_once(':')?;
        if !(value.is_empty() || value.starts_with(' ')) {
            return None;
        }
        let key = if YAML11_BOOLEANS.contains(&key) {
            quoted(key)
        } else {
            key.to_string()
        };
        let v = value.trim_start();
        let value = if YAML11_BOOLEANS.contains(&v) {
            format!(" {}", quoted(v))
        } else {
            value.to_string()
        };
        Some(format!("{indent}{dash}{key}:{value}"))
    };
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let mut out = String::with_capacity(text.len());
    // Inside a block scalar (`|`, `>`): the indentation of the line that opened it.
    let mut block: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let (content, end) = line.strip_suffix('\n').map_or((line, ""), |c| (c, "\n"));
        if block.is_some_and(|b| content.trim().is_empty() || indent_of(content) > b) {
            out.push_str(line);
            continue;
        }
        block = None;
        let opener = content.trim_end();
        if ["|", "|-", "|+", ">", ">-", ">+"]
            .iter()
            .any(|b| opener.ends_with(&format!(" {b}")))
        {
            block = Some(indent_of(content));
        }
        match fix(content) {
            Some(fixed) => out.push_str(&fixed),
            None => out.push_str(content),
        }
        out.push_str(end);
    }
    out
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

/// `deserialize_with` for text, or lists of text (a command, its flags, a name): YAML reads
/// `null`, `~`, `true` and `3` as other types, and a lenient reader would turn them into the
/// words "null", "~", "true" and "3" (a compiler named `true` runs `/bin/true`). They are
/// refused; quoted, they are text.
pub fn text<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    fn check(v: &Value) -> Result<(), String> {
        let found = match v {
            Value::String(_) => return Ok(()),
            Value::Sequence(items) => return items.iter().try_for_each(check),
            Value::Null => "null (`~`, `null` or nothing)".to_string(),
            Value::Bool(b) => format!("the boolean {b}"),
            Value::Number(n) => format!("the number {n}"),
            Value::Mapping(_) => "a mapping".to_string(),
            Value::Tagged(_) => "a tagged value".to_string(),
        };
        Err(format!(
            "expected text, found {found}; quote it if it is meant as text"
        ))
    }
    let value = <Value as serde::Deserialize>::deserialize(de)?;
    check(&value).map_err(serde::de::Error::custom)?;
    T::deserialize(value).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words YAML 1.1 reads as booleans are quoted as keys, items and values; a block scalar's
    /// lines and every other word are left as written.
    #[test]
    fn yaml11_booleans_are_quoted() {
        let text = "stencils:\n  on:\n    group: 0\n  out: 1\ninline:\n- no\n- lap\nname: off\nnote: |-\n  on\n  no: x\nlast: yes\n";
        let want = "stencils:\n  'on':\n    group: 0\n  out: 1\ninline:\n- 'no'\n- lap\nname: 'off'\nnote: |-\n  on\n  no: x\nlast: 'yes'\n";
        assert_eq!(quote_yaml11_booleans(text), want);
        let v: Value = serde_yaml_ng::from_str(want).unwrap();
        assert!(v["stencils"].get("on").is_some());
    }
}
