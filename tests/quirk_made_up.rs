//! A server behaviour that no real server has, added the way a new one is: one type
//! ([`AppendsSpaceToArguments`], a server that appends a space to every call's argument string)
//! and one entry in a shape ([`MADE_UP`]: a server running vLLM's Kimi parsers that destroys
//! nothing else, so that every answer can be rebuilt exactly). The simulator answers
//! with the shape, and the reconstruction, given the same shape, rebuilds every answer's
//! completion ids exactly as the simulator sampled them (the `token_ids` it reports, which come
//! from the tokenizer, not from the reconstruction). This file is the only one the quirk needed.

use draftgen::completion::{Arguments, Completion};
use draftgen::model::{assets, LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, reconstruct_as, FidelityClass, ReconstructOptions};
use draftgen::reconstruct::{ExchangeRequest, Reconstruction};
use draftgen::server::quirks::FinishToolCalls;
use draftgen::server::{self, ForwardInput, InverseInput, Parsed, Quirk, Quirks, ServerShape};
use draftgen::sim::{spawn, Flavor, SimConfig};
use serde_json::{json, Value};

/// Appends one space to every tool call's argument string.
struct AppendsSpaceToArguments;

impl Quirk for AppendsSpaceToArguments {
    fn name(&self) -> &'static str {
        "appends_space_to_arguments"
    }

    fn forward(&self, _shape: &ServerShape, _input: &ForwardInput, parsed: &mut Parsed) {
        for call in &mut parsed.calls {
            call.arguments.push(' ');
        }
    }

    fn inverse(&self, answer: &Completion, _input: &InverseInput) -> Option<Vec<Completion>> {
        let mut before = answer.clone();
        for call in &mut before.tool_calls {
            if let Arguments::Raw(text) = &mut call.arguments {
                if text.ends_with(' ') {
                    text.pop();
                }
            }
        }
        Some(vec![before])
    }
}

static MADE_UP: ServerShape = ServerShape {
    version: "made-up",
    quirks: Quirks::new(&[&FinishToolCalls, &AppendsSpaceToArguments]),
    ..server::vllm::SHAPE
};

fn tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 10}
            }, "required": ["city"]}
        }},
        {"type": "function", "function": {
            "name": "search",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string"},
                "limit": {"type": "number"}
            }, "required": ["query"]}
        }}
    ])
}

fn body(i: usize) -> Value {
    json!({
        "model": "moonshotai/kimi-k2.5",
        "messages": [{"role": "user", "content": format!("Question number {i}: what now?")}],
        "tools": tools(),
        "return_token_ids": true,
    })
}

fn as_request(body: &Value) -> ExchangeRequest {
    serde_json::from_value(body.clone()).expect("the request's fields")
}

fn exact(rebuilt: &Reconstruction, sampled: &[u32]) -> bool {
    rebuilt.completion_ids == sampled && rebuilt.fidelity.class == FidelityClass::Unique
}

#[tokio::test]
async fn a_made_up_quirk_is_one_type_and_one_entry_and_rebuilds_exactly() {
    let kimi = assets::assets_root()
        .expect("reference assets (DRAFTGEN_ASSETS)")
        .join("kimi-k2.5");
    let sim = spawn(SimConfig {
        flavor: Flavor::Vllm,
        shape: Some(&MADE_UP),
        seed: 17,
        model_dir: Some(kimi.clone()),
        ..SimConfig::default()
    })
    .await
    .expect("the simulator starts");
    let profile = Profile::load(&kimi, &LoadOptions::default()).expect("the Kimi profile");
    let options = ReconstructOptions {
        kind: draftgen::api::ServerKind::Vllm,
        ..ReconstructOptions::default()
    };
    let client = reqwest::Client::new();
    let (mut with_calls, mut plain_vllm_exact) = (0, 0);
    for i in 0..60 {
        let body = body(i);
        let mut answer: Value = client
            .post(format!("{}/chat/completions", sim.base_url()))
            .json(&body)
            .send()
            .await
            .expect("the request is sent")
            .json()
            .await
            .expect("a JSON answer");
        let sampled: Vec<u32> = serde_json::from_value(answer["choices"][0]["token_ids"].take())
            .expect("the sampled ids");
        // The rebuild reads the text only.
        answer["prompt_token_ids"].take();
        let calls = answer["choices"][0]["message"]["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for call in &calls {
            let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
            assert!(arguments.ends_with(' '), "the quirk acted: {arguments:?}");
        }
        let request = as_request(&body);
        let rebuilt = reconstruct_as(&profile, &request, &answer, &options, &MADE_UP)
            .expect("a reconstruction");
        assert!(
            exact(&rebuilt, &sampled),
            "answer {i}: {:?} {:?}\n{answer:#}",
            rebuilt.fidelity,
            rebuilt.warnings
        );
        if !calls.is_empty() {
            with_calls += 1;
            // vLLM 0.33 as it is does not send these answers.
            let plain =
                reconstruct(&profile, &request, &answer, &options).expect("a reconstruction");
            plain_vllm_exact += usize::from(exact(&plain, &sampled));
        }
    }
    assert!(with_calls >= 10, "{with_calls} answers with calls");
    assert_eq!(plain_vllm_exact, 0);
}
