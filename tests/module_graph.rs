//! The crate's module graph runs one way, down the pipeline (DESIGN.md, "Modules"), and has no cycle.
//!
//! Every `crate::NAME` path in `src/` (code, not comments) is an edge from the top-level module
//! the file belongs to to `NAME`. Each edge must be one [`ALLOWED`] lists, and [`ALLOWED`] itself
//! must be acyclic, so a new dependency is a deliberate one-line change here that this test
//! refuses if it closes a loop. Paths that climb out of a module with `super::` are not followed
//! (none in `src/` today leaves its top-level module).

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
    // pyjson: vLLM 0.33 re-serializes coerced arguments with `json.dumps` (sim/coerce.rs).
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
            "engine",
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

/// The top-level module a file under `src/` belongs to (`None` for `lib.rs` and `main.rs`).
fn top_module(relative: &Path) -> Option<String> {
    let mut parts = relative.components();
    let first = parts.next()?.as_os_str().to_str()?.to_string();
    if parts.next().is_some() {
        return Some(first);
    }
    let stem = first.strip_suffix(".rs")?;
    (stem != "lib" && stem != "main").then(|| stem.to_string())
}

/// Every `crate::NAME` in the code of `line` (its `//` comment cut off), and `crate::{A, B}` groups.
fn crate_paths(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or_default();
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or_default();
            for item in inner.split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    names
}

/// module → used module → the first `file:line` that uses it.
fn actual_edges() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for path in files {
        let relative = path.strip_prefix(&src).expect("under src");
        let Some(from) = top_module(relative) else {
            continue;
        };
        let shown = format!("src/{}", relative.display());
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{shown}: {e}"));
        for (number, line) in text.lines().enumerate() {
            for to in crate_paths(line) {
                if to != from {
                    edges
                        .entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| format!("{shown}:{}", number + 1));
                }
            }
        }
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

#[test]
fn every_dependency_between_modules_is_an_allowed_one() {
    let allowed = allowed();
    let mut refused = Vec::new();
    for (from, uses) in actual_edges() {
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
        "dependencies that are not in ALLOWED (tests/module_graph.rs; DESIGN.md's one-way order):\n  {}",
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
fn the_cycle_finder_finds_the_old_cycle() {
    // model → api → journal → dataset → model, the graph before issue 9 item 5.
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
        crate_paths("use crate::{api::X, model}; // crate::sim"),
        ["api", "model"]
    );
    assert_eq!(crate_paths("x: draftgen_crate::a, crate::b::C"), ["b"]);
}
