//! Requests as clients write them (an assistant with `tool_calls` and no `content` key,
//! `content: null`, `content` as a list of text parts) render as the servers render them, never
//! an error. Expected text and ids: `tests/data/client_messages/expected.jsonl`, made by
//! `tests/data/gen/make_client_messages.py` (the servers' normalization, then transformers'
//! `apply_chat_template`).

mod common;

use draftgen::model::client_messages::parts_join_differs;
use draftgen::model::{LoadOptions, Profile, RenderInput};
use serde_json::Value;
use std::path::Path;

use common::assets;

fn load(family: &str) -> Profile {
    let (dir, profile, template) = match family {
        "kimi_k2" => ("kimi-k2.5", "kimi-k2.5", Some("templates/kimi-k2.jinja")),
        "qwen3" => ("qwen3", "qwen3", None),
        "deepseek_v3" => ("deepseek-v3", "deepseek-v3", None),
        other => panic!("unknown family {other}"),
    };
    Profile::load(
        &assets().join(dir),
        &LoadOptions {
            profile: Some(profile.into()),
            chat_template: template.map(|t| assets().join(t)),
        },
    )
    .unwrap_or_else(|e| panic!("loading {family}: {e}"))
}

fn rows() -> Vec<Value> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/client_messages/expected.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn client_messages_render_as_the_servers_do() {
    let rows = rows();
    assert_eq!(rows.len(), 15);
    for family in ["kimi_k2", "qwen3", "deepseek_v3"] {
        let profile = load(family);
        for row in rows.iter().filter(|r| r["family"] == family) {
            let case = row["case"].as_str().unwrap();
            let messages = row["messages"].as_array().unwrap();
            let tools = row["tools"].as_array().map(Vec::as_slice);
            let input = RenderInput {
                messages,
                tools,
                add_generation_prompt: row["add_generation_prompt"].as_bool().unwrap(),
                chat_template_kwargs: None,
            };
            let text = profile
                .render(&input)
                .unwrap_or_else(|e| panic!("{family} {case}: {e}"));
            assert_eq!(text, row["text"].as_str().unwrap(), "{family} {case}");
            let ids: Vec<u32> = row["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as u32)
                .collect();
            assert_eq!(profile.render_ids(&input).unwrap(), ids, "{family} {case}");
        }
    }
}

/// Several text parts: vLLM joins them with "\n", SGLang with " "; the render is vLLM's and the
/// message says the servers differ, for the caller to flag.
#[test]
fn several_text_parts_are_known_to_differ_between_servers() {
    let rows = rows();
    let two = rows.iter().find(|r| r["case"] == "two_text_parts").unwrap();
    assert!(parts_join_differs(&two["messages"][0]));
    let one = rows.iter().find(|r| r["case"] == "one_text_part").unwrap();
    assert!(one["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| !parts_join_differs(m)));
}

/// The failing case: a multi-turn request whose assistant turn carries `tool_calls` and
/// no `content` key, as OpenAI clients send it, to DeepSeek-V3 (whose template concatenates a
/// missing content and raised). `generate` (on the simulator) and `build` both
/// render it; the build writes its sample instead of failing.
#[test]
fn build_of_a_request_whose_assistant_turn_has_no_content_key() {
    use common::run::{jsonl as lines, stderr, RunDir};
    use common::servers::start_sim;
    use serde_json::json;

    let dir = RunDir::new();
    let call = json!({"id": "call_0", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}});
    dir.write_prompts([json!({"id": "c1", "source": "t", "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": "18C, sunny"},
        {"role": "assistant", "content": [{"type": "text", "text": "Sunny, 18C."}]},
        {"role": "user", "content": "Thanks. And tomorrow?"}
    ]})]);
    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 7,
        model_dir: Some(assets().join("deepseek-v3")),
        ..draftgen::sim::SimConfig::default()
    });
    let o = dir
        .generate(&sim.base_url())
        .args(["--model", "m"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = dir
        .build("deepseek-v3", "out")
        .arg("--jsonl")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let samples = lines(&dir.join("out").join("samples.jsonl"));
    assert_eq!(samples.len(), 1, "{}", stderr(&o));
    assert_eq!(samples[0]["id"], "c1");
}

/// A prompt with several text parts in one message is flagged: the servers join them
/// differently, and only the server's prompt ids would settle which.
#[test]
fn several_text_parts_flag_the_sample() {
    use draftgen::reconstruct::{reconstruct, ExchangeRequest, Reason, ReconstructOptions};
    use serde_json::json;

    let profile = load("deepseek_v3");
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": "Hi."},
        "finish_reason": "stop"}]});
    let ask = |content: Value| ExchangeRequest {
        messages: vec![json!({"role": "user", "content": content})],
        ..ExchangeRequest::default()
    };
    let options = ReconstructOptions::default();
    let two = json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]);
    let r = reconstruct(&profile, &ask(two), &answer, &options).unwrap();
    assert!(r
        .fidelity
        .reasons
        .contains(&Reason::ContentPartsJoinDiffers));
    assert!(!r.fidelity.class.is_exact());
    let one = json!([{"type": "text", "text": "a"}]);
    let r = reconstruct(&profile, &ask(one), &answer, &options).unwrap();
    assert!(!r
        .fidelity
        .reasons
        .contains(&Reason::ContentPartsJoinDiffers));
}
