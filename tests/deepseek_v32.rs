//! DeepSeek-V3.2, proven against references nobody here wrote:
//!
//! - render parity with DeepSeek's own prompt encoding (`encoding_dsv32.py` as vLLM 0.33.0 runs
//!   it, `tests/data/parity/render_deepseek_v32.jsonl`) for the built-in template, and with
//!   transformers' `render_jinja_template` on llama.cpp's `deepseek-ai-DeepSeek-V3.2.jinja`
//!   (`render_deepseek_v32_llama_cpp.jsonl`), both made by
//!   `tests/data/gen/make_parity_deepseek_v32.py` — the text, DeepSeek-V3.2's tokenizer's ids, and
//!   the same render from the messages as clients send them (arguments as JSON strings; content
//!   missing, `null` or a list of parts, as the generator wrote them);
//! - the server shape: what vLLM 0.33.0's own `deepseek_v32` tool parser and `deepseek_v3`
//!   reasoning parser return for known model texts (`tests/data/deepseek_v32/parser_shapes.jsonl`,
//!   made by `tests/data/gen/make_deepseek_v32_shapes.py` running the wheel's code), against
//!   `server::deepseek_v32::parse`;
//! - reconstruction of those answers: the model's true ids, or a non-exact class with a reason;
//!   and end to end, `generate` against the simulator answering as vLLM with this family, then
//!   `build`, streamed and not.

mod common;

use common::assets;
use common::family::{
    self, corpus, parsed_calls, rebuild_all, row_calls, row_tool_calls, true_ids, vllm_answer,
    vllm_options, weather_request, Forms,
};
use draftgen::api::ServerKind;
use draftgen::model::family::{deepseek_v32, AssistantTurn, Family, PromptStack};
use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{
    reconstruct, reconstruct_as, ExchangeRequest, Reason, ReconstructOptions,
};
use draftgen::server::deepseek_v32::parse;
use serde_json::{json, Value};

const BUILTIN: &str = "templates/deepseek-v3.2.jinja";
const LLAMA_CPP: &str = "templates/deepseek-v3.2-llama.cpp.jinja";
const END: &str = "<｜end▁of▁sentence｜>";

fn profile_with(template: &str) -> Profile {
    let options = LoadOptions {
        profile: Some("deepseek-v3.2".into()),
        chat_template: Some(assets().join(template)),
    };
    Profile::load(&assets().join("deepseek-v3.2"), &options).unwrap()
}

/// DeepSeek's encoding, as vLLM runs it: tools, multi-turn, tool rounds, reasoning, `thinking`
/// and `enable_thinking` on, off and absent.
#[test]
fn parity_with_deepseeks_encoding() {
    check_parity(BUILTIN, "render_deepseek_v32.jsonl");
}

/// llama.cpp's Jinja rendition, through transformers: our renderer agrees with it too (for a
/// model directory that ships it), though it is not what vLLM and SGLang render.
#[test]
fn parity_with_llama_cpps_template() {
    check_parity(LLAMA_CPP, "render_deepseek_v32_llama_cpp.jsonl");
}

fn check_parity(template: &str, file: &str) {
    let p = profile_with(template);
    assert_eq!(p.family, Family::DEEPSEEK_V32);
    for row in corpus(&format!("tests/data/parity/{file}")) {
        assert_eq!(row["template"].as_str(), Some(template));
    }
    family::check_parity(&p, file, Forms::ServerClientAndWritten, |_, text| text);
}

/// Where llama.cpp's rendition and DeepSeek's encoding differ, on the same requests (the
/// corpus's `python_text`): the generation prompt without thinking (`<think></think>` against
/// `</think>`) and the tools block's layout and place among the system prompts, so every
/// non-thinking request and every request with tools renders otherwise.
#[test]
fn llama_cpps_template_is_not_deepseeks_encoding() {
    let rows = corpus("tests/data/parity/render_deepseek_v32_llama_cpp.jsonl");
    let mut differ = 0;
    for row in &rows {
        let Some(python) = row["python_text"].as_str() else {
            continue;
        };
        let text = row["text"].as_str().unwrap();
        if python == text {
            continue;
        }
        differ += 1;
        let thinking = Family::DEEPSEEK_V32
            .thinking_enabled(row.get("chat_template_kwargs").and_then(Value::as_object));
        let prompt = row["add_generation_prompt"].as_bool().unwrap()
            && row["messages"].as_array().unwrap().last().unwrap()["role"] != "assistant";
        let tools = row
            .get("tools")
            .is_some_and(|t| t.as_array().is_some_and(|t| !t.is_empty()));
        let generation = prompt && !thinking && text.ends_with("<think></think>");
        assert!(
            generation || tools || !prompt,
            "an unexplained difference: {text:?}\n{python:?}"
        );
    }
    assert!(differ > 100, "only {differ} differ");
}

