//! End to end through `generate --kind generic` and `build`: the simulator replays vLLM 0.33.0's
//! own non-streamed answers (`tests/data/server_shapes/kimi_k25.jsonl`, no spaces around added
//! tokens, the requests without `chat_template_kwargs`), the run declares no server kind, and
//! `build` must find the shape from the answers (`reconstruct/infer/shape.rs`): `build.json`'s
//! provider entry adopts `shape_vllm` with its evidence, the samples rebuilt under it carry
//! `provider_shape_vllm`, and no sample is classed exact with other ids than the model's.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use draftgen::dataset::Prompt;
use draftgen::sim::{self, Replay, SimConfig};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

struct Fixture {
    line: String,
    id: String,
    messages: Vec<Value>,
    tools: Option<Vec<Value>>,
    max_tokens: Option<u64>,
    truth: Vec<u32>,
}

/// vLLM 0.33.0's non-streamed answers without spaces and without template arguments.
fn fixtures() -> Vec<Fixture> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/server_shapes/kimi_k25.jsonl");
    let text = std::fs::read_to_string(path).expect("the corpus");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| (l, serde_json::from_str::<Value>(l).expect("a fixture")))
        .filter(|(_, v)| {
            v["server"]["kind"] == "vllm"
                && v["server"]["stream"] == false
                && v["server"]["spaces_between_special_tokens"] == false
                && v["server"]["return_token_ids"] != true
                && v["request"].get("chat_template_kwargs").is_none()
                && v["chat_template"] == "templates/kimi-k2.5-style.jinja"
        })
        .map(|(_, mut v)| Fixture {
            // `generate --kind generic` sends no `spaces_between_special_tokens`: the recording
            // is matched without it (the answer stays the one vLLM sent with spaces off).
            line: {
                v["request"]
                    .as_object_mut()
                    .unwrap()
                    .remove("spaces_between_special_tokens");
                v.to_string()
            },
            id: v["response"]["id"]
                .as_str()
                .expect("an answer id")
                .to_string(),
            messages: v["request"]["messages"].as_array().unwrap().clone(),
            tools: v["request"]["tools"]
                .as_array()
                .filter(|t| !t.is_empty())
                .cloned(),
            max_tokens: v["request"]["max_tokens"].as_u64(),
            truth: serde_json::from_value(v["truth"]["completion_ids"].clone()).unwrap(),
        })
        .collect()
}

fn write_prompts(fixtures: &[Fixture], path: &Path) {
    let lines: String = fixtures
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut prompt = Prompt::new(
                "server_shapes",
                f.messages.clone(),
                f.tools.clone(),
                Value::Null,
            );
            prompt.id = format!("p{i}");
            if let Some(limit) = f.max_tokens {
                prompt.request_options = Some(Box::new(draftgen::dataset::PromptOptions {
                    max_tokens: Some(limit as u32),
                    ..Default::default()
                }));
            }
            format!("{}\n", serde_json::to_string(&prompt).unwrap())
        })
        .collect();
    std::fs::write(path, lines).unwrap();
}

/// prompt id → the recorded answer's id, from the journal.
fn answers_of(run: &Path) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    for segment in std::fs::read_dir(run.join("journal")).unwrap() {
        let text = std::fs::read_to_string(segment.unwrap().path()).unwrap();
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            if let (Some(id), Some(answer)) =
                (record["id"].as_str(), record["response"]["id"].as_str())
            {
                out.insert(id.to_string(), answer.to_string());
            }
        }
    }
    out
}

#[test]
fn build_finds_vllm_behind_an_undeclared_server_from_its_answers() {
    let fixtures = fixtures();
    assert!(fixtures.len() >= 100, "{} fixtures", fixtures.len());
    let replay_text: String = fixtures.iter().map(|f| format!("{}\n", f.line)).collect();
    let replay = Replay::parse(&replay_text, "replay", None).expect("replay");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt
        .block_on(sim::spawn(SimConfig {
            replay: Some(Arc::new(replay)),
            ..SimConfig::default()
        }))
        .expect("sim");
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts.jsonl");
    write_prompts(&fixtures, &prompts);
    let run = dir.path().join("run");
    let out = Command::new(BIN)
        .args(["generate", "--progress", "none", "--kind", "generic"])
        .args([
            "--model",
            "kimi-k2.5",
            "--max-tokens",
            "4096",
            "--concurrency",
            "8",
        ])
        .arg("--prompts")
        .arg(&prompts)
        .arg("--run")
        .arg(&run)
        .args(["--base-url", &sim.base_url()])
        .env_remove("DRAFTGEN_BASE_URL")
        .env_remove("DRAFTGEN_MODEL")
        .env_remove("OPENROUTER_API_KEY")
        .output()
        .unwrap();
    rt.block_on(sim.shutdown()).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let built = dir.path().join("built");
    let mut build = Command::new(BIN);
    build
        .args(["build", "--jsonl", "--drop-class", "none"])
        .arg("--model")
        .arg(common::assets().join("kimi-k2.5"))
        .args(["--profile", "kimi-k2.5"])
        .arg("--run")
        .arg(&run)
        .arg("--out")
        .arg(&built);
    // The corpus's Kimi template; draftgen's built-in stands in where the file is not there
    // (as in tests/replay_e2e.rs).
    let template = common::assets().join("templates/kimi-k2.5-style.jinja");
    if template.exists() {
        build.arg("--chat-template").arg(template);
    }
    let out = build.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(built.join("build.json")).unwrap()).unwrap();
    let providers = info["providers"].as_array().expect("providers");
    assert_eq!(providers.len(), 1, "{providers:?}");
    let adopted: Vec<&str> = providers[0]["conventions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        adopted.contains(&"shape_vllm"),
        "adopted {adopted:?}: {}",
        providers[0]
    );
    assert!(adopted
        .iter()
        .all(|c| !c.starts_with("shape_") || *c == "shape_vllm"));

    let truth: std::collections::HashMap<&str, &Vec<u32>> =
        fixtures.iter().map(|f| (f.id.as_str(), &f.truth)).collect();
    let answer_of = answers_of(&run);
    let (mut named, mut wrong_silent, mut samples) = (0, Vec::new(), 0);
    for line in std::fs::read_to_string(built.join("samples.jsonl"))
        .unwrap()
        .lines()
    {
        let sample: Value = serde_json::from_str(line).unwrap();
        let id = sample["id"].as_str().unwrap();
        let want = answer_of
            .get(id)
            .and_then(|a| truth.get(a.as_str()))
            .expect("a recorded answer");
        let prompt_len = sample["prompt_len"].as_u64().unwrap() as usize;
        let ids: Vec<u32> = serde_json::from_value(sample["input_ids"].clone()).unwrap();
        let class = sample["fidelity_class"].as_str().unwrap();
        let exact = class == "unique" || class == "exact_by_server_ids";
        if exact && ids.get(prompt_len..) != Some(want.as_slice()) {
            wrong_silent.push(id.to_string());
        }
        let reasons = sample["fidelity_reasons"].to_string();
        named += usize::from(reasons.contains("provider_shape_vllm"));
        samples += 1;
    }
    println!("{samples} samples, {named} rebuilt under shape_vllm");
    assert_eq!(samples, fixtures.len());
    assert!(named > 0);
    assert!(
        wrong_silent.is_empty(),
        "classed exact with wrong ids: {wrong_silent:?}"
    );
}
