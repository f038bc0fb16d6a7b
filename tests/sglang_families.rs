//! SGLang's answers for the families first checked against vLLM's parsers (deepseek_v31,
//! qwen3_coder, qwen3_2507, gpt_oss, llama3): what SGLang 0.5.23's own chat-completion code
//! (its detectors `deepseekv31`, `qwen3_coder`, `qwen25`, `gpt-oss`, `llama3` and reasoning
//! parsers) sends for known token streams, not streamed and streamed token by token
//! (`tests/data/<family>/sglang_shapes.jsonl`, made by
//! `tests/data/gen/make_sglang_family_shapes.py`), rebuilt under `--server sglang`: each is the
//! model's true ids, or a non-exact class with a warning saying why — never wrong without a flag.

mod common;

use common::assets;
use common::family::{corpus, verdict, Verdict};
use draftgen::api::ServerKind;
use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use serde_json::{json, Value};

/// The family's profile, with the template its parity corpus was checked against.
fn profile(tokenizer: &str, name: &str, template: Option<&str>) -> Profile {
    let options = LoadOptions {
        profile: Some(name.into()),
        chat_template: template.map(|t| assets().join(t)),
    };
    Profile::load(&assets().join(tokenizer), &options).unwrap()
}

/// The corpus's request for one row (the question the generator asked) and SGLang's answer with
/// the prompt count of that request rendered here (the generator's prompt is a stand-in).
fn request_and_answer(p: &Profile, tools: &[Value], row: &Value) -> (ExchangeRequest, Value) {
    let request = ExchangeRequest {
        messages: vec![json!({"role": "user", "content": "Weather in Paris?"})],
        tools: Some(tools.to_vec()),
        chat_template_kwargs: row["chat_template_kwargs"].as_object().cloned(),
        stream: row["stream"].as_bool(),
        max_tokens: None,
    };
    let prompt_tokens = p.render_ids(&request.render_input()).unwrap().len();
    let mut answer = row["answer"].clone();
    let completion = answer["usage"]["completion_tokens"].as_u64().unwrap();
    answer["usage"]["prompt_tokens"] = json!(prompt_tokens);
    answer["usage"]["total_tokens"] = json!(prompt_tokens as u64 + completion);
    (request, answer)
}

/// Every answer of `family`'s corpus whose row `keep` accepts, rebuilt by `p` as of SGLang;
/// panics listing every wrong one, else returns (exact, answers).
fn rebuild_family(p: &Profile, family: &str, keep: impl Fn(&Value) -> bool) -> (usize, usize) {
    let mut rows = corpus(&format!("tests/data/{family}/sglang_shapes.jsonl"));
    let header = rows.remove(0);
    let tools = header["tools"].as_array().unwrap().clone();
    let rows: Vec<Value> = rows.into_iter().filter(|r| keep(r)).collect();
    let (mut exact, mut failures) = (0, Vec::new());
    for row in &rows {
        let (request, answer) = request_and_answer(p, &tools, row);
        let mut truth: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
        truth.extend(p.tokenizer.encode(row["end"].as_str().unwrap()));
        let options = ReconstructOptions {
            kind: ServerKind::Sglang,
            stream: row["stream"].as_bool(),
            ..ReconstructOptions::default()
        };
        let got = reconstruct(p, &request, &answer, &options).unwrap();
        match verdict(p, &got, &truth) {
            Verdict::Exact => exact += 1,
            Verdict::Flagged => eprintln!(
                "  flagged stream={} {}: {:?}",
                row["stream"], row["text"], got.warnings
            ),
            Verdict::Wrong(why) => failures.push(format!(
                "{family} stream={} {}: {why}",
                row["stream"], row["text"]
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    (exact, rows.len())
}

/// The counts of one family, held to the share rebuilt exactly when this test was written (a
/// floor: fewer means a change lost what SGLang's answers show).
fn report(family: &str, (exact, all): (usize, usize), floor: usize) {
    eprintln!("{family}: {exact} of {all} SGLang answers rebuilt exactly");
    assert!(all > 0, "{family}: no rows");
    assert!(
        exact >= floor,
        "{family}: {exact} exact, fewer than {floor}"
    );
}

#[test]
fn deepseek_v31_never_wrong_without_a_flag() {
    let p = profile(
        "deepseek-v3.1",
        "deepseek-v3.1",
        Some("templates/deepseek-v3.1.jinja"),
    );
    report(
        "deepseek_v31",
        rebuild_family(&p, "deepseek_v31", |_| true),
        10,
    );
}

#[test]
fn qwen3_coder_never_wrong_without_a_flag() {
    let p = profile("qwen3", "qwen3-coder", Some("templates/qwen3-coder.jinja"));
    report(
        "qwen3_coder",
        rebuild_family(&p, "qwen3_coder", |_| true),
        18,
    );
}

#[test]
fn qwen3_2507_never_wrong_without_a_flag() {
    for (name, variant, thinking, floor) in [
        ("qwen3-2507", "instruct", false, 7),
        ("qwen3-2507-thinking", "thinking", true, 8),
    ] {
        let template = format!("templates/qwen3-2507-{variant}.jinja");
        let p = profile("qwen3", name, Some(&template));
        let counts = rebuild_family(&p, "qwen3_2507", |r| {
            r["thinking"].as_bool() == Some(thinking)
        });
        report(name, counts, floor);
    }
}

#[test]
fn gpt_oss_never_wrong_without_a_flag() {
    let p = profile("gpt-oss", "gpt-oss", None);
    report("gpt_oss", rebuild_family(&p, "gpt_oss", |_| true), 11);
}

#[test]
fn llama3_never_wrong_without_a_flag() {
    let p = profile(
        "llama3.1",
        "llama3",
        Some("templates/llama-3.1-8b-instruct.jinja"),
    );
    report("llama3", rebuild_family(&p, "llama3", |_| true), 9);
}
