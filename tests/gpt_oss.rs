//! gpt-oss (harmony), held to references nobody here wrote:
//! - render parity with transformers' `apply_chat_template` and llama.cpp's
//!   `openai-gpt-oss-120b.jinja` (`tests/data/parity/render_gpt_oss.jsonl`, made by
//!   `tests/data/gen/make_parity_gpt_oss.py`): system/developer messages, tools, tool rounds,
//!   reasoning in `thinking`, `reasoning_effort`;
//! - the server shape: what vLLM 0.33.0's `HarmonyParser` (on OpenAI's `openai_harmony`) returns
//!   for true gpt-oss token streams, streamed (`parse_delta`) or not
//!   (`tests/data/gpt_oss/parser_shapes.jsonl`, made by
//!   `tests/data/gen/make_gpt_oss_shapes.py`), against `server::gpt_oss::parse`;
//! - the reconstruction of those answers: the true ids, or a flag saying they are not certain.

mod common;

use draftgen::api::ServerKind;
use draftgen::model::family::Family;
use draftgen::model::{LoadOptions, Profile, RenderInput};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use draftgen::server::gpt_oss::parse;
use serde_json::{json, Value};
use std::path::Path;

use common::assets;

fn lines(relative: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The tokenizer directory, detected as gpt-oss (its `tokenizer_config.json` has no template:
/// the built-in one renders).
fn profile() -> Profile {
    Profile::load(&assets().join("gpt-oss"), &LoadOptions::default()).unwrap()
}

/// `text` with the day the template wrote (`Current date: YYYY-MM-DD`) replaced by `date`.
fn dated(text: &str, date: &str) -> String {
    const AT: &str = "Current date: ";
    match text.find(AT) {
        Some(at) => {
            let start = at + AT.len();
            let end = (start + date.len()).min(text.len());
            format!("{}{date}{}", &text[..start], &text[end..])
        }
        None => text.to_string(),
    }
}

#[test]
fn known_names_resolve_to_the_gpt_oss_files() {
    use draftgen::model::assets::known_repo;
    assert_eq!(known_repo("gpt-oss"), Some("openai/gpt-oss-120b"));
    assert_eq!(known_repo("openai/gpt-oss-20b"), Some("openai/gpt-oss-20b"));
    let dir = draftgen::model::assets::resolve_model("gpt-oss-20b").unwrap();
    assert_eq!(dir, assets().join("gpt-oss"));
}

#[test]
fn detected_from_its_directory_with_the_builtin_template() {
    let p = profile();
    assert_eq!(p.family, Family::GPT_OSS);
    let builtin = Family::GPT_OSS.spec().builtin_template.unwrap();
    let reference =
        std::fs::read_to_string(assets().join("templates/openai-gpt-oss-120b.jinja")).unwrap();
    assert_eq!(builtin, reference);
    for marker in [
        "<|start|>",
        "<|channel|>",
        "<|message|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|constrain|>",
    ] {
        assert_eq!(p.tokenizer.encode(marker).len(), 1, "{marker}");
    }
}

/// Every line of the corpus: the text transformers rendered (the day put in place of ours), and
/// its ids.
#[test]
fn parity_gpt_oss() {
    let p = profile();
    let rows = lines("tests/data/parity/render_gpt_oss.jsonl");
    assert!(rows.len() >= 200, "only {} cases", rows.len());
    let mut failures = Vec::new();
    for (index, case) in rows.iter().enumerate() {
        let input = RenderInput {
            messages: case["messages"].as_array().unwrap(),
            tools: case
                .get("tools")
                .and_then(Value::as_array)
                .map(Vec::as_slice),
            add_generation_prompt: case["add_generation_prompt"].as_bool().unwrap_or(false),
            chat_template_kwargs: case.get("chat_template_kwargs").and_then(Value::as_object),
        };
        let want_text = case["text"].as_str().unwrap();
        let want_ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        match p.render(&input) {
            Ok(text) => {
                let text = dated(&text, case["date"].as_str().unwrap());
                if text != want_text {
                    failures.push(format!(
                        "line {}: text differs\n  want {want_text:?}\n  got  {text:?}",
                        index + 1
                    ));
                } else if p.tokenizer.encode(&text) != want_ids {
                    failures.push(format!("line {}: ids differ", index + 1));
                }
            }
            Err(e) => failures.push(format!("line {}: {e}", index + 1)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        rows.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

/// What the server parsed out of one corpus row: (reasoning, content, [(name, arguments)]).
type Fields = (Option<String>, Option<String>, Vec<(String, String)>);

fn want_fields(row: &Value) -> Fields {
    let calls = row["calls"].as_array().unwrap().iter();
    (
        row["reasoning"].as_str().map(str::to_string),
        row["content"].as_str().map(str::to_string),
        calls
            .map(|c| {
                let field = |k: &str| c[k].as_str().unwrap().to_string();
                (field("name"), field("arguments"))
            })
            .collect(),
    )
}

#[test]
fn parse_returns_what_vllms_harmony_parser_returns() {
    let rows = lines("tests/data/gpt_oss/parser_shapes.jsonl");
    assert_eq!(rows.len(), 28);
    for row in &rows {
        let stream = row["stream"].as_bool().unwrap();
        let text = row["text"].as_str().unwrap();
        // What `forward` is handed: the text without the end-of-turn `<|return|>`.
        let stop = row["stop"].as_str().unwrap();
        let given = if stop == "<|call|>" {
            format!("{text}{stop}")
        } else {
            text.to_string()
        };
        let parsed = parse(&given, stream);
        let calls = parsed.calls.iter();
        let got: Fields = (
            parsed.reasoning.clone(),
            parsed.content.clone(),
            calls
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect(),
        );
        assert_eq!(got, want_fields(row), "{text} (stream: {stream})");
        assert_eq!(parsed.stopped, stop == "<|call|>", "{text}");
    }
}

/// The answer vLLM 0.33 sends for one corpus row (its fields, its count, a minted call id).
fn answer(row: &Value, prompt_tokens: usize) -> Value {
    let (reasoning, content, calls) = want_fields(row);
    let stop = row["stop"].as_str().unwrap();
    let finish = match (stop, calls.is_empty()) {
        ("", _) => "length",
        (_, false) => "tool_calls",
        _ => "stop",
    };
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            json!({"id": format!("chatcmpl-tool-{i:024x}"), "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": content, "reasoning": reasoning});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens,
                  "completion_tokens": row["ids"].as_array().unwrap().len()},
    })
}

/// Each answer of the corpus rebuilt from what vLLM 0.33 sent, streamed or not: the model's true
/// ids whenever the reconstruction calls them exact, and every answer written in the model's own
/// header form with one reasoning message exact (7 unstreamed, 9 streamed: a stream keeps the
/// arguments as written). The others are flagged: what the parser destroyed there (the
/// older header, a missing content type, two reasoning messages joined by `\n`, an empty one
/// dropped, re-serialized numbers, a cut inside a header or the arguments) the answer cannot show.
#[test]
fn reconstruction_of_vllms_answers_is_never_wrong_without_a_flag() {
    let p = profile();
    let tool = |name: &str| {
        json!({"type": "function", "function": {"name": name, "description": "A tool.",
               "parameters": {"type": "object", "properties": {}}}})
    };
    let mut request = ExchangeRequest {
        messages: vec![json!({"role": "user", "content": "What is the weather in Paris?"})],
        tools: Some(vec![tool("get_weather"), tool("run"), tool("f")]),
        chat_template_kwargs: None,
        stream: None,
        max_tokens: None,
    };
    let prompt = p.render(&request.render_input()).unwrap();
    let prompt_tokens = p.tokenizer.encode(&prompt).len();
    let options = ReconstructOptions {
        kind: ServerKind::Vllm,
        ..ReconstructOptions::default()
    };
    let (mut exact, mut wrong) = ([0, 0], Vec::new());
    let rows = lines("tests/data/gpt_oss/parser_shapes.jsonl");
    for row in &rows {
        let stream = row["stream"].as_bool().unwrap();
        request.stream = Some(stream);
        let truth: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
        let rebuilt = reconstruct(&p, &request, &answer(row, prompt_tokens), &options).unwrap();
        let class = rebuilt.fidelity.class;
        if class.is_exact() {
            if rebuilt.completion_ids == truth {
                exact[usize::from(stream)] += 1;
            } else {
                wrong.push(format!("{} (stream: {stream}): {class:?}", row["text"]));
            }
        }
    }
    assert!(wrong.is_empty(), "wrong without a flag: {wrong:#?}");
    assert!(exact[0] >= 7, "only {} of the unstreamed exact", exact[0]);
    assert!(exact[1] >= 7, "only {} of the streamed exact", exact[1]);
}

/// The prompt is rebuilt with the day the server rendered it (the answer's `created`), not the
/// day of the rebuild: transformers' render of a corpus conversation with that day put in.
#[test]
fn the_prompt_has_the_day_the_server_answered() {
    let p = profile();
    let rows = lines("tests/data/parity/render_gpt_oss.jsonl");
    let case = rows
        .iter()
        .find(|c| c["add_generation_prompt"] == json!(true) && c.get("tools").is_some())
        .unwrap();
    let request = ExchangeRequest {
        messages: case["messages"].as_array().unwrap().clone(),
        tools: case["tools"].as_array().cloned(),
        chat_template_kwargs: case
            .get("chat_template_kwargs")
            .and_then(Value::as_object)
            .cloned(),
        stream: Some(false),
        max_tokens: None,
    };
    // 2025-08-05T23:00:00Z (Python: datetime.fromtimestamp(1754434800, timezone.utc)).
    let created = 1_754_434_800;
    let response = json!({
        "created": created,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                     "reasoning": "Hi.", "content": "Hello!"}}],
    });
    let options = ReconstructOptions {
        kind: ServerKind::Vllm,
        ..ReconstructOptions::default()
    };
    let rebuilt = reconstruct(&p, &request, &response, &options).unwrap();
    let want = dated(case["text"].as_str().unwrap(), "2025-08-05");
    assert_eq!(rebuilt.prompt_ids, p.tokenizer.encode(&want));
}

