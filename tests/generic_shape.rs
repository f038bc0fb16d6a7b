//! An undeclared server (`generic`) is not trusted more than a declared one: every answer of the
//! server-shape corpus (`tests/data/server_shapes/*.jsonl`, made by vLLM's and SGLang's unchanged
//! serving code from token streams whose ids come from the reference encoder; format:
//! `tests/data/README.md`) is rebuilt twice, once under the server kind it was made by and once
//! with the kind left out. Under `generic` no rebuild that differs from the truth may go
//! unflagged: whatever a known server shape could have hidden and the answer does not rule out
//! keeps the sample from being classed exact (`reconstruct/generic.rs`).
//!
//! `--nocapture` prints the exact / ambiguous / lossy / dropped shares under both.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use draftgen::api::assemble::ChunkAssembler;
use draftgen::api::ServerKind;
use draftgen::model::{assets, LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, FidelityClass, ReconstructOptions};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Fixture {
    name: String,
    profile: String,
    model: String,
    #[serde(default)]
    chat_template: Option<String>,
    server: Server,
    request: ExchangeRequest,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    chunks: Option<Vec<Value>>,
    truth: Truth,
}

#[derive(Deserialize)]
struct Server {
    kind: ServerKind,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    spaces_between_special_tokens: bool,
}

#[derive(Deserialize)]
struct Truth {
    completion_ids: Vec<u32>,
}

/// One way of reading the corpus: its classes and how many came out wrong without a flag.
#[derive(Default)]
struct Tally {
    total: usize,
    exact: usize,
    ambiguous: usize,
    lossy: usize,
    dropped: usize,
    truncated: usize,
    wrong_unflagged: Vec<String>,
}

impl Tally {
    fn add(&mut self, name: &str, class: FidelityClass, right: bool, warned: bool) {
        self.total += 1;
        match class {
            c if c.is_exact() => self.exact += 1,
            FidelityClass::Ambiguous => self.ambiguous += 1,
            FidelityClass::Lossy => self.lossy += 1,
            FidelityClass::Inconsistent => self.dropped += 1,
            _ => self.truncated += 1,
        }
        if !right && (class.is_exact() || !warned) {
            self.wrong_unflagged.push(name.to_string());
        }
    }

    fn row(&self, label: &str) -> String {
        let share = |n: usize| format!("{n} ({:.1}%)", 100.0 * n as f64 / self.total as f64);
        format!(
            "| {label} | {} | {} | {} | {} | {} | {} | {} |",
            self.total,
            share(self.exact),
            share(self.ambiguous),
            share(self.lossy),
            share(self.dropped),
            self.truncated,
            self.wrong_unflagged.len()
        )
    }
}

fn answer(fixture: &Fixture) -> Value {
    match (&fixture.response, &fixture.chunks) {
        (Some(body), _) => body.clone(),
        (None, Some(chunks)) => {
            let mut assembler = ChunkAssembler::new();
            for chunk in chunks {
                assembler.push(chunk);
            }
            assembler.finish()
        }
        (None, None) => panic!("{}: neither response nor chunks", fixture.name),
    }
}

fn fixture_template(root: &Path, template: Option<&str>) -> Option<PathBuf> {
    let path = root.join(template?);
    let builtin_stands_in = template.is_some_and(|t| t.ends_with("kimi-k2.5-style.jinja"));
    (path.exists() || !builtin_stands_in).then_some(path)
}

fn fixtures() -> Vec<Fixture> {
    let files = common::server_shape_files();
    assert!(
        !files.is_empty(),
        "no fixture files in tests/data/server_shapes/"
    );
    let only = std::env::var("DRAFTGEN_SHAPES_ONLY").ok();
    let mut all = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let fixture: Fixture = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), number + 1));
            if only.as_ref().is_none_or(|o| fixture.name.contains(o)) {
                all.push(fixture);
            }
        }
    }
    all
}

#[test]
fn an_undeclared_server_leaves_no_wrong_sample_unflagged() {
    let root =
        assets::assets_root().expect("reference assets (DRAFTGEN_ASSETS or ../shared/assets)");
    let mut profiles: HashMap<(String, String, Option<String>), Profile> = HashMap::new();
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    let verbose = std::env::var_os("DRAFTGEN_SHAPES_VERBOSE").is_some();
    for fixture in fixtures() {
        let key = (
            fixture.model.clone(),
            fixture.profile.clone(),
            fixture.chat_template.clone(),
        );
        let profile = profiles.entry(key).or_insert_with(|| {
            let options = LoadOptions {
                profile: Some(fixture.profile.clone()),
                chat_template: fixture_template(&root, fixture.chat_template.as_deref()),
            };
            Profile::load(&root.join(&fixture.model), &options).expect("profile")
        });
        let declared = ReconstructOptions {
            spaces_around_special_tokens: fixture.server.spaces_between_special_tokens,
            kind: fixture.server.kind,
            server_version: fixture.server.version.clone(),
            stream: Some(fixture.server.stream),
            ..ReconstructOptions::default()
        };
        let generic = ReconstructOptions {
            stream: Some(fixture.server.stream),
            ..ReconstructOptions::default()
        };
        let body = answer(&fixture);
        for (label, options) in [("declared", &declared), ("generic", &generic)] {
            let got = reconstruct(profile, &fixture.request, &body, options)
                .unwrap_or_else(|e| panic!("{}: {label}: {e}", fixture.name));
            let right = got.completion_ids == fixture.truth.completion_ids;
            let class = got.fidelity.class;
            if verbose && !right && class.is_exact() {
                eprintln!(
                    "{label} wrong unflagged {}: {:?}\n   got  {:?}\n   want {:?}",
                    fixture.name,
                    got.fidelity.reasons,
                    profile.tokenizer.decode(&got.completion_ids),
                    profile.tokenizer.decode(&fixture.truth.completion_ids),
                );
            }
            tallies.entry(label).or_default().add(
                &fixture.name,
                class,
                right,
                !got.warnings.is_empty(),
            );
        }
    }
    println!("\n| server kind | answers | exact | ambiguous | lossy | dropped (inconsistent) | truncated | wrong without a flag |");
    println!("|---|---|---|---|---|---|---|---|");
    for (label, tally) in &tallies {
        println!("{}", tally.row(label));
    }
    let generic = &tallies["generic"];
    let declared = &tallies["declared"];
    assert!(
        generic.wrong_unflagged.len() <= declared.wrong_unflagged.len()
            && generic
                .wrong_unflagged
                .iter()
                .all(|n| declared.wrong_unflagged.contains(n)),
        "under generic {} answers are wrong without a flag that are not so under their declared kind:\n{}",
        generic.wrong_unflagged.len(),
        generic
            .wrong_unflagged
            .iter()
            .filter(|n| !declared.wrong_unflagged.contains(n))
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
