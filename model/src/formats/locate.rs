//! Where a key path (`stencils[3].expr`, `domain[0]`) is in a YAML or JSON file's text: the
//! line and column a diagnostic points at. Found from the parser's events, one pass, no tree
//! built, so that a file nested a million deep costs no more than a flat one.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::Marker;

/// One step of a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of `path`: keys separated by `.`, indices in brackets. None where it is not a
/// key path (a message rather than a location).
fn steps(path: &str) -> Option<Vec<Step>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            if key.contains(|c: char| c.is_whitespace() || c == ']' || c == ':') {
                return None;
            }
            out.push(Step::Key(key.to_string()));
        } else if rest.is_empty() {
            return None;
        }
        while let Some(inner) = rest.strip_prefix('[') {
            let close = inner.find(']')?;
            out.push(Step::Index(inner[..close].parse().ok()?));
            rest = &inner[close + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A container the parser is inside.
enum Frame {
    /// A sequence and the index of its next item.
    Seq(usize),
    /// A mapping: the key of the value to come (and where the key is), or None when a key
    /// comes next.
    Map(Option<(Step, Marker)>),
}

/// Follows the parser's events, keeping the path of the node at hand, and remembers where the
/// longest prefix of the target path begins.
struct Finder<'a> {
    target: &'a [Step],
    frames: Vec<Frame>,
    /// How many frames' steps match the target so far (frames past a mismatch never match).
    matched: usize,
    best: Option<(usize, Marker)>,
    /// The best match is a mapping: its first key is where it is written (the parser marks a
    /// block mapping where its first value starts).
    at_first_key: bool,
    /// The scalar the whole target path names, and where it starts.
    value: Option<(Marker, String)>,
    /// Where the whole target path was last found (a key given twice: the second).
    last: Option<Marker>,
}

impl Finder<'_> {
    /// A node starts at `mark`: its step, and whether its path is a prefix of the target.
    fn node_starts(&mut self, mark: Marker) -> bool {
        let depth = self.frames.len();
        let (step, at) = match self.frames.last_mut() {
            None => return true,
            Some(Frame::Seq(next)) => {
                *next += 1;
                (Step::Index(*next - 1), mark)
            }
            Some(Frame::Map(pending)) => match pending.take() {
                Some((key, key_mark)) => (key, key_mark),
                None => return false, // a key; handled by the scalar case
            },
        };
        let on_path = self.matched == depth && self.target.get(depth - 1) == Some(&step);
        if on_path && self.best.is_none_or(|(d, _)| d < depth) {
            self.best = Some((depth, at));
        }
        if on_path && depth == self.target.len() {
            self.last = Some(at);
        }
        on_path
    }

    fn enter(&mut self, frame: Frame, on_path: bool) {
        if on_path && self.matched == self.frames.len() {
            self.matched += 1;
        }
        self.frames.push(frame);
    }

    fn leave(&mut self) {
        self.frames.pop();
        self.matched = self.matched.min(self.frames.len());
    }

    fn event(&mut self, ev: Event, mark: Marker) {
        let key_next = matches!(self.frames.last(), Some(Frame::Map(None)));
        match ev {
            Event::Scalar(text, ..) if key_next => {
                if std::mem::take(&mut self.at_first_key) {
                    self.best = self.best.map(|(d, _)| (d, mark));
                }
                if let Some(Frame::Map(pending)) = self.frames.last_mut() {
                    *pending = Some((Step::Key(text), mark));
                }
            }
            Event::Scalar(text, ..) => {
                let on_path = self.node_starts(mark);
                if on_path && self.frames.len() == self.target.len() {
                    self.value = Some((mark, text));
                }
            }
            Event::Alias(_) => {
                self.node_starts(mark);
            }
            Event::SequenceStart(..) => {
                let on_path = !key_next && self.node_starts(mark);
                self.enter(Frame::Seq(0), on_path);
            }
            Event::MappingStart(..) => {
                let on_path = !key_next && self.node_starts(mark);
                let seq_item = matches!(self.frames.last(), Some(Frame::Seq(_)));
                self.at_first_key = on_path && seq_item;
                self.enter(Frame::Map(None), on_path);
            }
            Event::SequenceEnd | Event::MappingEnd => self.leave(),
            _ => {}
        }
    }
}

/// The 1-based line and column where the value at `path` is written in `text` (for a key of a
/// mapping, where the key is), or of the longest prefix of `path` the text has (the entry a
/// missing key belongs to). None where `path` is not a key path, nothing of it is in the text,
/// or the text does not parse.
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let text = without_bom(text);
    let target = steps(path)?;
    let finder = find(text, &target);
    finder.best.map(|(_, m)| (m.line(), m.col() + 1))
}

/// Where `path` is written the first and the last time (a key given twice), 1-based; None
/// unless the whole path is in the text.
pub fn locate_twice(text: &str, path: &str) -> Option<((usize, usize), (usize, usize))> {
    let text = without_bom(text);
    let target = steps(path)?;
    let finder = find(text, &target);
    let (depth, first) = finder.best?;
    let last = finder.last.filter(|_| depth == target.len())?;
    Some((
        (first.line(), first.col() + 1),
        (last.line(), last.col() + 1),
    ))
}

