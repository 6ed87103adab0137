//! The shape of the code, measured: import cycles between a crate's modules, command modules
//! that import one another, production functions over 100 lines, files over 800, and the size of
//! the binary. Each known offender is listed below; the test fails when a new one appears, and
//! when a listed one is gone (so that the list only shrinks and stays true).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::root;

/// Production functions over 100 lines: `path::name`.
const KNOWN_LONG_FUNCTIONS: &[&str] = &[];

/// Production files over 800 lines (their test modules not counted).
const KNOWN_LONG_FILES: &[&str] = &[];

/// Import cycles: the modules of one strongly connected component, sorted, joined by ` <-> `.
const KNOWN_CYCLES: &[&str] = &[];

/// Command modules of the binary that import another command module.
const KNOWN_COMMAND_IMPORTS: &[&str] = &[];

/// The binary's command modules (one per subcommand); the others are shared helpers.
const COMMANDS: &[&str] = &[
    "bench",
    "check",
    "codegen_cmd",
    "compare",
    "learn_cmd",
    "solve",
    "tune",
    "verify",
];

/// The crates: name and source root.
const CRATES: &[(&str, &str)] = &[
    ("absinthe", "src"),
    ("model", "model/src"),
    ("codegen", "codegen/src"),
    ("solvers", "solvers/src"),
    ("cache", "cache/src"),
    ("measure", "measure/src"),
    ("learn", "learn/src"),
];

/// Every production `.rs` file under `dir` (test modules and the fuzz suite excluded).
fn production_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".rs")
                && !["tests.rs", "fuzz.rs", "testing.rs"].contains(&name.as_str())
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The source with comments, string and character literals blanked (newlines kept), and the
/// trailing `#[cfg(test)] mod tests` cut.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            while i < b.len() && !(b[i] == '*' && b.get(i + 1) == Some(&'/')) {
                out.push(blank(b[i]));
                i += 1;
            }
            i += 2;
        } else if c == '"' || (c == 'r' && (next == Some('"') || next == Some('#'))) {
            // A string or raw string: up to its closing quote (and hashes).
            let mut hashes = 0;
            if c == 'r' {
                i += 1;
                while b.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                if b.get(i) != Some(&'"') {
                    out.push('r');
                    continue;
                }
            }
            i += 1;
            while i < b.len() {
                if c != 'r' && b[i] == '\\' {
                    i += 2;
                    continue;
                }
                if b[i] == '"' && (0..hashes).all(|h| b.get(i + 1 + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(b[i]));
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || b.get(i + 2) == Some(&'\'')) {
            // A character literal (a lifetime has no closing quote two places on).
            i += 1;
            while i < b.len() && b[i] != '\'' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `(name, lines)` of every function with a body.
fn functions(code: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "fn") else {
            continue;
        };
        let Some(name) = words.get(at + 1).map(|w| {
            w.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")
        }) else {
            continue;
        };
        let mut depth = 0i64;
        let mut opened = false;
        for (end, l) in lines.iter().enumerate().skip(start) {
            if !opened && l.trim_end().ends_with(';') && !l.contains('{') {
                break; // a declaration without a body
            }
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            opened |= l.contains('{');
            if opened && depth <= 0 {
                out.push((name.to_string(), end - start + 1));
                break;
            }
        }
    }
    out
}

/// The module of `file` inside its crate: the group (`formats`, `language`, ...) for the model,
/// the file's top-level module elsewhere.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// A crate's root names and the top-level module each comes from: its modules (`mod x`), and
/// what `pub use` re-exports from them (the model's `cost`, `milp`, `Analysis`, codegen's
/// `Schedule`, ...).
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for line in lib.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(at) = words.iter().position(|w| *w == "mod") {
            if line.starts_with("mod ") || line.starts_with("pub mod ") {
                let m = words[at + 1].trim_end_matches([';', '{']).to_string();
                names.insert(m.clone(), m);
            }
        }
    }
    // Two passes: module re-exports first, then names re-exported from them.
    for _ in 0..2 {
        for line in lib.lines().filter(|l| l.starts_with("pub use ")) {
            let body = line.trim_start_matches("pub use ").trim_end_matches(';');
            let (head, rest) = body.split_once("::").unwrap_or((body, ""));
            let Some(module) = names.get(head).cloned() else {
                continue;
            };
            let listed: Vec<&str> = if let Some((_, alias)) = rest.split_once(" as ") {
                vec![alias]
            } else if rest.starts_with('{') {
                rest.trim_matches(|c| c == '{' || c == '}')
                    .split(',')
                    .collect()
            } else {
                vec![rest.rsplit("::").next().unwrap_or(rest)]
            };
            for n in listed {
                names.insert(n.trim().to_string(), module.clone());
            }
        }
    }
    names
}

/// The modules `code` names through `crate::` paths (`crate::x::...`, `crate::{x, y}`).
fn crate_references(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        // Not `absinthe_crate::` and the like.
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(inner) = rest.strip_prefix('{') {
            let inner = &inner[..inner.find('}').unwrap_or(inner.len())];
            for part in inner.split(',') {
                let name = part.trim().split("::").next().unwrap_or("").trim();
                if !name.is_empty() {
                    out.insert(name.to_string());
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    out
}

/// The strongly connected components of more than one module (Tarjan's algorithm would do; at
/// a few dozen modules, reachability both ways is enough).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(m) = stack.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    stack.push(n.clone());
                }
            }
        }
        seen
    };
    let mut components: BTreeSet<Vec<String>> = BTreeSet::new();
    for m in edges.keys() {
        let mut component: Vec<String> = reach(m)
            .into_iter()
            .filter(|n| n != m && reach(n).contains(m))
            .collect();
        if !component.is_empty() {
            component.push(m.clone());
            component.sort();
            components.insert(component);
        }
    }
    components.into_iter().collect()
}

