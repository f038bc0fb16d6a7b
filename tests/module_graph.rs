//! The crate's module graph runs one way, down the pipeline (README.md, "Layout"), and no file
//! depends on itself through other files.
//!
//! Every path the code of a file in `src/` names — `use` trees (multi-line groups included) and
//! paths in expressions and types — that starts at `crate::`, `super::`, `self::` or a module the
//! file declares is resolved to the file defining the longest module prefix of that path (a path
//! through a re-export counts for the file that re-exports it). Two graphs come from that:
//! - between top-level modules: each edge must be one [`ALLOWED`] lists, and [`ALLOWED`] itself
//!   must be acyclic, so a new dependency is a deliberate one-line change here that this test
//!   refuses if it closes a loop;
//! - between files: no cycle anywhere in `src/`.
//!   A file reading one of its ancestors (a submodule's `super::Error`) is not an edge: the
//!   ancestor declares the file, so the two are one unit already.
//!
//! Comments, string and character literals are skipped; `main.rs` (the binary crate) is not read.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module and the modules it may use. Leaves first, `cli` last.
const ALLOWED: &[(&str, &[&str])] = &[
    // Shared leaf helpers at crate level.
    ("json", &[]),
    ("pyjson", &["json"]),
    ("completion", &[]),
    // Prompts from dataset files (prompt ids hash canonical JSON).
    ("dataset", &["pyjson"]),
    // Tokenizers, templates, one file per family.
    ("model", &["completion", "json", "pyjson"]),
    // Wire types, transport, error classes; a request body is built from a `Prompt`.
    ("api", &["completion", "dataset"]),
    // Server shapes as data, read forward and backward.
    ("server", &["api", "completion", "model", "pyjson"]),
    // The run directory: plain records (the manifest, the journal lines) of what a run did.
    ("journal", &["api", "dataset"]),
    // Answers back to ids; a run's recorded servers become options (reconstruct/from_run.rs).
    (
        "reconstruct",
        &["api", "completion", "journal", "model", "pyjson", "server"],
    ),
    ("config", &["api", "journal"]),
    (
        "engine",
        &["api", "completion", "config", "dataset", "journal"],
    ),
    // Trainer files from a build (the conversation export reads the run's journal lines).
    ("export", &["build", "completion", "journal"]),
    (
        "sim",
        &["api", "completion", "dataset", "model", "pyjson", "server"],
    ),
    (
        "build",
        &[
            "api",
            "completion",
            "dataset",
            "journal",
            "model",
            "reconstruct",
        ],
    ),
    // Which server shape a provider answers with, before a run.
    (
        "probe",
        &[
            "api",
            "completion",
            "dataset",
            "engine",
            "model",
            "pyjson",
            "reconstruct",
            "server",
        ],
    ),
    // Trust in a run: fidelity, reference ids, usage, the tool-call audit, the report.
    (
        "verify",
        &[
            "api",
            "build",
            "completion",
            "dataset",
            "journal",
            "json",
            "model",
            "reconstruct",
            "server",
        ],
    ),
    (
        "cli",
        &[
            "api",
            "build",
            "completion",
            "config",
            "dataset",
            "engine",
            "export",
            "journal",
            "json",
            "model",
            "probe",
            "pyjson",
            "reconstruct",
            "server",
            "sim",
            "verify",
        ],
    ),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/`: `lib.rs` → `[]`, `a/mod.rs` and `a.rs` → `[a]`,
/// `a/b.rs` → `[a, b]`; `None` for `main.rs`.
fn module_of(relative: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    match (parts.is_empty(), stem) {
        (true, "lib") => Some(Vec::new()),
        (true, "main") => None,
        (_, "mod") => Some(parts),
        _ => {
            parts.push(stem.to_string());
            Some(parts)
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other(char),
}

/// The tokens of `text` with their 1-based line, comments and literals left out.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |k: usize| chars.get(k).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if at(i + 1) == '/' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(chars[i] == '\n');
                        i += 1;
                    }
                }
            }
            '"' => i = skip_string(&chars, i + 1, &mut line),
            '\'' => {
                // A character literal ('a', '\n', '\u{1F}'), else a lifetime or label.
                if at(i + 1) == '\\' {
                    i += 2;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if at(i + 2) == '\'' {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let raw_string = matches!(word.as_str(), "r" | "br" | "b")
                    && (at(i) == '"'
                        || (word != "b" && at(i) == '#' && {
                            let mut k = i;
                            while at(k) == '#' {
                                k += 1;
                            }
                            at(k) == '"'
                        }));
                if raw_string {
                    i = skip_raw_string(&chars, i, word != "b", &mut line);
                } else if word == "r" && at(i) == '#' {
                    i += 1; // a raw identifier: `r#type` is the identifier that follows
                } else {
                    out.push((Tok::Ident(word), line));
                }
            }
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            ':' if at(i + 1) == ':' => {
                out.push((Tok::PathSep, line));
                i += 2;
            }
            _ => {
                out.push((
                    match c {
                        '{' => Tok::Open,
                        '}' => Tok::Close,
                        ',' => Tok::Comma,
                        ';' => Tok::Semi,
                        '*' => Tok::Star,
                        c => Tok::Other(c),
                    },
                    line,
                ));
                i += 1;
            }
        }
    }
    out
}