/// SGLang feeds the same encoding otherwise (`sglang_text`): its render differs from vLLM's
/// exactly on the requests the family names as a prompt doubt (tools beside a system prompt).
#[test]
fn sglang_differs_only_where_the_family_doubts() {
    let rows = corpus("tests/data/parity/render_deepseek_v32.jsonl");
    let rules = Family::DEEPSEEK_V32.rules();
    let mut differ = 0;
    for row in &rows {
        let sglang = row["sglang_text"].as_str().unwrap();
        let messages = row["messages"].as_array().unwrap();
        let tools = row
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice);
        let doubt = rules
            .prompt_doubt(messages, tools, PromptStack::Sglang)
            .is_some();
        assert_eq!(sglang != row["text"], doubt, "{:?}", row["text"]);
        differ += usize::from(doubt);
    }
    assert!(differ >= 40, "only {differ} differ");
}

/// Tools beside a system prompt: under a declared vLLM (or a provider whose answers show vLLM's
/// shape) the built-in render is the server's, so the answer is exact; where the server could be
/// SGLang (declared, generic, OpenRouter) it is `ambiguous` with `prompt_render_differs`.
#[test]
fn the_system_prompt_doubt_knows_the_server() {
    let (tools, _) = shapes();
    let p = profile_with(BUILTIN);
    let request = ExchangeRequest {
        messages: vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Weather in Paris?"}),
        ],
        tools: Some(tools),
        ..ExchangeRequest::default()
    };
    let prompt_tokens = p.render_ids(&request.render_input()).unwrap().len();
    let text = "Sunny.";
    let completion_tokens = p.tokenizer.encode(&format!("{text}{END}")).len();
    let answer = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "deepseek-v3.2",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}
    });
    let doubted = |kind: ServerKind| {
        let options = ReconstructOptions {
            kind,
            ..ReconstructOptions::default()
        };
        let got = reconstruct(&p, &request, &answer, &options).unwrap();
        let flagged = got.fidelity.reasons.contains(&Reason::PromptRenderDiffers);
        assert_eq!(flagged, !got.fidelity.class.is_exact(), "{kind:?}: {got:?}");
        flagged
    };
    assert!(!doubted(ServerKind::Vllm));
    for kind in [
        ServerKind::Sglang,
        ServerKind::Generic,
        ServerKind::OpenRouter,
    ] {
        assert!(doubted(kind), "{kind:?}");
    }
    // A provider whose answers show vLLM's shape: rebuilt as that shape, no doubt.
    let options = ReconstructOptions::default();
    let vllm = draftgen::server::shape(ServerKind::Vllm, None);
    let got = reconstruct_as(&p, &request, &answer, &options, vllm).unwrap();
    assert!(got.fidelity.class.is_exact(), "{:?}", got.fidelity);
}

/// A lost call spelling is named by this family's parser, not another family's.
#[test]
fn lossy_calls_name_the_familys_parser() {
    let (tools, rows) = shapes();
    let p = profile_with(BUILTIN);
    let mut named = 0;
    for kind in [ServerKind::Vllm, ServerKind::Generic] {
        let options = ReconstructOptions {
            kind,
            ..ReconstructOptions::default()
        };
        for row in rows.iter().filter(|r| !row_calls(r, "calls").is_empty()) {
            let (request, prompt_tokens) =
                weather_request_thinking(&p, &tools, text_and_thinking(row).1, false);
            let got =
                reconstruct(&p, &request, &answer(row, prompt_tokens, false), &options).unwrap();
            for warning in got
                .warnings
                .iter()
                .filter(|w| w.contains("parsed the tool calls"))
            {
                assert!(warning.contains("deepseek_v32 tool parser"), "{warning}");
                named += 1;
            }
        }
    }
    assert!(named > 0, "no answer lost its calls' spelling");
}

