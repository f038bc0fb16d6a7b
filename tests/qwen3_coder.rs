//! Qwen3-Coder, proven against references nobody here wrote:
//!
//! - render parity: transformers' `render_jinja_template` with llama.cpp's `Qwen3-Coder.jinja`
//!   and with Qwen3-Coder-30B-A3B-Instruct's own template (`tests/data/parity/render_qwen3_coder*.jsonl`,
//!   made by `tests/data/gen/make_parity_qwen3_coder.py`) — the text, the Qwen3 tokenizer's ids,
//!   and the same render from the messages as clients send them (arguments as JSON strings);
//! - the server shape: what vLLM 0.33.0's own `qwen3_coder` parser returns for known model texts
//!   (`tests/data/qwen3_coder/parser_shapes.jsonl`, made by
//!   `tests/data/gen/make_qwen3_coder_shapes.py` running the wheel's code), against
//!   `server::qwen3_coder::parse`;
//! - reconstruction of those answers: the model's true ids, or a non-exact class with a reason.

mod common;

use common::assets;
use draftgen::api::ServerKind;
use draftgen::completion::{Arguments, ToolCall};
use draftgen::model::family::{qwen3_coder, AssistantTurn, Family};
use draftgen::model::{LoadOptions, Profile, RenderInput};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use draftgen::server::qwen3_coder::parse;
use serde_json::{json, Value};
use std::path::Path;

const TEMPLATE: &str = "templates/qwen3-coder.jinja";

fn profile() -> Profile {
    profile_with(TEMPLATE)
}

