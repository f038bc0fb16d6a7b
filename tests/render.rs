//! Chat-template rendering against references nobody here wrote: the published golden renders in
//! `ASSETS/golden/kimi.json` (PrimeIntellect-ai/renderers) and the parity corpora in
//! `tests/data/parity/render_*.jsonl` (transformers `apply_chat_template` / jinja2 with
//! transformers' settings; see `tests/data/README.md`). Text and ids must match 100%.

use draftgen::model::assets::assets_root;
use draftgen::model::{LoadOptions, Profile, RenderInput};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn assets() -> PathBuf {
    assets_root()
        .expect("shared assets not found: set DRAFTGEN_ASSETS or put them at ../shared/assets")
}

fn load(dir: &Path, profile: &str, template: Option<PathBuf>) -> Profile {
    Profile::load(
        dir,
        &LoadOptions {
            profile: Some(profile.to_string()),
            chat_template: template,
        },
    )
    .unwrap_or_else(|e| panic!("loading {} as {profile}: {e}", dir.display()))
}

fn golden(key_prefix: &str) -> (String, Vec<u32>) {
    let text = std::fs::read_to_string(assets().join("golden/kimi.json")).unwrap();
    let golden: Value = serde_json::from_str(&text).unwrap();
    let (_, entry) = golden
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.starts_with(key_prefix))
        .unwrap_or_else(|| panic!("no golden entry {key_prefix}"));
    let ids = entry["token_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    (entry["text"].as_str().unwrap().to_string(), ids)
}

/// The conversation behind both golden Kimi renders (PrimeIntellect's golden corpus).
fn golden_conversation() -> (Vec<Value>, Vec<Value>) {
    let messages = vec![
        json!({"role": "system", "content": "You are concise."}),
        json!({"role": "user", "content": "What is 2+2?"}),
    ];
    let tools = vec![json!({
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Return the weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }
        }
    })];
    (messages, tools)
}

fn check_golden(profile: &str, key_prefix: &str) {
    let profile = load(&assets().join("kimi-k2.5"), profile, None);
    let (messages, tools) = golden_conversation();
    let input = RenderInput {
        messages: &messages,
        tools: Some(&tools),
        add_generation_prompt: true,
        chat_template_kwargs: None,
    };
    let (text, ids) = golden(key_prefix);
    assert_eq!(profile.render(&input).unwrap(), text);
    assert_eq!(profile.render_ids(&input).unwrap(), ids);
}

#[test]
fn golden_kimi_k2_instruct_generation_prompt() {
    check_golden("kimi-k2", "kimi-k2 (moonshotai");
}

#[test]
fn golden_kimi_k25_generation_prompt() {
    check_golden("kimi-k2.5", "kimi-k2.5 (moonshotai");
}

#[test]
fn kimi_k25_is_detected_from_its_directory() {
    let profile = Profile::load(&assets().join("kimi-k2.5"), &LoadOptions::default()).unwrap();
    assert_eq!(profile.name, "kimi-k2.5");
    assert_eq!(profile.end_of_turn(), "<|im_end|>");
    assert_eq!(profile.reasoning_close(), Some("</think>"));
    assert_eq!(
        profile.tool_section_begin(),
        Some("<|tool_calls_section_begin|>")
    );
    assert!(profile.thinking_enabled(None));
    let off: Map<String, Value> = serde_json::from_value(json!({"thinking": false})).unwrap();
    assert!(!profile.thinking_enabled(Some(&off)));
}

#[test]
fn qwen3_and_deepseek_are_detected() {
    for (dir, name, eot) in [
        ("qwen3", "qwen3", "<|im_end|>"),
        ("deepseek-v3", "deepseek-v3", "<｜end▁of▁sentence｜>"),
        ("smollm2-135m-instruct", "generic", "<|im_end|>"),
    ] {
        let profile = Profile::load(&assets().join(dir), &LoadOptions::default()).unwrap();
        assert_eq!(profile.name, name, "{dir}");
        assert_eq!(profile.end_of_turn(), eot, "{dir}");
    }
}