/// The built-in template is the one the parity corpus was rendered with, byte for byte.
#[test]
fn builtin_template_is_the_encodings_rendition() {
    let builtin = Family::DEEPSEEK_V32.spec().builtin_template.unwrap();
    let reference = std::fs::read_to_string(assets().join(BUILTIN)).unwrap();
    assert_eq!(builtin, reference);
}

fn shapes() -> (Vec<Value>, Vec<Value>) {
    let mut rows = corpus("tests/data/deepseek_v32/parser_shapes.jsonl");
    let header = rows.remove(0);
    (header["tools"].as_array().unwrap().clone(), rows)
}

/// [`weather_request`] with `chat_template_kwargs` `{"thinking": thinking}`, and its prompt's
/// length.
fn weather_request_thinking(
    p: &Profile,
    tools: &[Value],
    thinking: bool,
    stream: bool,
) -> (ExchangeRequest, usize) {
    let (mut request, _) = weather_request(p, tools, stream);
    request.chat_template_kwargs = json!({ "thinking": thinking }).as_object().cloned();
    let prompt_tokens = p.render_ids(&request.render_input()).unwrap().len();
    (request, prompt_tokens)
}

fn text_and_thinking(row: &Value) -> (&str, bool) {
    (
        row["text"].as_str().unwrap(),
        row["thinking"].as_bool().unwrap(),
    )
}

#[test]
fn parse_returns_what_vllms_parsers_return() {
    let (tools, rows) = shapes();
    assert_eq!(rows.len(), 32);
    let p = profile_with(BUILTIN);
    let mut streams = 0;
    for row in &rows {
        let (text, thinking) = text_and_thinking(row);
        let want_ids: Vec<u32> = serde_json::from_value(row["ids"].clone()).unwrap();
        assert_eq!(p.tokenizer.encode(text), want_ids, "{text:?}");
        for stream in [false, true] {
            let (content_key, calls_key) = match stream {
                true => ("stream_content", "stream_calls"),
                false => ("content", "calls"),
            };
            let parsed = parse(text, thinking, true, stream, Some(&tools));
            if parsed.unmodelled.is_some() {
                assert!(stream || text.contains("Cut in a name"), "{text:?}");
                continue;
            }
            streams += usize::from(stream);
            let content = parsed.content.filter(|c| !c.is_empty());
            assert_eq!(
                parsed.reasoning.as_deref(),
                row["reasoning"].as_str(),
                "{text:?}"
            );
            assert_eq!(content.as_deref(), row[content_key].as_str(), "{text:?}");
            assert_eq!(
                parsed_calls(&parsed.calls),
                row_calls(row, calls_key),
                "{stream} {text:?}"
            );
        }
    }
    assert!(streams >= 30, "only {streams} streams modelled");
}

/// Every finished answer whose values are all strings, written as the encoding writes calls, is
/// rebuilt to the model's text exactly.
#[test]
fn completion_text_inverts_the_parsers() {
    let (_, rows) = shapes();
    let mut checked = 0;
    for row in &rows {
        let (text, thinking) = text_and_thinking(row);
        let closed = !thinking || text.contains("</think>");
        let calls = row_calls(row, "calls");
        let laid_out = calls.is_empty()
            || (text.ends_with("</｜DSML｜invoke>\n</｜DSML｜function_calls>")
                && text.contains("\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke")
                && !text.contains("string=\"false\"")
                && !text.starts_with("   "));
        let strings_only = calls.iter().all(|(_, args)| {
            let args: Value = serde_json::from_str(args).unwrap();
            args.as_object().unwrap().values().all(Value::is_string)
        });
        if !(closed && laid_out && strings_only) || cut(text) {
            continue;
        }
        let turn = AssistantTurn {
            reasoning: row["reasoning"].as_str().map(str::to_string),
            reasoning_closed: closed,
            content: row["content"].as_str().unwrap_or_default().to_string(),
            tool_calls: row_tool_calls(row),
            end_of_turn: true,
        };
        assert_eq!(
            deepseek_v32::completion_text(thinking, &turn),
            format!("{text}{END}"),
            "{text:?}"
        );
        checked += 1;
    }
    assert!(checked >= 9, "only {checked} answers checked");
}