/// vLLM does not render gpt-oss prompts with the chat template but with `openai_harmony`
/// (`tests/data/gpt_oss/vllm_prompts.jsonl`, made by `tests/data/gen/make_gpt_oss_vllm_prompts.py`
/// from the corpus conversations that ask for a generation prompt). Measured: which prompts it
/// renders as the template does, which differ in their count (the answer's `prompt_tokens` flags
/// those), and that the only difference of the same count is the developer message's blank line
/// after the instructions, which harmony does not write (`.\n\n` and `.` are one token each),
/// which the reconstruction flags (below).
#[test]
fn vllm_renders_prompts_with_harmony_not_the_template() {
    let p = profile();
    let corpus = lines("tests/data/parity/render_gpt_oss.jsonl");
    let (mut same, mut counted, mut blank_line) = (0, 0, 0);
    for row in lines("tests/data/gpt_oss/vllm_prompts.jsonl") {
        let case = &corpus[row["line"].as_u64().unwrap() as usize - 1];
        let vllm: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
        let template: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        if vllm == template {
            same += 1;
        } else if vllm.len() != template.len() {
            counted += 1;
        } else {
            let instructions = case["messages"][0]["content"].as_str().unwrap();
            let harmony = case["text"].as_str().unwrap().replacen(
                &format!("{instructions}\n\n<|end|>"),
                &format!("{instructions}<|end|>"),
                1,
            );
            assert_eq!(p.tokenizer.decode(&vllm), harmony, "{}", row["line"]);
            blank_line += 1;
        }
    }
    assert_eq!((same, counted, blank_line), (32, 85, 40));
}

