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

use draftgen::model::family::Family;
use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, ExchangeRequest};
use draftgen::server::gpt_oss::parse;
use serde_json::{json, Value};

use common::assets;
use common::family::{
    check_parity, corpus as lines, parsed_calls, row_calls, verdict, vllm_answer, vllm_options,
    Forms, Verdict,
};
use common::run::{jsonl as samples_of, stderr, RunDir};
use common::servers::start_sim;

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
    check_parity(
        &profile(),
        "render_gpt_oss.jsonl",
        Forms::Server,
        |case, text| dated(&text, case["date"].as_str().unwrap()),
    );
}

/// What the server parsed out of one corpus row: (reasoning, content, [(name, arguments)]).
type Fields = (Option<String>, Option<String>, Vec<(String, String)>);

fn want_fields(row: &Value) -> Fields {
    (
        row["reasoning"].as_str().map(str::to_string),
        row["content"].as_str().map(str::to_string),
        row_calls(row, "calls"),
    )
}

#[test]
fn parse_returns_what_vllms_harmony_parser_returns() {
    let rows = lines("tests/data/gpt_oss/parser_shapes.jsonl");
    assert_eq!(rows.len(), 30);
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
        let got: Fields = (
            parsed.reasoning.clone(),
            parsed.content.clone(),
            parsed_calls(&parsed.calls),
        );
        assert_eq!(got, want_fields(row), "{text} (stream: {stream})");
        assert_eq!(parsed.stopped, stop == "<|call|>", "{text}");
    }
}

/// The answer vLLM 0.33 sends for one corpus row (its fields, its count, a minted call id).
fn answer(row: &Value, prompt_tokens: usize) -> Value {
    let (reasoning, content, calls) = want_fields(row);
    let cut = row["stop"].as_str().unwrap().is_empty();
    let message = json!({"role": "assistant", "content": content, "reasoning": reasoning});
    let ids = row["ids"].as_array().unwrap().len();
    vllm_answer(message, &calls, cut, prompt_tokens, ids)
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
    let options = vllm_options();
    let (mut exact, mut wrong) = ([0, 0], Vec::new());
    let rows = lines("tests/data/gpt_oss/parser_shapes.jsonl");
    for row in &rows {
        let stream = row["stream"].as_bool().unwrap();
        request.stream = Some(stream);
        let truth: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
        let rebuilt = reconstruct(&p, &request, &answer(row, prompt_tokens), &options).unwrap();
        match verdict(&p, &rebuilt, &truth) {
            Verdict::Exact => exact[usize::from(stream)] += 1,
            Verdict::Flagged => {}
            Verdict::Wrong(why) => wrong.push(format!("{} (stream: {stream}): {why}", row["text"])),
        }
    }
    assert!(wrong.is_empty(), "wrong without a flag: {wrong:#?}");
    assert!(exact[0] >= 7, "only {} of the unstreamed exact", exact[0]);
    assert!(exact[1] >= 7, "only {} of the streamed exact", exact[1]);
}

/// Three calls in one answer, each re-serialized by vLLM (`json.dumps(json.loads(text))`, seen in
/// the corpus row its own parser made): all their spellings together are too many to try, so the
/// sample is never settled, but the stream rebuilt is the model's (compact, as written), not the
/// answer's spacing.
#[test]
fn three_reserialized_calls_rebuild_the_models_compact_text_flagged() {
    let p = profile();
    let row = lines("tests/data/gpt_oss/parser_shapes.jsonl")
        .into_iter()
        .find(|r| {
            r["stream"] == json!(false) && r["calls"].as_array().is_some_and(|c| c.len() == 3)
        })
        .unwrap();
    let tool = json!({"type": "function", "function": {"name": "f", "description": "A tool.",
                      "parameters": {"type": "object", "properties": {}}}});
    let request = ExchangeRequest {
        messages: vec![json!({"role": "user", "content": "Set up three buckets."})],
        tools: Some(vec![tool]),
        chat_template_kwargs: None,
        stream: Some(false),
        max_tokens: None,
    };
    let prompt = p.render(&request.render_input()).unwrap();
    let prompt_tokens = p.tokenizer.encode(&prompt).len();
    let truth: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
    let rebuilt = reconstruct(&p, &request, &answer(&row, prompt_tokens), &vllm_options()).unwrap();
    assert_eq!(
        p.tokenizer.decode(&rebuilt.completion_ids),
        p.tokenizer.decode(&truth)
    );
    assert_eq!(rebuilt.completion_ids, truth);
    assert!(!rebuilt.fidelity.class.is_exact(), "{:?}", rebuilt.fidelity);
    assert!(rebuilt
        .fidelity
        .reasons
        .contains(&draftgen::reconstruct::Reason::ArgumentsReserialized));
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
    let options = vllm_options();
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
    let options = vllm_options();
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

/// `generate` (with `args`) into `dir` against the simulator serving gpt-oss as vLLM 0.33 (its
/// harmony parser: arguments re-serialized, ids minted), then `build --jsonl`: the samples
/// written, and `build`'s stderr.
fn generate_and_build(dir: &RunDir, seed: u64, args: &[&str]) -> (Vec<Value>, String) {
    let sim = start_sim(draftgen::sim::SimConfig {
        seed,
        flavor: draftgen::sim::Flavor::Vllm,
        model_dir: Some(assets().join("gpt-oss")),
        ..draftgen::sim::SimConfig::default()
    });
    let o = dir
        .generate(&sim.base_url())
        .args(args)
        .args(["--kind", "vllm"])
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
    (
        samples_of(&dir.join("out").join("samples.jsonl")),
        stderr(&o),
    )
}

/// End to end: every sample written, each rebuilt exactly.
#[test]
fn generate_and_build_against_the_simulator() {
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
    let (samples, build_log) = generate_and_build(&dir, 21, &["--model", "openai/gpt-oss-120b"]);
    // Each answer rebuilt exactly, as `build` did.
    let p = profile();
    let options = vllm_options();
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
    assert_eq!(samples.len(), 6, "{build_log}");
}

/// Multi-turn (`generate --turns all`): each earlier answer ends in history with `<|end|>`, not
/// the end-of-turn `<|return|>`; the build lays the conversation out in one row.
#[test]
fn a_regenerated_conversation_builds_one_row() {
    let dir = RunDir::new();
    dir.write_prompts([json!({"id": "conv", "source": "t", "messages": [
        {"role": "user", "content": "Name a prime number."},
        {"role": "assistant", "content": "Seven."},
        {"role": "user", "content": "And a larger one?"},
        {"role": "assistant", "content": "Thirteen."}
    ]})]);
    let args = ["--turns", "all", "--model", "openai/gpt-oss-20b"];
    let (samples, build_log) = generate_and_build(&dir, 5, &args);
    assert_eq!(samples.len(), 1, "{build_log}");
    assert_eq!(samples[0]["turns"], 2, "{}", samples[0]);
}
