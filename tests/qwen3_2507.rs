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
use draftgen::api::ServerKind;
use draftgen::model::family::Family;
use draftgen::model::{LoadOptions, Profile, RenderInput};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use draftgen::server::hermes::parse;
use serde_json::{json, Value};
use std::path::Path;

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

fn jsonl(path: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The messages as an OpenAI client writes them: tool-call arguments as JSON strings.
fn client_messages(messages: &[Value]) -> Vec<Value> {
    let mut out = messages.to_vec();
    for message in &mut out {
        let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) else {
            continue;
        };
        for call in calls {
            let arguments = &mut call["function"]["arguments"];
            *arguments = Value::from(arguments.to_string());
        }
    }
    out
}

fn check_parity(variant: &str) {
    let p = profile(variant);
    let rows = jsonl(&format!(
        "tests/data/parity/render_qwen3_2507_{variant}.jsonl"
    ));
    assert!(rows.len() >= 200);
    let mut failures = Vec::new();
    for (i, case) in rows.iter().enumerate() {
        let messages = case["messages"].as_array().unwrap();
        let client = client_messages(messages);
        let want = case["text"].as_str().unwrap();
        let want_ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        for (form, messages) in [("server", messages), ("client", &client)] {
            let input = RenderInput {
                messages,
                tools: case
                    .get("tools")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice),
                add_generation_prompt: case["add_generation_prompt"].as_bool().unwrap(),
                chat_template_kwargs: None,
            };
            match p.render(&input) {
                Ok(text) if text == want => {
                    if p.tokenizer.encode(&text) != want_ids {
                        failures.push(format!("{}: {form}: ids differ", i + 1));
                    }
                }
                Ok(text) => failures.push(format!(
                    "{}: {form}: text differs\n  want {want:?}\n  got  {text:?}",
                    i + 1
                )),
                Err(e) => failures.push(format!("{}: {form}: {e}", i + 1)),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{variant}: {} of {} renders differ:\n{}",
        failures.len(),
        rows.len() * 2,
        failures[..failures.len().min(4)].join("\n")
    );
}

#[test]
fn parity_qwen3_2507_instruct() {
    assert_eq!(profile("instruct").family, Family::QWEN3_2507);
    check_parity("instruct");
}

#[test]
fn parity_qwen3_2507_thinking() {
    assert_eq!(profile("thinking").family, Family::QWEN3_2507_THINKING);
    check_parity("thinking");
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
    let mut rows = jsonl("tests/data/qwen3_2507/parser_shapes.jsonl");
    let header = rows.remove(0);
    (header["tools"].as_array().unwrap().clone(), rows)
}

fn calls(row: &Value) -> Vec<(String, String)> {
    row["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap().to_string();
            (name, c["arguments"].as_str().unwrap().to_string())
        })
        .collect()
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
        let parsed = parse(text, thinking, true, false);
        let content = parsed.content.filter(|c| !c.is_empty());
        assert_eq!(
            parsed.reasoning.as_deref(),
            row["reasoning"].as_str(),
            "{text:?}"
        );
        assert_eq!(content.as_deref(), row["content"].as_str(), "{text:?}");
        let got: Vec<(String, String)> = parsed
            .calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect();
        assert_eq!(got, calls(row), "{text:?}");
    }
}

/// The answer vLLM 0.33 sends for one row (non-streamed), with its usage.
fn answer(row: &Value, prompt_tokens: usize) -> Value {
    let text = row["text"].as_str().unwrap();
    let ids = row["ids"].as_array().unwrap().len();
    let cut = text.ends_with(", cut");
    let calls: Vec<Value> = calls(row)
        .into_iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            json!({"id": format!("chatcmpl-tool-{i:032x}"), "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    let finish = match (cut, calls.is_empty()) {
        (true, _) => "length",
        (false, false) => "tool_calls",
        (false, true) => "stop",
    };
    // vLLM's serving nulls a whitespace-only content beside calls (`hermes::TRAITS`).
    let content = match row["content"].as_str() {
        Some(c) if c.trim().is_empty() && !calls.is_empty() => Value::Null,
        _ => row["content"].clone(),
    };
    let mut message = json!({"role": "assistant", "content": content,
                             "reasoning": row["reasoning"]});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "qwen3-2507",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens,
                  "completion_tokens": ids + usize::from(!cut),
                  "total_tokens": prompt_tokens + ids + usize::from(!cut)}
    })
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
        check_reconstruction(&p, &tools, &rows);
    }
}

fn check_reconstruction(p: &Profile, tools: &[Value], rows: &[&Value]) {
    let request = ExchangeRequest {
        messages: vec![json!({"role": "user", "content": "Weather in Paris?"})],
        tools: Some(tools.to_vec()),
        chat_template_kwargs: None,
        stream: Some(false),
        max_tokens: None,
    };
    let prompt_tokens = p.render_ids(&request.render_input()).unwrap().len();
    let end = p.tokenizer.encode("<|im_end|>");
    let options = ReconstructOptions {
        kind: ServerKind::Vllm,
        ..ReconstructOptions::default()
    };
    let mut exact = 0;
    let mut failures = Vec::new();
    for row in rows {
        let text = row["text"].as_str().unwrap();
        let mut want: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
        if !text.ends_with(", cut") {
            want.extend(&end);
        }
        let got = reconstruct(p, &request, &answer(row, prompt_tokens), &options).unwrap();
        let certain = got.fidelity.class.is_exact();
        if certain && got.completion_ids != want {
            failures.push(format!(
                "{text:?}: {:?} but rebuilt {:?}",
                got.fidelity.class,
                p.tokenizer.decode(&got.completion_ids)
            ));
        }
        if !certain && got.warnings.is_empty() {
            failures.push(format!("{text:?}: {:?} without a warning", got.fidelity));
        }
        exact += usize::from(certain && got.completion_ids == want);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        exact * 2 >= rows.len(),
        "only {exact} of {} rebuilt exactly",
        rows.len()
    );
}