fn cut(text: &str) -> bool {
    text.contains("Cut") || text.contains("cut")
}

/// The answer vLLM 0.33 sends for one row (assembled, when streamed), with its usage.
fn answer(row: &Value, prompt_tokens: usize, stream: bool) -> Value {
    let (content_key, calls_key) = match stream {
        true => ("stream_content", "stream_calls"),
        false => ("content", "calls"),
    };
    let (text, _) = text_and_thinking(row);
    let ids = row["ids"].as_array().unwrap().len();
    let cut = cut(text);
    let message = json!({"role": "assistant", "content": row[content_key],
                         "reasoning": row["reasoning"]});
    let calls = row_calls(row, calls_key);
    vllm_answer(message, &calls, cut, prompt_tokens, ids + usize::from(!cut))
}

/// Each answer of the corpus rebuilt from what vLLM sent: the model's own ids (its text and
/// `<｜end▁of▁sentence｜>` unless cut), or a class that says they are not certain.
#[test]
fn reconstruction_is_never_wrong_without_a_flag() {
    let (tools, rows) = shapes();
    let p = profile_with(BUILTIN);
    for stream in [false, true] {
        check_reconstruction(&p, &tools, &rows, stream);
    }
}

fn check_reconstruction(p: &Profile, tools: &[Value], rows: &[Value], stream: bool) {
    let mut exact = 0;
    for thinking in [false, true] {
        let (request, prompt_tokens) = weather_request_thinking(p, tools, thinking, stream);
        let cases = rows
            .iter()
            .filter(|row| text_and_thinking(row).1 == thinking)
            .map(|row| {
                let text = text_and_thinking(row).0;
                let truth = true_ids(p, row, cut(text), END);
                let label = format!("{text:?} (stream: {stream})");
                (label, answer(row, prompt_tokens, stream), truth)
            });
        exact += rebuild_all(p, &request, &vllm_options(), cases);
    }
    // Exact: the answers without a parameter (plain text, reasoning, a call without arguments).
    // A string value's `string="true"` could have been `string="false"` (one token either way,
    // read alike) and a typed value's spelling is lost: those are flagged, never guessed.
    assert!(
        exact >= 5,
        "stream {stream}: only {exact} of {} rebuilt exactly",
        rows.len()
    );
}

/// Without `--profile`, either template picks the family (DeepSeek-V3.2's tokenizer files, which carry no template).
#[test]
fn templates_pick_their_family() {
    for template in [BUILTIN, LLAMA_CPP] {
        let options = LoadOptions {
            profile: None,
            chat_template: Some(assets().join(template)),
        };
        let p = Profile::load(&assets().join("deepseek-v3.2"), &options).unwrap();
        assert_eq!(p.family, Family::DEEPSEEK_V32, "{template}");
    }
}

/// Under SGLang (whose `deepseekv32` detector strips string values and the blank line before
/// the calls, not modelled) a tool-call answer is never called exact.
#[test]
fn sglang_tool_answers_are_flagged() {
    let (tools, rows) = shapes();
    let p = profile_with(BUILTIN);
    let options = ReconstructOptions {
        kind: ServerKind::Sglang,
        ..ReconstructOptions::default()
    };
    let (request, prompt_tokens) = weather_request(&p, &tools, false);
    let mut checked = 0;
    for row in rows.iter().filter(|r| !row_calls(r, "calls").is_empty()) {
        if row["thinking"].as_bool().unwrap() {
            continue;
        }
        let got = reconstruct(&p, &request, &answer(row, prompt_tokens, false), &options).unwrap();
        assert!(!got.fidelity.class.is_exact(), "{:?}", row["text"]);
        assert!(!got.warnings.is_empty());
        checked += 1;
    }
    assert!(checked >= 20, "only {checked}");
}

/// End to end through the simulator answering as vLLM 0.33 with DeepSeek-V3.2 (the family's
/// native text through `server::deepseek_v32`): `generate`, then `build`; no sample classed
/// exact has other ids than the simulated model's, and every other one says why.
#[test]
fn simulated_vllm_run_is_never_wrong_without_a_flag() {
    simulated_run(false, false);
}