/// The 1-based line and column of the character `offset` characters into the scalar at
/// `path`, where the file writes that scalar on one line as it reads (plain, or quoted without
/// escapes before the offset); else what [`locate`] finds.
pub fn locate_in_value(text: &str, path: &str, offset: usize) -> Option<(usize, usize)> {
    let text = without_bom(text);
    let target = steps(path)?;
    let finder = find(text, &target);
    if let Some((mark, value)) = &finder.value {
        // The marker counts characters; a byte order mark or any other character of several
        // bytes before the value makes that differ from the byte offset.
        let byte = text
            .char_indices()
            .nth(mark.index())
            .map_or(text.len(), |(b, _)| b);
        let source = text.get(byte..).unwrap_or("");
        let quoted = source.starts_with(['"', '\'']);
        let source = if quoted { &source[1..] } else { source };
        let head: String = value.chars().take(offset).collect();
        if head.chars().count() == offset && source.starts_with(&head) && !head.contains('\n') {
            return Some((mark.line(), mark.col() + 1 + usize::from(quoted) + offset));
        }
    }
    finder.best.map(|(_, m)| (m.line(), m.col() + 1))
}

/// `text` without a leading byte order mark, which the readers skip and the event parser does
/// not: an editor shows no column for it.
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

fn find<'a>(text: &str, target: &'a [Step]) -> Finder<'a> {
    let mut finder = Finder {
        target,
        frames: Vec::new(),
        matched: 0,
        best: None,
        at_first_key: false,
        value: None,
        last: None,
    };
    // Event by event (the parser's own `load` recurses into nested collections): a parse
    // error ends the search, and what was found before it stands.
    let mut parser = Parser::new_from_str(text);
    while let Ok((ev, mark)) = parser.next_token() {
        if matches!(ev, Event::StreamEnd | Event::DocumentEnd) {
            break;
        }
        finder.event(ev, mark);
    }
    finder
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = "name: p\ndomain: [8, 8, 4]\nstencils:\n  - name: a\n    expr: in(i,j,k)\n  - name: b\n    expr: a(i,j,k)\n";

    #[test]
    fn keys_and_indices_are_found() {
        assert_eq!(locate(PROGRAM, "name"), Some((1, 1)));
        assert_eq!(locate(PROGRAM, "domain"), Some((2, 1)));
        assert_eq!(locate(PROGRAM, "domain[0]"), Some((2, 10)));
        assert_eq!(locate(PROGRAM, "domain[2]"), Some((2, 16)));
        assert_eq!(locate(PROGRAM, "stencils[1].expr"), Some((7, 5)));
        assert_eq!(locate(PROGRAM, "stencils[1]"), Some((6, 5)));
    }

    #[test]
    fn a_missing_key_points_at_its_entry() {
        assert_eq!(locate(PROGRAM, "stencils[1].let"), Some((6, 5)));
        assert_eq!(locate(PROGRAM, "stencils[7].expr"), Some((3, 1)));
        assert_eq!(locate(PROGRAM, "halo"), None);
    }

    #[test]
    fn a_column_inside_an_expression_is_found() {
        assert_eq!(
            locate_in_value(PROGRAM, "stencils[1].expr", 2),
            Some((7, 13))
        );
        let quoted = "stencils:\n  - expr: \"a + b\"\n";
        assert_eq!(
            locate_in_value(quoted, "stencils[0].expr", 4),
            Some((2, 16))
        );
        let folded = "stencils:\n  - expr: >\n      a +\n      b\n";
        assert_eq!(locate_in_value(folded, "stencils[0].expr", 4), Some((2, 5)));
        // Characters of several bytes before the value (a byte order mark, a comment).
        for wide in [
            "# Über 𝛼\nstencils:\n  - expr: a + b\n",
            "\u{feff}stencils:\n  - expr: a + b\n",
            "\u{feff}# Über 𝛼\nstencils:\n  - expr: a + b\n",
        ] {
            let line = wide.lines().position(|l| l.contains("expr")).unwrap() + 1;
            assert_eq!(
                locate_in_value(wide, "stencils[0].expr", 4),
                Some((line, 15)),
                "{wide:?}"
            );
        }
    }

    #[test]
    fn json_and_flow_style_are_found() {
        let json = "{\"name\": \"p\",\n \"groups\": [{\"tiles\": [1, 2, 3]}]}";
        assert_eq!(locate(json, "groups[0].tiles[1]"), Some((2, 27)));
    }

    #[test]
    fn messages_and_bad_text_find_nothing() {
        assert_eq!(locate(PROGRAM, "variant groups:0,1"), None);
        assert_eq!(locate(PROGRAM, ""), None);
        assert_eq!(locate(PROGRAM, "domain[x]"), None);
        assert_eq!(locate("a: [", "a[0]"), Some((1, 1)));
        let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(locate(&deep, "a"), None);
    }
}