/// Fails with what differs between `found` and `known`.
fn compare(what: &str, found: BTreeSet<String>, known: &[&str]) -> Vec<String> {
    let known: BTreeSet<String> = known.iter().map(|s| s.to_string()).collect();
    let mut problems = Vec::new();
    for new in found.difference(&known) {
        problems.push(format!("new {what}: {new}"));
    }
    for gone in known.difference(&found) {
        problems.push(format!(
            "{what} no longer found (remove it from the list in tests/architecture.rs): {gone}"
        ));
    }
    problems
}

#[test]
fn code_shape_does_not_get_worse() {
    let root = root();
    let (mut long_functions, mut long_files, mut found_cycles, mut command_imports) = (
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
    );
    for &(krate, dir) in CRATES {
        let src = root.join(dir);
        let lib = if krate == "absinthe" {
            "main.rs"
        } else {
            "lib.rs"
        };
        let aliases = root_names(&std::fs::read_to_string(src.join(lib)).unwrap());
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in production_files(&src) {
            let rel = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            let code = code_of(&std::fs::read_to_string(&file).unwrap());
            if code.lines().count() > 800 {
                long_files.insert(rel.clone());
            }
            for (name, lines) in functions(&code) {
                if lines > 100 {
                    long_functions.insert(format!("{rel}::{name}"));
                }
            }
            let module = module_of(&src, &file);
            if module == "lib" || module == "main" {
                continue;
            }
            for r in crate_references(&code) {
                // A name defined in the crate root itself (an error type) is no module.
                let Some(target) = aliases.get(&r).cloned() else {
                    continue;
                };
                if target != module {
                    edges
                        .entry(module.clone())
                        .or_default()
                        .insert(target.clone());
                }
                if krate == "absinthe"
                    && COMMANDS.contains(&module.as_str())
                    && COMMANDS.contains(&target.as_str())
                    && target != module
                {
                    command_imports.insert(format!("{module} -> {target}"));
                }
            }
        }
        for c in cycles(&edges) {
            found_cycles.insert(format!("{krate}: {}", c.join(" <-> ")));
        }
    }
    let mut problems = compare(
        "function over 100 lines",
        long_functions,
        KNOWN_LONG_FUNCTIONS,
    );
    problems.extend(compare("file over 800 lines", long_files, KNOWN_LONG_FILES));
    problems.extend(compare("import cycle", found_cycles, KNOWN_CYCLES));
    problems.extend(compare(
        "command importing a command",
        command_imports,
        KNOWN_COMMAND_IMPORTS,
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The measuring tools of the test above, on code whose answers are known.
#[test]
fn the_measures_measure() {
    let code = code_of(
        "fn a() {\n    let s = \"}}}\";\n    // }\n    let c = '}';\n}\nfn b(x: u8) -> u8;\n#[cfg(test)]\nmod tests {\n fn t() {}\n}\n",
    );
    assert_eq!(functions(&code), vec![("a".to_string(), 5)]);
    let refs = crate_references("use crate::{a::x, b};\nlet y = crate::c::f();\nabsinthe_crate::d");
    assert_eq!(
        refs,
        ["a", "b", "c"].iter().map(|s| s.to_string()).collect()
    );
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("x", "y"), ("y", "z"), ("z", "x"), ("z", "w")] {
        edges.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(
        cycles(&edges),
        vec![vec!["x".to_string(), "y".into(), "z".into()]]
    );
    let aliases = root_names("pub mod cost_model {\n    pub mod evaluate;\n}\npub mod formats {\n}\npub use cost_model::evaluate as cost;\npub use formats::{program, yaml};\npub use program::Program;\n");
    assert_eq!(aliases["cost"], "cost_model");
    assert_eq!(aliases["yaml"], "formats");
    assert_eq!(aliases["Program"], "formats");
}

/// Every library's `lib.rs` re-exports items under their own names, never a module: no short
/// path hides which group a module lives in, and nothing is renamed.
#[test]
fn lib_rs_re_exports_no_module_and_renames_nothing() {
    let root = root();
    let mut problems = Vec::new();
    for &(krate, dir) in CRATES.iter().filter(|(k, _)| *k != "absinthe") {
        let src = root.join(dir);
        let modules: BTreeSet<String> = production_files(&src)
            .iter()
            .filter_map(|f| f.strip_prefix(&src).ok())
            .flat_map(|rel| {
                rel.iter()
                    .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        let code = code_of(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
        for statement in code.split(';').map(str::trim) {
            let Some(body) = statement.strip_prefix("pub use ") else {
                continue;
            };
            let names: Vec<&str> = match body.split_once('{') {
                Some((_, list)) => list.trim_end_matches('}').split(',').collect(),
                None => vec![body.rsplit("::").next().unwrap_or(body)],
            };
            for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                if name.contains(" as ") || modules.contains(name) {
                    problems.push(format!("{krate}: `pub use {body}` re-exports `{name}`"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The binary's code lines: comments, argument docs (the `--help` text, which is the binary's
/// own job) and blank lines not counted.
const BINARY_LINES: usize = 1400;

/// The binary parses arguments and prints what the libraries render: its code stays under
/// [`BINARY_LINES`] lines, so that the work lives where a library user (the Python package, a
/// test) can call it.
#[test]
fn the_binary_only_parses_and_prints() {
    let src = root().join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let code = |text: String| {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .count()
    };
    let lines: usize = files
        .iter()
        .map(|f| code(std::fs::read_to_string(f).unwrap()))
        .sum();
    assert!(
        lines < BINARY_LINES,
        "src/ has {lines} lines of code in {} files; it keeps argument parsing and printing only, under {BINARY_LINES}",
        files.len()
    );
}
