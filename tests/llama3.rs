//! Llama 3.1 / 3.3 as vLLM 0.33.0 serves it with `--tool-call-parser llama3_json`: what the
//! wheel's own `Llama3JsonToolParser` answers for true Llama 3.1 token streams
//! (`tests/data/llama3/vllm_answers.jsonl`, made by `tests/data/gen/make_llama3_shapes.py`),
//! against `server::llama3::parse`; and the reconstruction of those answers against the true
//! ids: never different from them without a flag.

mod common;

use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use draftgen::server::llama3::parse;
use serde_json::Value;

use common::assets;
use common::family::{corpus, parsed_calls, verdict, vllm_options, Verdict};

fn rows() -> Vec<Value> {
    corpus("tests/data/llama3/vllm_answers.jsonl")
}

fn profile() -> Profile {
    let options = LoadOptions {
        profile: Some("llama3".into()),
        chat_template: Some(assets().join("templates/llama-3.1-8b-instruct.jinja")),
    };
    Profile::load(&assets().join("llama3.1"), &options).unwrap()
}

/// (content, [(name, arguments)]) of an answer.
fn fields(answer: &Value) -> (Option<String>, Vec<(String, String)>) {
    let message = &answer["choices"][0]["message"];
    let calls = message["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let f = &c["function"];
                    (
                        f["name"].as_str().unwrap().to_string(),
                        f["arguments"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (message["content"].as_str().map(str::to_string), calls)
}

#[test]
fn parse_returns_what_vllms_parser_returns() {
    let rows = rows();
    assert_eq!(rows.len(), 18);
    let mut streams = 0;
    for row in rows.iter().filter(|r| r["request"]["tools"].is_array()) {
        let seen = row["seen"].as_str().unwrap();
        for (stream, key) in [(false, "response"), (true, "streamed")] {
            let parsed = parse(seen, true, stream);
            if stream && parsed.unmodelled.is_some() {
                continue;
            }
            streams += usize::from(stream);
            let calls = parsed_calls(&parsed.calls);
            let content = parsed.content.filter(|c| !c.is_empty());
            assert_eq!((content, calls), fields(&row[key]), "{key} {seen}");
        }
    }
    assert!(streams >= 4, "only {streams} streamed answers modelled");
}

/// Every answer (non-streamed and streamed) rebuilt as vLLM 0.33 answered it: the prompt's ids
/// always the true ones, the completion's either the true ones or flagged.
#[test]
fn reconstruction_is_never_wrong_without_a_flag() {
    let profile = profile();
    let (mut exact, mut flagged) = (Vec::new(), Vec::new());
    for row in rows() {
        let name = row["name"].as_str().unwrap();
        let request: ExchangeRequest = serde_json::from_value(row["request"].clone()).unwrap();
        let prompt: Vec<u32> = serde_json::from_value(row["prompt_ids"].clone()).unwrap();
        let truth: Vec<u32> = serde_json::from_value(row["completion_ids"].clone()).unwrap();
        for (stream, key) in [(false, "response"), (true, "streamed")] {
            let Some(answer) = row.get(key) else {
                continue;
            };
            let options = ReconstructOptions {
                server_version: Some("0.33.0".into()),
                stream: Some(stream),
                ..vllm_options()
            };
            let got = reconstruct(&profile, &request, answer, &options)
                .unwrap_or_else(|e| panic!("{name} {key}: {e}"));
            assert_eq!(got.prompt_ids, prompt, "{name}: prompt");
            match verdict(&profile, &got, &truth) {
                Verdict::Exact => exact.push(format!("{name} {key}")),
                Verdict::Flagged => flagged.push(format!(
                    "{name} {key}: {:?} {:?}",
                    got.fidelity, got.warnings
                )),
                Verdict::Wrong(why) => panic!("{name} {key}: {why}"),
            }
        }
    }
    eprintln!("exact: {exact:#?}\nflagged: {flagged:#?}");
    // Plain answers, built-in tool calls after a tool result, and what the parser left as content.
    assert!(exact.len() >= 12, "only {} exact", exact.len());
}

/// The Llama 3.1 tokenizer's directory is detected as the family (its `<|python_tag|>`), with
/// `<|eot_id|>` as the end of turn; the built-in template is llama.cpp's 3.1 / 3.3 file.
#[test]
fn detected_from_its_tokenizer_with_llama_cpps_template_built_in() {
    let profile = Profile::load(&assets().join("llama3.1"), &LoadOptions::default()).unwrap();
    assert_eq!(profile.name, "llama3");
    assert_eq!(profile.end_of_turn(), "<|eot_id|>");
    let builtin = draftgen::model::family::Family::LLAMA3
        .spec()
        .builtin_template
        .unwrap();
    for file in [
        "llama-3.1-8b-instruct.jinja",
        "llama-3.3-70b-instruct.jinja",
    ] {
        let published = std::fs::read_to_string(assets().join("templates").join(file)).unwrap();
        assert_eq!(builtin, published, "{file}");
    }
}