/// The golden K2.5 history-form assistant turn and K2 completed turn, as completion texts.
#[test]
fn golden_kimi_completion_suffixes() {
    use draftgen::model::profile::AssistantTurn;
    let (messages, tools) = golden_conversation();
    let input = RenderInput {
        messages: &messages,
        tools: Some(&tools),
        add_generation_prompt: true,
        chat_template_kwargs: None,
    };
    let turn = AssistantTurn {
        content: "Four.".into(),
        end_of_turn: true,
        ..Default::default()
    };
    let k2 = load(&assets().join("kimi-k2.5"), "kimi-k2", None);
    let (text, ids) = golden("kimi-k2 completed_turn suffix");
    let got = k2.completion_text(&input, &turn).unwrap();
    assert_eq!(got, text);
    assert_eq!(k2.tokenizer.encode(&got), ids);

    // K2.5: `<think>` is the prompt's last token; an empty closed reasoning completes the
    // golden `<think></think>Four.<|im_end|>`.
    let k25 = load(&assets().join("kimi-k2.5"), "kimi-k2.5", None);
    let turn = AssistantTurn {
        reasoning: Some(String::new()),
        reasoning_closed: true,
        ..turn
    };
    let (text, ids) = golden("kimi-k2.5 parser_input");
    let got = format!("<think>{}", k25.completion_text(&input, &turn).unwrap());
    assert_eq!(got, text);
    assert_eq!(k25.tokenizer.encode(&got), ids);
}

/// Every line of one parity corpus: text and ids.
fn check_parity(file: &str, dir: &str, profile: Option<&str>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/parity")
        .join(file);
    let corpus =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut loaded: Option<(Option<String>, Profile)> = None;
    let mut failures = Vec::new();
    let mut count = 0;
    for (index, line) in corpus.lines().enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        let template = case
            .get("template")
            .and_then(Value::as_str)
            .map(str::to_string);
        if loaded.as_ref().map(|(t, _)| t) != Some(&template) {
            let options = LoadOptions {
                profile: profile.map(str::to_string),
                chat_template: template.as_ref().map(|t| assets().join(t)),
            };
            let p = Profile::load(&assets().join(dir), &options).unwrap();
            loaded = Some((template.clone(), p));
        }
        let Some((_, p)) = &loaded else {
            unreachable!()
        };
        let messages = case["messages"].as_array().unwrap();
        let tools = case.get("tools").and_then(Value::as_array);
        let input = RenderInput {
            messages,
            tools: tools.map(Vec::as_slice),
            add_generation_prompt: case["add_generation_prompt"].as_bool().unwrap_or(false),
            chat_template_kwargs: case.get("chat_template_kwargs").and_then(Value::as_object),
        };
        let want_ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        count += 1;
        match p.render(&input) {
            Ok(text) if text == case["text"].as_str().unwrap() => {
                let ids = p.tokenizer.encode(&text);
                if ids != want_ids {
                    failures.push(format!("{file}:{}: ids differ", index + 1));
                }
            }
            Ok(text) => failures.push(format!(
                "{file}:{}: text differs\n  want {:?}\n  got  {:?}",
                index + 1,
                case["text"].as_str().unwrap(),
                text
            )),
            Err(e) => failures.push(format!("{file}:{}: {e}", index + 1)),
        }
    }
    assert!(count >= 200, "{file}: only {count} cases");
    assert!(
        failures.is_empty(),
        "{} of {count} cases differ:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn parity_qwen3() {
    check_parity("render_qwen3.jsonl", "qwen3", None);
}

#[test]
fn parity_deepseek_v3() {
    check_parity("render_deepseek_v3.jsonl", "deepseek-v3", None);
}

#[test]
fn parity_kimi_k2() {
    check_parity("render_kimi_k2.jsonl", "kimi-k2.5", Some("kimi-k2"));
}

#[test]
fn parity_kimi_k2_thinking() {
    check_parity(
        "render_kimi_k2_thinking.jsonl",
        "kimi-k2.5",
        Some("kimi-k2-thinking"),
    );
}

/// The CLI contract: `{"text", "ids"}` per input line, in order; bad input names file:line, exit 2.
#[test]
fn cli_render_writes_text_and_ids_and_reports_bad_lines() {
    let (messages, tools) = golden_conversation();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let line = json!({"messages": messages, "tools": tools, "add_generation_prompt": true});
    let plain = json!({"messages": [{"role": "user", "content": "hi"}],
                       "chat_template_kwargs": {"thinking": false}});
    std::fs::write(&input, format!("{line}\n\n{plain}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_draftgen"))
        .args(["render", "--model"])
        .arg(assets().join("kimi-k2.5"))
        .arg("--input")
        .arg(&input)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let (text, ids) = golden("kimi-k2.5 (moonshotai");
    assert_eq!(lines[0], json!({"text": text, "ids": ids}));
    assert_eq!(lines[1]["text"], "<|im_user|>user<|im_middle|>hi<|im_end|>");

    std::fs::write(&input, format!("{line}\n{{\"messages\": 3}}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_draftgen"))
        .args(["render", "--model"])
        .arg(assets().join("kimi-k2.5"))
        .arg("--input")
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("in.jsonl:2"), "{stderr}");
    assert!(out.stdout.is_empty());
}
