//! What the family tests (`tests/<family>.rs`) share: reading their corpora, the render-parity
//! check against what transformers rendered, the calls of a parsed answer and of a corpus row,
//! the answer vLLM 0.33 sends for a row, and the rule every rebuild is held to — classed exact,
//! the model's true ids; otherwise a warning that says why not.

use std::path::Path;

use draftgen::api::ServerKind;
use draftgen::completion::{Arguments, ToolCall};
use draftgen::model::{Profile, RenderInput};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions, Reconstruction};
use draftgen::server::{Parsed, ParsedCall};
use serde_json::{json, Value};

/// A JSONL file of the repository (`tests/data/…`), one value a line.
pub fn corpus(relative: &str) -> Vec<Value> {
    super::run::jsonl(&Path::new(env!("CARGO_MANIFEST_DIR")).join(relative))
}

/// The messages as an OpenAI client writes them: tool-call arguments as JSON strings.
pub fn client_messages(messages: &[Value]) -> Vec<Value> {
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

/// Which forms of a parity row's messages are rendered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Forms {
    /// As stored: what the servers hand the template.
    Server,
    /// Also as clients send them ([`client_messages`]), which the servers parse first.
    ServerAndClient,
    /// Also as the generator wrote them for clients where a row has them (`client_messages`:
    /// content missing, `null` or a list of parts), else as stored.
    ServerClientAndWritten,
}

/// Every row of the parity corpus `tests/data/parity/{file}` rendered by `p`: the text
/// transformers rendered (`as_rendered` puts in what the row fixes, such as the day the template
/// wrote) and its ids.
pub fn check_parity(
    p: &Profile,
    file: &str,
    forms: Forms,
    as_rendered: impl Fn(&Value, String) -> String,
) {
    let rows = corpus(&format!("tests/data/parity/{file}"));
    assert!(rows.len() >= 200, "{file}: only {} rows", rows.len());
    let mut failures = Vec::new();
    for (i, case) in rows.iter().enumerate() {
        let messages = case["messages"].as_array().unwrap();
        let client = client_messages(messages);
        let mut all = vec![("server", messages)];
        if forms != Forms::Server {
            all.push(("client", &client));
        }
        if forms == Forms::ServerClientAndWritten {
            let written = case.get("client_messages").and_then(Value::as_array);
            all.push(("as written", written.unwrap_or(messages)));
        }
        let want = case["text"].as_str().unwrap();
        let want_ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        for (form, messages) in all {
            let input = RenderInput {
                messages,
                tools: case
                    .get("tools")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice),
                add_generation_prompt: case["add_generation_prompt"].as_bool().unwrap(),
                chat_template_kwargs: case.get("chat_template_kwargs").and_then(Value::as_object),
            };
            match p.render(&input).map(|text| as_rendered(case, text)) {
                Ok(text) if text == want => {
                    if p.tokenizer.encode(&text) != want_ids {
                        failures.push(format!("line {}: {form}: ids differ", i + 1));
                    }
                }
                Ok(text) => failures.push(format!(
                    "line {}: {form}: text differs\n  want {want:?}\n  got  {text:?}",
                    i + 1
                )),
                Err(e) => failures.push(format!("line {}: {form}: {e}", i + 1)),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{file}: {} renders differ:\n{}",
        failures.len(),
        failures[..failures.len().min(4)].join("\n")
    );
}

/// `(name, arguments)` of each call a parser returned.
pub fn parsed_calls(calls: &[ParsedCall]) -> Vec<(String, String)> {
    calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

/// `(name, arguments)` of each call in a corpus row's list `key` (`calls`, `stream_calls`).
pub fn row_calls(row: &Value, key: &str) -> Vec<(String, String)> {
    row[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().unwrap().to_string();
            (field("name"), field("arguments"))
        })
        .collect()
}

/// A row's `calls` as the model's tool calls (no id, the arguments as written).
pub fn row_tool_calls(row: &Value) -> Vec<ToolCall> {
    row_calls(row, "calls")
        .into_iter()
        .map(|(name, arguments)| ToolCall {
            id: None,
            name,
            arguments: Arguments::Raw(arguments),
        })
        .collect()
}

/// A parser's answer to the row's `text` is the row's `reasoning`, `content` (an empty one sent
/// as none, as vLLM does) and `calls`.
pub fn assert_parsed_as_row(parsed: Parsed, row: &Value) {
    let text = &row["text"];
    let content = parsed.content.filter(|c| !c.is_empty());
    assert_eq!(
        parsed.reasoning.as_deref(),
        row["reasoning"].as_str(),
        "{text}"
    );
    assert_eq!(content.as_deref(), row["content"].as_str(), "{text}");
    let calls = parsed_calls(&parsed.calls);
    assert_eq!(calls, row_calls(row, "calls"), "{text}");
}

/// Reconstruction as of a vLLM server, its version left to the newest.
pub fn vllm_options() -> ReconstructOptions {
    ReconstructOptions {
        kind: ServerKind::Vllm,
        ..ReconstructOptions::default()
    }
}

/// The chat.completion vLLM 0.33 sends: `message` with `calls` (ids minted, `chatcmpl-tool-…`),
/// finished by `length` when `cut`, else by `tool_calls` when there are calls, else `stop`.
pub fn vllm_answer(
    mut message: Value,
    calls: &[(String, String)],
    cut: bool,
    prompt_tokens: usize,
    completion_tokens: usize,
) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            json!({"id": format!("chatcmpl-tool-{i:032x}"), "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    let finish = match (cut, tool_calls.is_empty()) {
        (true, _) => "length",
        (false, false) => "tool_calls",
        (false, true) => "stop",
    };
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}
    })
}

