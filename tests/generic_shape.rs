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
use draftgen::completion::Completion;
use draftgen::model::{assets, LoadOptions, Profile};
use draftgen::reconstruct::infer::{self, Answer, GroupEvidence};
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

/// The shape convention (`reconstruct/infer/shape.rs`) that names the fixture's own server.
fn own_shape(server: &Server, spaced_family: bool) -> String {
    let kind = match server.kind {
        ServerKind::Vllm
            if server
                .version
                .as_deref()
                .is_some_and(|v| v.starts_with("0.11")) =>
        {
            "vllm_0_11"
        }
        ServerKind::Vllm => "vllm",
        ServerKind::Sglang => "sglang",
        _ => "llamacpp",
    };
    let spaced = server.spaces_between_special_tokens && spaced_family;
    format!("shape_{kind}{}", if spaced { "_spaced" } else { "" })
}

fn group_key(fixture: &Fixture) -> String {
    let family = fixture.name.split('/').next().unwrap_or_default();
    format!(
        "{family} {:?} {} stream={} spaces={}",
        fixture.server.kind,
        fixture.server.version.as_deref().unwrap_or("-"),
        fixture.server.stream,
        fixture.server.spaces_between_special_tokens
    )
}

#[test]
fn an_undeclared_server_leaves_no_wrong_sample_unflagged() {
    let root =
        assets::assets_root().expect("reference assets (DRAFTGEN_ASSETS or ../shared/assets)");
    let mut profiles: HashMap<(String, String, Option<String>), Profile> = HashMap::new();
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    let verbose = std::env::var_os("DRAFTGEN_SHAPES_VERBOSE").is_some();
    // Under generic, what the samples `generic_could_hide` flags name beside it.
    let mut hidden: BTreeMap<String, usize> = BTreeMap::new();
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
            let reasons = serde_json::to_value(&got.fidelity.reasons).unwrap();
            let names: Vec<&str> = reasons
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if names.contains(&"generic_could_hide") {
                let beside: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|n| *n != "generic_could_hide")
                    .collect();
                *hidden.entry(beside.join(" ")).or_default() += 1;
            }
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
    println!("\nunder generic, `generic_could_hide` beside:");
    for (beside, n) in &hidden {
        println!("  {n:5}  {beside}");
    }
    let generic = &tallies["generic"];
    let declared = &tallies["declared"];
    assert!(
        generic.wrong_unflagged.is_empty(),
        "under generic {} answers are wrong without a flag:\n{}",
        generic.wrong_unflagged.len(),
        generic.wrong_unflagged.join("\n")
    );
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

/// Each server's answers as one undeclared provider's (one group per family, server, version,
/// stream and spacing, as `build` groups a run's answers by endpoint): the shape inferred from
/// them is the server's own or none, and no answer rebuilt under it is wrong without a flag.
#[test]
fn the_shape_found_from_a_groups_answers_is_its_servers_and_leaves_nothing_wrong_unflagged() {
    let root =
        assets::assets_root().expect("reference assets (DRAFTGEN_ASSETS or ../shared/assets)");
    let mut profiles: HashMap<(String, String, Option<String>), Profile> = HashMap::new();
    let mut groups: BTreeMap<String, Vec<Fixture>> = BTreeMap::new();
    for fixture in fixtures() {
        groups.entry(group_key(&fixture)).or_default().push(fixture);
    }
    let mut inferred = Tally::default();
    let mut wrong_shapes = Vec::new();
    println!("\n| group | answers | shape inferred |");
    println!("|---|---|---|");
    for (key, fixtures) in &groups {
        let first = &fixtures[0];
        let profile_key = (
            first.model.clone(),
            first.profile.clone(),
            first.chat_template.clone(),
        );
        let profile = profiles.entry(profile_key).or_insert_with(|| {
            let options = LoadOptions {
                profile: Some(first.profile.clone()),
                chat_template: fixture_template(&root, first.chat_template.as_deref()),
            };
            Profile::load(&root.join(&first.model), &options).expect("profile")
        });
        let options = ReconstructOptions {
            stream: Some(first.server.stream),
            ..ReconstructOptions::default()
        };
        let completions: Vec<Completion> = fixtures
            .iter()
            .map(|f| Completion::from_response(&answer(f)).expect("an answer"))
            .collect();
        let mut evidence = GroupEvidence::default();
        for (fixture, completion) in fixtures.iter().zip(&completions) {
            let a = Answer {
                profile,
                request: &fixture.request,
                completion,
                options: &options,
            };
            evidence.add(&infer::evidence_of(&a).expect("evidence"));
        }
        let adopted = evidence.adopted();
        let shapes: Vec<&str> = adopted
            .iter()
            .map(|c| c.name())
            .filter(|n| n.starts_with("shape_"))
            .collect();
        let own = own_shape(&first.server, profile.family.spec().detokenizer_spaces);
        if shapes.iter().any(|s| *s != own) {
            wrong_shapes.push(format!("{key}: {shapes:?}, the server's is {own}"));
        }
        println!("| {key} | {} | {} |", fixtures.len(), shapes.join(", "));
        if std::env::var_os("DRAFTGEN_SHAPES_VERBOSE").is_some() {
            for (i, c) in infer::CONVENTIONS.iter().enumerate() {
                println!("    {}: {}", c.name(), evidence.describe(i));
            }
        }
        for (fixture, completion) in fixtures.iter().zip(&completions) {
            let a = Answer {
                profile,
                request: &fixture.request,
                completion,
                options: &options,
            };
            let (got, _) = infer::rebuild(&a, &adopted).expect("rebuild");
            let right = got.completion_ids == fixture.truth.completion_ids;
            inferred.add(
                &fixture.name,
                got.fidelity.class,
                right,
                !got.warnings.is_empty(),
            );
        }
    }
    println!("\n| server kind | answers | exact | ambiguous | lossy | dropped (inconsistent) | truncated | wrong without a flag |");
    println!("|---|---|---|---|---|---|---|---|");
    println!("{}", inferred.row("generic, shape inferred per group"));
    assert!(
        wrong_shapes.is_empty(),
        "wrong shapes inferred:\n{}",
        wrong_shapes.join("\n")
    );
    assert!(
        inferred.wrong_unflagged.is_empty(),
        "{} answers wrong without a flag after inference:\n{}",
        inferred.wrong_unflagged.len(),
        inferred.wrong_unflagged.join("\n")
    );
}