/// The one difference the count cannot show (above) is flagged: a request with a system message
/// and no tools is `ambiguous` (`prompt_render_differs`) unless the server sent its prompt ids.
#[test]
fn a_system_message_without_tools_is_flagged() {
    let p = profile();
    let options = ReconstructOptions {
        kind: ServerKind::Vllm,
        ..ReconstructOptions::default()
    };
    let answer = json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                     "reasoning": "Hi.", "content": "Hello!"}}],
    });
    let tool = json!({"type": "function", "function": {"name": "f", "description": "F.",
                      "parameters": {"type": "object", "properties": {}}}});
    let system = json!({"role": "system", "content": "Be brief."});
    let user = json!({"role": "user", "content": "Hi"});
    for (messages, tools, doubted) in [
        (vec![system.clone(), user.clone()], None, true),
        (vec![system, user.clone()], Some(vec![tool]), false),
        (vec![user], None, false),
    ] {
        let request = ExchangeRequest {
            messages,
            tools,
            ..ExchangeRequest::default()
        };
        let rebuilt = reconstruct(&p, &request, &answer, &options).unwrap();
        let flagged = rebuilt
            .fidelity
            .reasons
            .contains(&draftgen::reconstruct::Reason::PromptRenderDiffers);
        assert_eq!(flagged, doubted, "{:?}", request.messages);
        assert_eq!(!rebuilt.fidelity.class.is_exact(), doubted);
    }
}