/// The same, streamed.
#[test]
fn simulated_vllm_stream_is_never_wrong_without_a_flag() {
    simulated_run(true, false);
}

/// The same, thinking (`chat_template_kwargs = { thinking = true }`), streamed and not.
#[test]
fn simulated_vllm_thinking_run_is_never_wrong_without_a_flag() {
    simulated_run(false, true);
    simulated_run(true, true);
}

fn simulated_run(stream: bool, thinking: bool) {
    use common::run::{output, stderr, RunDir};
    use common::servers::start_sim;
    use draftgen::dataset::Prompt;
    use draftgen::sim::{Flavor, SimConfig, Simulator};
    use std::collections::{BTreeMap, HashMap};

    let (tools, _) = shapes();
    let config = SimConfig {
        seed: 32,
        flavor: Flavor::Vllm,
        model_dir: Some(assets().join("deepseek-v3.2")),
        profile: Some("deepseek-v3.2".into()),
        ..SimConfig::default()
    };
    let truth = Simulator::new(config.clone()).unwrap();
    let sim = start_sim(config);
    let dir = RunDir::new();
    let cities = ["Paris", "São Paulo", "Tokyo", "Nairobi", "Lima", "Oslo"];
    dir.write_prompts((0..24).map(|i| {
        let question = format!("Weather in {} for {} days? ({i})", cities[i % 6], i % 5);
        let tools = (i % 3 != 0).then(|| tools.clone());
        let messages = vec![json!({"role": "user", "content": question})];
        serde_json::to_value(Prompt::new("dsv32", messages, tools, Value::Null)).unwrap()
    }));
    let mut generate = dir.generate(&sim.base_url());
    generate.args(["--kind", "vllm", "--model", "deepseek-ai/DeepSeek-V3.2"]);
    if stream {
        generate.arg("--stream");
    }
    if thinking {
        let config = dir.join("run.toml");
        std::fs::write(
            &config,
            "[request]\nchat_template_kwargs = { thinking = true }\n",
        )
        .unwrap();
        generate.arg("--config").arg(config);
    }
    let out = output(&mut generate);
    assert!(out.status.success(), "generate: {}", stderr(&out));
    let model = assets().join("deepseek-v3.2").display().to_string();
    let out = output(dir.build(&model, "built").args([
        "--jsonl",
        "--drop-class",
        "none",
        "--profile",
        "deepseek-v3.2",
    ]));
    assert!(out.status.success(), "build: {}", stderr(&out));
    let journal = dir.journal();
    let reasoned = journal
        .iter()
        .filter(|r| {
            let message = &r["response"]["choices"][0]["message"];
            message["reasoning"].as_str().is_some_and(|t| !t.is_empty())
        })
        .count();
    assert_eq!(reasoned > 0, thinking, "{reasoned} answers with reasoning");
    let requests: HashMap<String, Value> = journal
        .into_iter()
        .filter(|r| r["response"].is_object())
        .filter_map(|r| Some((r["id"].as_str()?.to_string(), r["request"].clone())))
        .collect();
    let samples = common::run::jsonl(&dir.join("built").join("samples.jsonl"));
    assert_eq!(samples.len(), 24);
    let mut classes: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for sample in &samples {
        let id = sample["id"].as_str().unwrap();
        let class = sample["fidelity_class"].as_str().unwrap_or_default();
        *classes.entry(class.into()).or_default() += 1;
        let (prompt, completion) = truth.sampled(&requests[id]).unwrap();
        let ids: Vec<u32> = serde_json::from_value(sample["input_ids"].clone()).unwrap();
        let prompt_len = sample["prompt_len"].as_u64().unwrap() as usize;
        let (p, c) = ids.split_at(prompt_len.min(ids.len()));
        let exact = matches!(class, "unique" | "exact_by_server_ids");
        if exact && (p != prompt.as_slice() || c != completion.as_slice()) {
            failures.push(format!("{id}: classed {class} but other ids"));
        }
        let reasons = sample["fidelity_reasons"].as_array().map_or(0, Vec::len);
        if !exact && reasons == 0 {
            failures.push(format!("{id}: classed {class} with no reason"));
        }
    }
    eprintln!("stream {stream}, thinking {thinking}: classes {classes:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        classes.get("unique").is_some_and(|&n| n >= 4),
        "{classes:?}"
    );
}
