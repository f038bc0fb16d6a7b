//! `generate --stream --keep-stream` keeps each answer's raw SSE chunks in the run's
//! `streams.zst`, keyed by prompt id and attempt, and they read back equal to what the server
//! sent. The server is the simulator replaying chunks recorded from vLLM 0.33.0's own streaming
//! code (`tests/data/server_shapes/kimi_k25.jsonl`), so "what was sent" is the recording, not
//! anything draftgen wrote. Also: the assembled answer in the journal keeps each call's `index`
//! as the chunks numbered it.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use draftgen::dataset::{Prompt, PromptOptions};
use draftgen::journal::streams;
use draftgen::sim::{self, Replay, SimConfig};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

#[test]
fn kept_chunks_read_back_as_the_server_sent_them() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/server_shapes/kimi_k25.jsonl");
    let Ok(text) = std::fs::read_to_string(&file) else {
        eprintln!("NOTE: no server_shapes fixtures; nothing to check");
        return;
    };
    // One recording per conversation, streamed with vLLM's default spaces.
    let mut chosen: HashMap<String, Value> = HashMap::new();
    let mut lines = String::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let server = &v["server"];
        if server["stream"] != true
            || server["spaces_between_special_tokens"] != true
            || server["return_token_ids"] == true
            || v["request"].get("chat_template_kwargs").is_some()
        {
            continue;
        }
        let prompt = Prompt::new(
            "server_shapes",
            v["request"]["messages"].as_array().unwrap().clone(),
            v["request"]["tools"].as_array().cloned(),
            Value::Null,
        );
        if chosen.contains_key(&prompt.id) {
            continue;
        }
        lines.push_str(line);
        lines.push('\n');
        chosen.insert(prompt.id.clone(), v);
    }
    assert!(chosen.len() >= 10, "{} conversations", chosen.len());

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let replay = Replay::parse(&lines, "kimi_k25.jsonl", None).unwrap();
    let sim = rt
        .block_on(sim::spawn(SimConfig {
            replay: Some(Arc::new(replay)),
            ..SimConfig::default()
        }))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts.jsonl");
    let prompt_lines: String = chosen
        .values()
        .map(|v| {
            let mut p = Prompt::new(
                "server_shapes",
                v["request"]["messages"].as_array().unwrap().clone(),
                v["request"]["tools"].as_array().cloned(),
                Value::Null,
            );
            // The limit the answer was recorded with (`sim --replay` matches on it).
            p.request_options = Some(Box::new(PromptOptions {
                max_tokens: v["request"]["max_tokens"].as_u64().map(|n| n as u32),
                ..PromptOptions::default()
            }));
            format!("{}\n", serde_json::to_string(&p).unwrap())
        })
        .collect();
    std::fs::write(&prompts, prompt_lines).unwrap();
    let run = dir.path().join("run");
    let out = Command::new(BIN)
        .args(["generate", "--progress", "none", "--kind", "vllm"])
        .args([
            "--model",
            "kimi-k2.5",
            "--stream",
            "--keep-stream",
            "--max-tokens",
            "4096",
        ])
        .arg("--prompts")
        .arg(&prompts)
        .arg("--run")
        .arg(&run)
        .args(["--base-url", &sim.base_url()])
        .env_remove("DRAFTGEN_BASE_URL")
        .env_remove("DRAFTGEN_MODEL")
        .output()
        .unwrap();
    rt.block_on(sim.shutdown()).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let kept = streams::read(&run).unwrap();
    assert!(kept.torn.is_none(), "{:?}", kept.torn);
    assert_eq!(kept.entries.len(), chosen.len());
    for entry in &kept.entries {
        let fixture = &chosen[&entry.id];
        assert_eq!(entry.attempt, 1);
        let got: Vec<Value> = entry
            .chunks
            .iter()
            .map(|c| serde_json::from_str(c.get()).unwrap())
            .collect();
        assert_eq!(
            &Value::Array(got),
            &fixture["chunks"],
            "{}",
            fixture["name"]
        );
    }

    // The journal's assembled answers: each call keeps the `index` its chunks gave it.
    let mut calls_checked = 0;
    for segment in std::fs::read_dir(run.join("journal")).unwrap() {
        let text = std::fs::read_to_string(segment.unwrap().path()).unwrap();
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            let fixture = &chosen[record["id"].as_str().unwrap()];
            let mut sent: Vec<u64> = Vec::new();
            for chunk in fixture["chunks"].as_array().unwrap() {
                for call in chunk["choices"][0]["delta"]["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let index = call["index"].as_u64().unwrap();
                    if !sent.contains(&index) {
                        sent.push(index);
                    }
                }
            }
            let assembled: Vec<u64> = record["response"]["choices"][0]["message"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["index"].as_u64().expect("assembled call keeps its index"))
                .collect();
            assert_eq!(assembled, sent, "{}", fixture["name"]);
            calls_checked += assembled.len();
        }
    }
    assert!(calls_checked > 0, "no tool call among the recordings");
}
