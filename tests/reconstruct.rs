//! Reconstruction against cases whose true ids come from the reference libraries
//! (`tests/data/gen/make_reconstruct_cases.py`: tiktoken with the Kimi ranks, jinja2 renders of
//! the real templates, transformers), in every response shape the servers send.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Case {
    name: String,
    profile: String,
    model: String,
    #[serde(default)]
    chat_template: Option<String>,
    request: ExchangeRequest,
    response: Value,
    #[serde(default)]
    options: Option<ReconstructOptions>,
    expected: Expected,
}

#[derive(Deserialize)]
struct Expected {
    #[serde(default)]
    prompt_ids: Option<Vec<u32>>,
    completion_ids: Vec<u32>,
    #[serde(default)]
    ambiguous: bool,
    #[serde(default)]
    warnings_contain: Vec<String>,
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reconstruct")
}

fn check_family(file: &str) {
    let root = common::assets();
    let text = std::fs::read_to_string(data_dir().join(file)).expect("case file");
    let mut profiles: HashMap<(String, String, Option<String>), Profile> = HashMap::new();
    let mut failures = Vec::new();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Case = serde_json::from_str(line).expect("case line");
        count += 1;
        let key = (
            case.model.clone(),
            case.profile.clone(),
            case.chat_template.clone(),
        );
        let profile = profiles.entry(key).or_insert_with(|| {
            let options = LoadOptions {
                profile: Some(case.profile.clone()),
                chat_template: case.chat_template.as_ref().map(|t| root.join(t)),
            };
            Profile::load(&root.join(&case.model), &options).expect("profile")
        });
        let options = case.options.unwrap_or_default();
        let got = match reconstruct(profile, &case.request, &case.response, &options) {
            Ok(got) => got,
            Err(e) => {
                failures.push(format!("{}: error {e}", case.name));
                continue;
            }
        };
        let mut problems = Vec::new();
        if got.completion_ids != case.expected.completion_ids {
            problems.push(format!(
                "completion_ids\n   got  {:?}\n   want {:?}\n   got text  {:?}\n   want text {:?}",
                got.completion_ids,
                case.expected.completion_ids,
                profile.tokenizer.decode(&got.completion_ids),
                profile.tokenizer.decode(&case.expected.completion_ids)
            ));
        }
        if let Some(want) = &case.expected.prompt_ids {
            if &got.prompt_ids != want {
                problems.push(format!(
                    "prompt_ids differ\n   got text  {:?}\n   want text {:?}",
                    profile.tokenizer.decode(&got.prompt_ids),
                    profile.tokenizer.decode(want)
                ));
            }
        }
        if got.ambiguous != case.expected.ambiguous {
            problems.push(format!(
                "ambiguous: got {}, want {}",
                got.ambiguous, case.expected.ambiguous
            ));
        }
        // Several streams fitting must be said; a doubt said otherwise (an undeclared server's
        // shapes, an upstream's conventions) must show in the class.
        let said_ambiguous = got.warnings.iter().any(|w| w.starts_with("ambiguous"));
        if got.ambiguous && !said_ambiguous {
            problems.push("ambiguity not reported in warnings".to_string());
        }
        if said_ambiguous && got.fidelity.class.is_exact() {
            problems.push("said ambiguous but classed exact".to_string());
        }
        for needle in &case.expected.warnings_contain {
            if !got.warnings.iter().any(|w| w.contains(needle.as_str())) {
                problems.push(format!(
                    "no warning containing {needle:?}: {:?}",
                    got.warnings
                ));
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{}:\n  {}", case.name, problems.join("\n  ")));
        }
    }
    assert!(count > 0, "{file} has no cases");
    assert!(
        failures.is_empty(),
        "{} of {count} cases in {file} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn kimi_k25() {
    check_family("kimi_k25.jsonl");
}

#[test]
fn kimi_k2_thinking() {
    check_family("kimi_k2_thinking.jsonl");
}

#[test]
fn kimi_k2() {
    check_family("kimi_k2.jsonl");
}

#[test]
fn qwen3() {
    check_family("qwen3.jsonl");
}

#[test]
fn deepseek_v3() {
    check_family("deepseek_v3.jsonl");
}

/// The `draftgen reconstruct` contract: one `{prompt_ids, completion_ids, warnings}` line per
/// input line, in order; a bad line gets an error line naming file:line and exit code 2.
#[test]
fn cli_reconstruct_contract() {
    let root = common::assets();
    let text = std::fs::read_to_string(data_dir().join("kimi_k25.jsonl")).expect("cases");
    let cases: Vec<Case> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("case"))
        .filter(|c: &Case| c.options.is_none() && c.expected.prompt_ids.is_some())
        .take(5)
        .collect();
    assert_eq!(cases.len(), 5);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let mut lines: Vec<String> = cases
        .iter()
        .map(|c| serde_json::json!({"request": c.request, "response": c.response}).to_string())
        .collect();
    lines.insert(2, "{not json".to_string());
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_draftgen"))
        .args(["reconstruct", "--profile", "kimi-k2.5", "--model"])
        .arg(root.join("kimi-k2.5"))
        .arg("--input")
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "a bad input line is exit code 2"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("in.jsonl:3"), "{stderr}");
    let out: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(out.len(), 6);
    assert!(out[2]["error"].as_str().unwrap().contains("in.jsonl:3"));
    let good: Vec<&Value> = out.iter().filter(|v| v.get("error").is_none()).collect();
    for (got, case) in good.iter().zip(&cases) {
        let ids = |v: &Value| -> Vec<u32> { serde_json::from_value(v.clone()).unwrap() };
        assert_eq!(
            ids(&got["completion_ids"]),
            case.expected.completion_ids,
            "{}",
            case.name
        );
        assert_eq!(
            Some(ids(&got["prompt_ids"])),
            case.expected.prompt_ids,
            "{}",
            case.name
        );
        assert!(got["warnings"].is_array());
    }
}