/// Past a `"…"` string whose body starts at `i`.
fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

/// Past a raw (`r#"…"#`) or byte (`b"…"`) string whose hashes or quote start at `i`.
fn skip_raw_string(chars: &[char], mut i: usize, raw: bool, line: &mut usize) -> usize {
    if !raw {
        return skip_string(chars, i + 1, line);
    }
    let mut hashes = 0;
    while chars.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1; // the opening quote
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        *line += usize::from(chars[i] == '\n');
        i += 1;
    }
    i
}

/// A path named in a file: its segments, the inline modules it was written in, and its line.
#[derive(Debug, Clone, PartialEq)]
struct NamedPath {
    segments: Vec<String>,
    inline: Vec<String>,
    line: usize,
}

/// Every path of a `use` tree starting at `toks[*i]`, under `prefix` (groups nest).
fn use_tree(
    toks: &[(Tok, usize)],
    i: &mut usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, usize)>,
) {
    let mut path = prefix.to_vec();
    while let Some((tok, line)) = toks.get(*i) {
        match tok {
            Tok::Ident(name) => {
                // `{self, x}` names the prefix itself.
                if name != "self" || path.is_empty() {
                    path.push(name.clone());
                }
                *i += 1;
                match toks.get(*i).map(|t| &t.0) {
                    Some(Tok::PathSep) => *i += 1,
                    Some(Tok::Ident(word)) if word == "as" => {
                        *i += 2;
                        out.push((path, *line));
                        return;
                    }
                    _ => {
                        out.push((path, *line));
                        return;
                    }
                }
            }
            Tok::PathSep => *i += 1,
            Tok::Star => {
                *i += 1;
                out.push((path, *line));
                return;
            }
            Tok::Open => {
                *i += 1;
                while let Some((tok, _)) = toks.get(*i) {
                    match tok {
                        Tok::Close => {
                            *i += 1;
                            return;
                        }
                        Tok::Comma => *i += 1,
                        _ => use_tree(toks, i, &path, out),
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

/// The modules a file declares at its top level (`mod a;`, `pub mod b { … }`).
fn declared_modules(toks: &[(Tok, usize)]) -> BTreeSet<String> {
    let mut depth = 0usize;
    let mut declared = BTreeSet::new();
    for (k, (tok, _)) in toks.iter().enumerate() {
        match tok {
            Tok::Open => depth += 1,
            Tok::Close => depth = depth.saturating_sub(1),
            Tok::Ident(word) if word == "mod" && depth == 0 => {
                if let Some((Tok::Ident(name), _)) = toks.get(k + 1) {
                    declared.insert(name.clone());
                }
            }
            _ => {}
        }
    }
    declared
}

/// Every path in the code of `text` that starts at `crate`, `super`, `self` or a module the file
/// declares, with the inline modules (`mod tests { … }`) it sits in.
fn named_paths(text: &str) -> Vec<NamedPath> {
    let toks = tokens(text);
    let declared = declared_modules(&toks);
    let mut out = Vec::new();
    // Inline modules open around the current token: name and the brace depth inside it.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut k = 0;
    while k < toks.len() {
        let (tok, line) = &toks[k];
        match tok {
            Tok::Open => depth += 1,
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(word) if word == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Open, _))) =
                    (toks.get(k + 1), toks.get(k + 2))
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Tok::Ident(word) if word == "use" => {
                let mut trees = Vec::new();
                k += 1;
                use_tree(&toks, &mut k, &[], &mut trees);
                let names: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
                for (segments, line) in trees {
                    out.push(NamedPath {
                        segments,
                        inline: names.clone(),
                        line,
                    });
                }
                continue;
            }
            Tok::Ident(first) => {
                let starts_path = matches!(toks.get(k + 1), Some((Tok::PathSep, _)))
                    && !matches!(k.checked_sub(1).map(|p| &toks[p].0), Some(Tok::PathSep));
                let rooted = matches!(first.as_str(), "crate" | "super" | "self")
                    || (inline.is_empty() && declared.contains(first));
                if starts_path && rooted {
                    let mut segments = vec![first.clone()];
                    let mut next = k + 1;
                    while let (Some((Tok::PathSep, _)), Some((Tok::Ident(name), _))) =
                        (toks.get(next), toks.get(next + 1))
                    {
                        segments.push(name.clone());
                        next += 2;
                    }
                    out.push(NamedPath {
                        segments,
                        inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                        line: *line,
                    });
                    k = next;
                    continue;
                }
            }
            _ => {}
        }
        k += 1;
    }
    out
}

/// The absolute module path `path` names from module `module` (a file's module plus the inline
/// modules around the path), or `None` when it leaves the crate (an external crate's path).
fn absolute(
    module: &[String],
    path: &NamedPath,
    declared: &BTreeSet<String>,
) -> Option<Vec<String>> {
    let mut here: Vec<String> = module.iter().chain(&path.inline).cloned().collect();
    let mut segments = path.segments.iter().peekable();
    match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            here.clear();
            segments.next();
        }
        Some("self") => {
            segments.next();
        }
        Some("super") => {
            while segments.peek().is_some_and(|s| *s == "super") {
                segments.next();
                here.pop()?;
            }
        }
        Some(first) if path.inline.is_empty() && declared.contains(first) => {}
        _ => return None,
    }
    here.extend(segments.cloned());
    Some(here)
}

/// The file defining the longest module prefix of `path`.
fn file_of<'a>(path: &[String], files: &'a BTreeMap<Vec<String>, String>) -> Option<&'a String> {
    (0..=path.len()).rev().find_map(|n| files.get(&path[..n]))
}

