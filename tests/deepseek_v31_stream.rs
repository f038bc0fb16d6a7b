//! DeepSeek-V3.1 streamed through vLLM 0.33.0's `deepseek_v31` tool parser: what the wheel's own
//! `extract_tool_calls_streaming` sends, one token a delta, for true V3.1 token streams
//! (`tests/data/deepseek_v31/stream_shapes.jsonl`, made by
//! `tests/data/gen/make_deepseek_v31_stream_shapes.py`), against `server::deepseek_v31::parse`;
//! and the reconstruction of those answers against the true ids, exact where nothing was cut.

mod common;

use draftgen::model::family::deepseek_v3::END_OF_SENTENCE;
use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, FidelityClass, Reason, ReconstructOptions};
use draftgen::server::deepseek_v31::parse;
use serde_json::{json, Value};

use common::assets;
use common::family::{
    assert_parsed_as_row, corpus, row_calls, true_ids, verdict, vllm_answer, vllm_options,
    weather_request, Verdict,
};

fn rows() -> Vec<Value> {
    corpus("tests/data/deepseek_v31/stream_shapes.jsonl")
}

#[test]
fn streamed_parse_returns_what_vllms_parser_streams() {
    let rows = rows();
    assert_eq!(rows.len(), 10);
    for row in &rows {
        let text = row["text"].as_str().unwrap();
        assert_parsed_as_row(parse(text, false, true, true), row);
    }
}

/// Every streamed answer rebuilt never wrong without a flag; the demo's dropped answer (a call
/// after content, `résumé` in its arguments) rebuilt to the true ids, flagged only because the
/// stream cannot show whether part of the content was written after the call; and one without
/// content exact.
#[test]
fn streamed_calls_rebuild_to_the_true_ids() {
    let p = Profile::load(&assets().join("deepseek-v3.1"), &LoadOptions::default()).unwrap();
    let tools = vec![json!({"type": "function", "function": {
        "name": "get_news", "parameters": {"type": "object", "properties": {}}}})];
    let (request, prompt_tokens) = weather_request(&p, &tools, true);
    let options = ReconstructOptions {
        stream: Some(true),
        ..vllm_options()
    };
    let mut failures = Vec::new();
    for row in rows() {
        let cut = row["cut"].as_bool().unwrap();
        let truth = true_ids(&p, &row, cut, END_OF_SENTENCE);
        let calls = row_calls(&row, "calls");
        let message = json!({"role": "assistant", "content": row["content"]});
        let answer = vllm_answer(message, &calls, cut, prompt_tokens, truth.len());
        let got = reconstruct(&p, &request, &answer, &options).unwrap();
        let text = row["text"].as_str().unwrap();
        let verdict = verdict(&p, &got, &truth);
        if let Verdict::Wrong(why) = &verdict {
            failures.push(format!("{text}: {why}"));
        }
        if text.contains("résumé") {
            assert_eq!(got.completion_ids, truth, "{text}");
            assert_eq!(got.fidelity.class, FidelityClass::Ambiguous, "{text}");
            assert_eq!(got.fidelity.reasons, [Reason::StreamedTextAfterCalls]);
        }
        if text.starts_with("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather") {
            assert_eq!(verdict, Verdict::Exact, "{text}: {:?}", got.warnings);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