/// A one-question request ("Weather in Paris?") with `tools`, and its prompt's length.
pub fn weather_request(p: &Profile, tools: &[Value], stream: bool) -> (ExchangeRequest, usize) {
    let request = ExchangeRequest {
        messages: vec![json!({"role": "user", "content": "Weather in Paris?"})],
        tools: Some(tools.to_vec()),
        chat_template_kwargs: None,
        stream: Some(stream),
        max_tokens: None,
    };
    let prompt_tokens = p.render_ids(&request.render_input()).unwrap().len();
    (request, prompt_tokens)
}

/// A row's true completion ids: its `ids`, then `end` (the end-of-turn marker) unless cut.
pub fn true_ids(p: &Profile, row: &Value, cut: bool, end: &str) -> Vec<u32> {
    let mut ids: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
    if !cut {
        ids.extend(p.tokenizer.encode(end));
    }
    ids
}

/// What a rebuild is, held to the true ids.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Classed exact, and the true ids.
    Exact,
    /// Not classed exact, with a warning saying why.
    Flagged,
    /// Classed exact with other ids, or not exact without a warning.
    Wrong(String),
}

/// `got` held to `truth`.
pub fn verdict(p: &Profile, got: &Reconstruction, truth: &[u32]) -> Verdict {
    let class = got.fidelity.class;
    if class.is_exact() && got.completion_ids != truth {
        let rebuilt = p.tokenizer.decode(&got.completion_ids);
        Verdict::Wrong(format!("{class:?} but rebuilt {rebuilt:?}"))
    } else if class.is_exact() {
        Verdict::Exact
    } else if got.warnings.is_empty() {
        Verdict::Wrong(format!("{:?} without a warning", got.fidelity))
    } else {
        Verdict::Flagged
    }
}

/// Each `(label, answer, truth)` rebuilt against `request` as `options` say; panics listing
/// every wrong one, else returns how many are exact.
pub fn rebuild_all(
    p: &Profile,
    request: &ExchangeRequest,
    options: &ReconstructOptions,
    cases: impl IntoIterator<Item = (String, Value, Vec<u32>)>,
) -> usize {
    let (mut exact, mut failures) = (0, Vec::new());
    for (label, answer, truth) in cases {
        let got = reconstruct(p, request, &answer, options).unwrap();
        match verdict(p, &got, &truth) {
            Verdict::Exact => exact += 1,
            Verdict::Flagged => {}
            Verdict::Wrong(why) => failures.push(format!("{label}: {why}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    exact
}