/// What the code of `src/` names, resolved: (file, its module, absolute path, `file:line`).
struct Uses {
    files: BTreeMap<Vec<String>, String>,
    uses: Vec<(String, Vec<String>, Vec<String>, String)>,
}

fn uses() -> Uses {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let mut files = BTreeMap::new();
    let mut texts = Vec::new();
    for path in paths {
        let relative = path.strip_prefix(&src).expect("under src").to_path_buf();
        let Some(module) = module_of(&relative) else {
            continue;
        };
        let shown = format!("src/{}", relative.display());
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{shown}: {e}"));
        files.insert(module.clone(), shown.clone());
        texts.push((shown, module, text));
    }
    let mut uses = Vec::new();
    for (shown, module, text) in texts {
        let declared = declared_modules(&tokens(&text));
        for path in named_paths(&text) {
            if let Some(absolute) = absolute(&module, &path, &declared) {
                let at = format!("{shown}:{}", path.line);
                uses.push((shown.clone(), module.clone(), absolute, at));
            }
        }
    }
    Uses { files, uses }
}

/// module → used module → the first `file:line` that uses it.
fn module_edges(uses: &Uses) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (_, module, absolute, at) in &uses.uses {
        let (Some(from), Some(to)) = (module.first(), absolute.first()) else {
            continue;
        };
        if from != to {
            edges
                .entry(from.clone())
                .or_default()
                .entry(to.clone())
                .or_insert_with(|| at.clone());
        }
    }
    edges
}