fn profile_with(template: &str) -> Profile {
    let options = LoadOptions {
        profile: Some("qwen3-coder".into()),
        chat_template: Some(assets().join(template)),
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

#[test]
fn parity_qwen3_coder() {
    check_parity(TEMPLATE, "render_qwen3_coder.jsonl");
}

/// The template Qwen3-Coder-30B-A3B-Instruct's `tokenizer_config.json` carries (what a model
/// directory downloaded from the hub renders with).
#[test]
fn parity_qwen3_coder_30b_a3b() {
    check_parity(
        "templates/qwen3-coder-30b-a3b.jinja",
        "render_qwen3_coder_30b_a3b.jsonl",
    );
}

fn check_parity(template: &str, corpus: &str) {
    let p = profile_with(template);
    assert_eq!(p.family, Family::QWEN3_CODER);
    let rows = jsonl(&format!("tests/data/parity/{corpus}"));
    assert!(rows.len() >= 200);
    let mut failures = Vec::new();
    for (i, case) in rows.iter().enumerate() {
        let messages = case["messages"].as_array().unwrap();
        let tools = case.get("tools").and_then(Value::as_array);
        let want = case["text"].as_str().unwrap();
        let want_ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        let client = client_messages(messages);
        for (form, messages) in [("server", messages), ("client", &client)] {
            let input = RenderInput {
                messages,
                tools: tools.map(Vec::as_slice),
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
        "{} of {} renders differ:\n{}",
        failures.len(),
        rows.len() * 2,
        failures[..failures.len().min(4)].join("\n")
    );
}

/// The built-in template is the one the parity corpus was rendered with, byte for byte.
#[test]
fn builtin_template_is_llama_cpps() {
    let builtin = Family::QWEN3_CODER.spec().builtin_template.unwrap();
    let reference = std::fs::read_to_string(assets().join(TEMPLATE)).unwrap();
    assert_eq!(builtin, reference);
}

fn shapes() -> (Vec<Value>, Vec<Value>) {
    let mut rows = jsonl("tests/data/qwen3_coder/parser_shapes.jsonl");
    let header = rows.remove(0);
    (header["tools"].as_array().unwrap().clone(), rows)
}

fn calls(row: &Value) -> Vec<(String, String)> {
    calls_in(row, "calls")
}

fn calls_in(row: &Value, key: &str) -> Vec<(String, String)> {
    row[key]
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
fn parse_returns_what_vllms_parser_returns() {
    let (tools, rows) = shapes();
    assert_eq!(rows.len(), 23);
    let p = profile();
    let mut streams = 0;
    for row in &rows {
        let text = row["text"].as_str().unwrap();
        let want_ids: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
        assert_eq!(p.tokenizer.encode(text), want_ids, "{text:?}");
        let parsed = parse(text, true, false, Some(&tools));
        assert_eq!(parsed.unmodelled, None, "{text:?}");
        assert_eq!(
            parsed.content.as_deref(),
            row["content"].as_str(),
            "{text:?}"
        );
        let got: Vec<(String, String)> = parsed
            .calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect();
        assert_eq!(got, calls(row), "{text:?}");
        // Streamed: where the parse models the stream, what the wheel's stream assembles to.
        let streamed = parse(text, true, true, Some(&tools));
        if streamed.unmodelled.is_none() {
            assert_eq!(
                streamed.content.as_deref(),
                row["stream_content"].as_str(),
                "stream {text:?}"
            );
            let got: Vec<(String, String)> = streamed
                .calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect();
            assert_eq!(got, calls_in(row, "stream_calls"), "stream {text:?}");
            streams += 1;
        }
    }
    assert!(streams >= 18, "only {streams} streams modelled");
}

/// Every finished answer whose values are all strings and whose text is laid out as the
/// template writes calls is rebuilt to the model's text exactly.
#[test]
fn completion_text_inverts_the_parser() {
    let (_, rows) = shapes();
    let mut checked = 0;
    for row in &rows {
        let text = row["text"].as_str().unwrap();
        let laid_out = text.ends_with("</function>\n</tool_call>")
            && (text.starts_with("<tool_call>\n<function=") || text.contains(".\n\n<tool_call>"))
            && text.matches("\n</parameter>\n").count() == text.matches("<parameter=").count();
        let strings_only = calls(row).iter().all(|(_, args)| {
            let args: Value = serde_json::from_str(args).unwrap();
            args.as_object().unwrap().values().all(Value::is_string)
        });
        if !(laid_out && strings_only) {
            continue;
        }
        let turn = AssistantTurn {
            content: row["content"].as_str().unwrap_or_default().to_string(),
            tool_calls: calls(row)
                .into_iter()
                .map(|(name, arguments)| ToolCall {
                    id: None,
                    name,
                    arguments: Arguments::Raw(arguments),
                })
                .collect(),
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        let want = format!("{text}<|im_end|>");
        assert_eq!(qwen3_coder::completion_text(&turn), want);
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} answers checked");
}

/// The answer vLLM 0.33 sends for one row (assembled, when streamed), with its usage.
fn answer(row: &Value, prompt_tokens: usize, stream: bool) -> Value {
    let (content_key, calls_key) = match stream {
        true => ("stream_content", "stream_calls"),
        false => ("content", "calls"),
    };
    let text = row["text"].as_str().unwrap();
    let ids = row["ids"].as_array().unwrap().len();
    let cut = text.ends_with("\nls");
    let calls: Vec<Value> = calls_in(row, calls_key)
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
    let mut message = json!({"role": "assistant", "content": row[content_key]});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "qwen3-coder",
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
    let p = profile();
    for stream in [false, true] {
        check_reconstruction(&p, &tools, &rows, stream);
    }
}

fn check_reconstruction(p: &Profile, tools: &[Value], rows: &[Value], stream: bool) {
    let request = ExchangeRequest {
        messages: vec![json!({"role": "user", "content": "Weather in Paris?"})],
        tools: Some(tools.to_vec()),
        chat_template_kwargs: None,
        stream: Some(stream),
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
        if !text.ends_with("\nls") {
            want.extend(&end);
        }
        let answer = answer(row, prompt_tokens, stream);
        let got = reconstruct(p, &request, &answer, &options).unwrap();
        let certain = got.fidelity.class.is_exact();
        if certain && got.completion_ids != want {
            failures.push(format!(
                "{text:?} (stream: {stream}): {:?} but rebuilt {:?}",
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
        exact >= 8,
        "stream {stream}: only {exact} of {} rebuilt exactly",
        rows.len()
    );
}

/// Without `--profile`, each Qwen template picks its family (Qwen3's tokenizer files, whose own
/// template is Qwen3's).
#[test]
fn templates_pick_their_family() {
    for (template, family) in [
        ("templates/qwen3-coder.jinja", Family::QWEN3_CODER),
        ("templates/qwen3-coder-30b-a3b.jinja", Family::QWEN3_CODER),
        ("templates/qwen3-2507-instruct.jinja", Family::QWEN3_2507),
        (
            "templates/qwen3-2507-thinking.jinja",
            Family::QWEN3_2507_THINKING,
        ),
    ] {
        let options = LoadOptions {
            profile: None,
            chat_template: Some(assets().join(template)),
        };
        let p = Profile::load(&assets().join("qwen3"), &options).unwrap();
        assert_eq!(p.family, family, "{template}");
    }
    let own = Profile::load(&assets().join("qwen3"), &LoadOptions::default()).unwrap();
    assert_eq!(own.family, Family::QWEN3);
}