/// End to end: `generate` against the simulator serving gpt-oss as vLLM 0.33 (its harmony parser:
/// arguments re-serialized, ids minted), then `build`: every sample written, each rebuilt exactly.
#[test]
fn generate_and_build_against_the_simulator() {
    use common::run::{jsonl as samples_of, stderr, RunDir};
    use common::servers::start_sim;

    let dir = RunDir::new();
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "description": "Weather of a city.", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    dir.write_prompts((0..6).map(|i| {
        let mut prompt = json!({"id": format!("p{i}"), "source": "t", "messages": [
            {"role": "user", "content": format!("Question {i}: the weather in Paris?")}]});
        if i % 2 == 0 {
            prompt["tools"] = tools.clone();
        }
        prompt
    }));
    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 21,
        flavor: draftgen::sim::Flavor::Vllm,
        model_dir: Some(assets().join("gpt-oss")),
        ..draftgen::sim::SimConfig::default()
    });
    let o = dir
        .generate(&sim.base_url())
        .args(["--model", "openai/gpt-oss-120b", "--kind", "vllm"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let model = assets().join("gpt-oss");
    let o = dir
        .build(model.to_str().unwrap(), "out")
        .arg("--jsonl")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // Each answer rebuilt exactly, as `build` did.
    let p = profile();
    let options = ReconstructOptions {
        kind: ServerKind::Vllm,
        ..ReconstructOptions::default()
    };
    for record in dir.journal() {
        let request = draftgen::build::read_request(&record["request"]).unwrap();
        let rebuilt = reconstruct(&p, &request, &record["response"], &options).unwrap();
        let class = rebuilt.fidelity.class;
        assert!(
            class.is_exact(),
            "{}: {class:?} {:?}",
            record["id"],
            rebuilt.warnings
        );
    }
    let samples = samples_of(&dir.join("out").join("samples.jsonl"));
    assert_eq!(samples.len(), 6, "{}", stderr(&o));
}

/// Multi-turn (`generate --turns all`): each earlier answer ends in history with `<|end|>`, not
/// the end-of-turn `<|return|>`; the build lays the conversation out in one row.
#[test]
fn a_regenerated_conversation_builds_one_row() {
    use common::run::{jsonl as samples_of, stderr, RunDir};
    use common::servers::start_sim;

    let dir = RunDir::new();
    dir.write_prompts([json!({"id": "conv", "source": "t", "messages": [
        {"role": "user", "content": "Name a prime number."},
        {"role": "assistant", "content": "Seven."},
        {"role": "user", "content": "And a larger one?"},
        {"role": "assistant", "content": "Thirteen."}
    ]})]);
    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 5,
        flavor: draftgen::sim::Flavor::Vllm,
        model_dir: Some(assets().join("gpt-oss")),
        ..draftgen::sim::SimConfig::default()
    });
    let o = dir
        .generate(&sim.base_url())
        .args([
            "--turns",
            "all",
            "--model",
            "openai/gpt-oss-20b",
            "--kind",
            "vllm",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let model = assets().join("gpt-oss");
    let o = dir
        .build(model.to_str().unwrap(), "out")
        .arg("--jsonl")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let samples = samples_of(&dir.join("out").join("samples.jsonl"));
    assert_eq!(samples.len(), 1, "{}", stderr(&o));
    assert_eq!(samples[0]["turns"], 2, "{}", samples[0]);
}