/// file → used file → the first `file:line` that uses it; a file's ancestors are left out.
fn file_edges(uses: &Uses) -> BTreeMap<String, BTreeMap<String, String>> {
    let module_of_file: BTreeMap<&String, &Vec<String>> =
        uses.files.iter().map(|(m, f)| (f, m)).collect();
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (file, module, absolute, at) in &uses.uses {
        let Some(target) = file_of(absolute, &uses.files) else {
            continue;
        };
        let target_module = module_of_file[target];
        if target == file || module.starts_with(target_module) {
            continue;
        }
        edges
            .entry(file.clone())
            .or_default()
            .entry(target.clone())
            .or_insert_with(|| at.clone());
    }
    edges
}

fn allowed() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    ALLOWED
        .iter()
        .map(|(module, uses)| (*module, uses.iter().copied().collect()))
        .collect()
}

/// A cycle through `graph`, if there is one (depth-first search with colours).
fn find_cycle(graph: &BTreeMap<&str, BTreeSet<&str>>) -> Option<Vec<String>> {
    fn visit<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        done: &mut BTreeSet<&'a str>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut cycle: Vec<String> = path[at..].iter().map(|n| n.to_string()).collect();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

/// The strongly connected components of `graph` with more than one node, each sorted.
fn cyclic_components(graph: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<Vec<String>> {
    // Two nodes are in one component when each reaches the other.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(node) = stack.pop() {
            for next in graph.get(node).into_iter().flatten() {
                if seen.insert(*next) {
                    stack.push(next);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, BTreeSet<&str>> =
        graph.keys().map(|node| (*node, reach(node))).collect();
    let mut placed: BTreeSet<String> = BTreeSet::new();
    let mut components = Vec::new();
    for (node, reached) in &reaches {
        if placed.contains(*node) || !reached.contains(node) {
            continue;
        }
        let component: Vec<String> = reached
            .iter()
            .filter(|other| reaches.get(*other).is_some_and(|r| r.contains(node)))
            .map(|n| n.to_string())
            .collect();
        placed.extend(component.iter().cloned());
        if component.len() > 1 {
            components.push(component);
        }
    }
    components
}

#[test]
fn every_dependency_between_modules_is_an_allowed_one() {
    let allowed = allowed();
    let mut refused = Vec::new();
    for (from, uses) in module_edges(&uses()) {
        for (to, at) in uses {
            if !allowed
                .get(from.as_str())
                .is_some_and(|a| a.contains(to.as_str()))
            {
                refused.push(format!("{from} → {to} ({at})"));
            }
        }
    }
    assert!(
        refused.is_empty(),
        "dependencies that are not in ALLOWED (tests/module_graph.rs; README.md's Layout):\n  {}",
        refused.join("\n  ")
    );
}

#[test]
fn the_allowed_order_has_no_cycle() {
    if let Some(cycle) = find_cycle(&allowed()) {
        panic!("ALLOWED has a cycle: {}", cycle.join(" → "));
    }
}

#[test]
fn every_top_level_module_has_a_place_in_the_order() {
    let lib = fs::read_to_string(src_dir().join("lib.rs")).expect("src/lib.rs");
    let declared: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .chain(lib.lines().filter_map(|l| l.trim().strip_prefix("mod ")))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let placed: BTreeSet<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    assert_eq!(declared, placed, "src/lib.rs's modules vs ALLOWED");
    for (module, uses) in ALLOWED {
        for used in *uses {
            assert!(
                placed.contains(used),
                "{module} uses {used}, which is not a module"
            );
        }
    }
}

#[test]
fn no_file_depends_on_itself() {
    let edges = file_edges(&uses());
    let graph: BTreeMap<&str, BTreeSet<&str>> = edges
        .iter()
        .map(|(from, to)| (from.as_str(), to.keys().map(String::as_str).collect()))
        .collect();
    let found = cyclic_components(&graph);
    let mut problems = Vec::new();
    for component in &found {
        let inside: BTreeMap<&str, BTreeSet<&str>> = component
            .iter()
            .map(|file| {
                let to = graph[file.as_str()]
                    .iter()
                    .copied()
                    .filter(|t| component.iter().any(|c| c == t))
                    .collect();
                (file.as_str(), to)
            })
            .collect();
        let cycle = find_cycle(&inside).unwrap_or_default();
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|pair| format!("{} → {} ({})", pair[0], pair[1], edges[&pair[0]][&pair[1]]))
            .collect();
        problems.push(format!(
            "a file-level cycle among {}:\n    {}",
            component.join(", "),
            steps.join("\n    ")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n  "));
}

/// The top-level modules `text` names through `crate::`.
fn crate_modules(text: &str) -> Vec<String> {
    named_paths(text)
        .iter()
        .filter_map(|p| absolute(&["x".to_string()], p, &BTreeSet::new()))
        .filter_map(|a| a.first().cloned())
        .filter(|m| m != "x")
        .collect()
}

#[test]
fn the_cycle_finder_finds_the_old_cycle() {
    // model → api → journal → dataset → model.
    let graph: BTreeMap<&str, BTreeSet<&str>> = [
        ("model", ["api"].into()),
        ("api", ["journal"].into()),
        ("journal", ["dataset"].into()),
        ("dataset", ["model"].into()),
    ]
    .into_iter()
    .collect();
    let cycle = find_cycle(&graph).expect("a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 5);
    assert_eq!(
        cyclic_components(&graph),
        [["api", "dataset", "journal", "model"]]
    );
    assert_eq!(
        crate_modules("use crate::{api::X, model}; // crate::sim"),
        ["api", "model"]
    );
    assert_eq!(crate_modules("x: draftgen_crate::a, crate::b::C"), ["b"]);
}

#[test]
fn paths_are_read_from_multi_line_groups_and_code_not_from_literals() {
    let text = r##"
use crate::{
    a::{b, c::D},
    e,
};
/* crate::no */ const S: &str = "crate::no"; const R: &str = r#"crate::"no"#;
fn f<'a>(x: &'a str) -> char { crate::f::g(x); 'c' }
"##;
    assert_eq!(crate_modules(text), ["a", "a", "e", "f"]);
    let paths: Vec<Vec<String>> = named_paths(text).into_iter().map(|p| p.segments).collect();
    assert_eq!(
        paths[..3],
        [
            ["crate", "a", "b"].map(String::from).to_vec(),
            ["crate", "a", "c", "D"].map(String::from).to_vec(),
            ["crate", "e"].map(String::from).to_vec(),
        ]
    );
}

#[test]
fn super_and_self_resolve_from_the_file_and_its_inline_modules() {
    let module = ["m".to_string(), "f".to_string()];
    let text = "use super::g::X;\nuse self::h::Y;\nmod h;\nfn k() { h::z(); }\nmod tests { use super::*; use super::super::i::W; }";
    let declared = declared_modules(&tokens(text));
    let resolved: Vec<Vec<String>> = named_paths(text)
        .iter()
        .filter_map(|p| absolute(&module, p, &declared))
        .collect();
    let expected: Vec<Vec<String>> = [
        vec!["m", "g", "X"],
        vec!["m", "f", "h", "Y"],
        vec!["m", "f", "h", "z"],
        vec!["m", "f"],
        vec!["m", "i", "W"],
    ]
    .into_iter()
    .map(|p| p.into_iter().map(String::from).collect())
    .collect();
    assert_eq!(resolved, expected);
    let files: BTreeMap<Vec<String>, String> = [
        (vec!["m".to_string()], "src/m/mod.rs".to_string()),
        (module.to_vec(), "src/m/f.rs".to_string()),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        file_of(&expected[0], &files).map(String::as_str),
        Some("src/m/mod.rs")
    );
    assert_eq!(
        file_of(&expected[2], &files).map(String::as_str),
        Some("src/m/f.rs")
    );
}
