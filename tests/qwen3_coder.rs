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
use common::family::{
    check_parity, corpus, parsed_calls, rebuild_all, row_calls, row_tool_calls, true_ids,
    vllm_answer, vllm_options, weather_request, Forms,
};
use draftgen::model::family::{qwen3_coder, AssistantTurn, Family};
use draftgen::model::{LoadOptions, Profile};
use draftgen::server::qwen3_coder::parse;
use serde_json::{json, Value};

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

#[test]
fn parity_qwen3_coder() {
    check_template(TEMPLATE, "render_qwen3_coder.jsonl");
}

/// The template Qwen3-Coder-30B-A3B-Instruct's `tokenizer_config.json` carries (what a model
/// directory downloaded from the hub renders with).
#[test]
fn parity_qwen3_coder_30b_a3b() {
    check_template(
        "templates/qwen3-coder-30b-a3b.jinja",
        "render_qwen3_coder_30b_a3b.jsonl",
    );
}

fn check_template(template: &str, corpus: &str) {
    let p = profile_with(template);
    assert_eq!(p.family, Family::QWEN3_CODER);
    check_parity(&p, corpus, Forms::ServerAndClient, |_, text| text);
}

/// The built-in template is the one the parity corpus was rendered with, byte for byte.
#[test]
fn builtin_template_is_llama_cpps() {
    let builtin = Family::QWEN3_CODER.spec().builtin_template.unwrap();
    let reference = std::fs::read_to_string(assets().join(TEMPLATE)).unwrap();
    assert_eq!(builtin, reference);
}

fn shapes() -> (Vec<Value>, Vec<Value>) {
    let mut rows = corpus("tests/data/qwen3_coder/parser_shapes.jsonl");
    let header = rows.remove(0);
    (header["tools"].as_array().unwrap().clone(), rows)
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
        assert_eq!(
            parsed_calls(&parsed.calls),
            row_calls(row, "calls"),
            "{text:?}"
        );
        // Streamed: where the parse models the stream, what the wheel's stream assembles to.
        let streamed = parse(text, true, true, Some(&tools));
        if streamed.unmodelled.is_none() {
            assert_eq!(
                streamed.content.as_deref(),
                row["stream_content"].as_str(),
                "stream {text:?}"
            );
            let got = parsed_calls(&streamed.calls);
            assert_eq!(got, row_calls(row, "stream_calls"), "stream {text:?}");
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
        let strings_only = row_calls(row, "calls").iter().all(|(_, args)| {
            let args: Value = serde_json::from_str(args).unwrap();
            args.as_object().unwrap().values().all(Value::is_string)
        });
        if !(laid_out && strings_only) {
            continue;
        }
        let turn = AssistantTurn {
            content: row["content"].as_str().unwrap_or_default().to_string(),
            tool_calls: row_tool_calls(row),
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        let want = format!("{text}<|im_end|>");
        assert_eq!(qwen3_coder::completion_text(&turn), want);
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} answers checked");
}

/// Whether a row's answer was cut by `max_tokens`.
fn cut(row: &Value) -> bool {
    row["text"].as_str().unwrap().ends_with("\nls")
}

/// The answer vLLM 0.33 sends for one row (assembled, when streamed), with its usage.
fn answer(row: &Value, prompt_tokens: usize, stream: bool) -> Value {
    let (content_key, calls_key) = match stream {
        true => ("stream_content", "stream_calls"),
        false => ("content", "calls"),
    };
    let message = json!({"role": "assistant", "content": row[content_key]});
    let ids = row["ids"].as_array().unwrap().len();
    let cut = cut(row);
    let calls = row_calls(row, calls_key);
    vllm_answer(message, &calls, cut, prompt_tokens, ids + usize::from(!cut))
}

/// Each answer of the corpus rebuilt from what vLLM sent: the model's own ids (its text and
/// `<|im_end|>` unless cut), or a class that says they are not certain.
#[test]
fn reconstruction_is_never_wrong_without_a_flag() {
    let (tools, rows) = shapes();
    let p = profile();
    for stream in [false, true] {
        let (request, prompt_tokens) = weather_request(&p, &tools, stream);
        let cases = rows.iter().map(|row| {
            let truth = true_ids(&p, row, cut(row), "<|im_end|>");
            let label = format!("{} (stream: {stream})", row["text"]);
            (label, answer(row, prompt_tokens, stream), truth)
        });
        let exact = rebuild_all(&p, &request, &vllm_options(), cases);
        assert!(
            exact >= 8,
            "stream {stream}: only {exact} of {} rebuilt exactly",
            rows.len()
        );
    }
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
