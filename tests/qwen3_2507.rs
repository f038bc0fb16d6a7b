//! Qwen3-2507 Instruct and Thinking, proven against references nobody here wrote:
//!
//! - render parity: transformers' `render_jinja_template` with the `Qwen3-Instruct` /
//!   `Qwen3-Thinking` templates of PyPI `xinference` 4.1.0
//!   (`tests/data/parity/render_qwen3_2507_{instruct,thinking}.jsonl`, made by
//!   `tests/data/gen/make_parity_qwen3_2507.py`), text and Qwen3 ids, also from the messages as
//!   clients send them (arguments as JSON strings, which the servers parse before rendering);
//! - the server shape: what vLLM 0.33.0's own `qwen3` reasoning and `hermes` tool parsers return
//!   for known 2507 texts (`tests/data/qwen3_2507/parser_shapes.jsonl`, made by
//!   `tests/data/gen/make_qwen3_2507_shapes.py`), against `server::hermes::parse`;
//! - reconstruction of those answers: the model's true ids, or a non-exact class with a reason.

mod common;

use common::assets;
use common::family::{
    assert_parsed_as_row, check_parity, corpus, rebuild_all, row_calls, true_ids, vllm_answer,
    vllm_options, weather_request, Forms,
};
use draftgen::model::family::Family;
use draftgen::model::{LoadOptions, Profile};
use draftgen::server::hermes::parse;
use serde_json::{json, Value};

fn profile(variant: &str) -> Profile {
    let name = match variant {
        "thinking" => "qwen3-2507-thinking",
        _ => "qwen3-2507",
    };
    let options = LoadOptions {
        profile: Some(name.into()),
        chat_template: Some(assets().join(format!("templates/qwen3-2507-{variant}.jinja"))),
    };
    Profile::load(&assets().join("qwen3"), &options).unwrap()
}

fn check_variant(variant: &str) {
    let corpus = format!("render_qwen3_2507_{variant}.jsonl");
    check_parity(
        &profile(variant),
        &corpus,
        Forms::ServerAndClient,
        |_, text| text,
    );
}

#[test]
fn parity_qwen3_2507_instruct() {
    assert_eq!(profile("instruct").family, Family::QWEN3_2507);
    check_variant("instruct");
}

#[test]
fn parity_qwen3_2507_thinking() {
    assert_eq!(profile("thinking").family, Family::QWEN3_2507_THINKING);
    check_variant("thinking");
}

/// The built-in templates are the ones the parity corpora were rendered with, byte for byte.
#[test]
fn builtin_templates_are_xinferences() {
    for (family, variant) in [
        (Family::QWEN3_2507, "instruct"),
        (Family::QWEN3_2507_THINKING, "thinking"),
    ] {
        let builtin = family.spec().builtin_template.unwrap();
        let path = assets().join(format!("templates/qwen3-2507-{variant}.jinja"));
        assert_eq!(builtin, std::fs::read_to_string(path).unwrap());
    }
}

fn shapes() -> (Vec<Value>, Vec<Value>) {
    let mut rows = corpus("tests/data/qwen3_2507/parser_shapes.jsonl");
    let header = rows.remove(0);
    (header["tools"].as_array().unwrap().clone(), rows)
}

#[test]
fn parse_returns_what_vllms_parsers_return() {
    let (_, rows) = shapes();
    assert_eq!(rows.len(), 11);
    let p = profile("thinking");
    for row in &rows {
        let text = row["text"].as_str().unwrap();
        let want_ids: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
        assert_eq!(p.tokenizer.encode(text), want_ids, "{text:?}");
        let thinking = row["thinking"].as_bool().unwrap();
        assert_parsed_as_row(parse(text, thinking, true, false), row);
    }
}

/// Whether a row's answer was cut by `max_tokens`.
fn cut(row: &Value) -> bool {
    row["text"].as_str().unwrap().ends_with(", cut")
}

/// The answer vLLM 0.33 sends for one row (non-streamed), with its usage.
fn answer(row: &Value, prompt_tokens: usize) -> Value {
    let calls = row_calls(row, "calls");
    // vLLM's serving nulls a whitespace-only content beside calls (`hermes::TRAITS`).
    let content = match row["content"].as_str() {
        Some(c) if c.trim().is_empty() && !calls.is_empty() => Value::Null,
        _ => row["content"].clone(),
    };
    let message = json!({"role": "assistant", "content": content, "reasoning": row["reasoning"]});
    let ids = row["ids"].as_array().unwrap().len();
    let cut = cut(row);
    vllm_answer(message, &calls, cut, prompt_tokens, ids + usize::from(!cut))
}

/// Each answer of the corpus rebuilt from what vLLM sent: the model's own ids (its text and
/// `<|im_end|>` unless cut), or a class that says they are not certain.
#[test]
fn reconstruction_is_never_wrong_without_a_flag() {
    let (tools, rows) = shapes();
    for variant in ["instruct", "thinking"] {
        let p = profile(variant);
        let rows: Vec<&Value> = rows
            .iter()
            .filter(|r| r["thinking"].as_bool() == Some(variant == "thinking"))
            .collect();
        let (request, prompt_tokens) = weather_request(&p, &tools, false);
        let cases = rows.iter().map(|row| {
            let truth = true_ids(&p, row, cut(row), "<|im_end|>");
            (row["text"].to_string(), answer(row, prompt_tokens), truth)
        });
        let exact = rebuild_all(&p, &request, &vllm_options(), cases);
        assert!(
            exact * 2 >= rows.len(),
            "only {exact} of {} rebuilt exactly",
            rows.len()
        );
    }
}
