//! Render + tokenize of the parity conversations (`tests/data/parity/render_*.jsonl`), per family,
//! and the render alone, through the native twin of the template and through minijinja.
//! `scripts/bench_render.py` compares render + tokenize with transformers' `apply_chat_template`.

use draftgen::json::Json;
use draftgen::model::assets::assets_root;
use draftgen::model::{JsonRenderInput, LoadOptions, Profile, RenderInput, RenderPath, Tools};
use serde_json::Value;
use std::path::Path;

fn main() {
    divan::main();
}

struct Corpus {
    profile: Profile,
    cases: Vec<Value>,
}

fn corpus(file: &str, dir: &str, profile: Option<&str>) -> Corpus {
    let assets = assets_root().expect("shared assets: set DRAFTGEN_ASSETS");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/parity")
        .join(file);
    let cases: Vec<Value> = std::fs::read_to_string(path)
        .expect("parity corpus")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let template = cases[0]
        .get("template")
        .and_then(Value::as_str)
        .map(|t| assets.join(t));
    let options = LoadOptions {
        profile: profile.map(str::to_string),
        chat_template: template,
    };
    let profile = Profile::load(&assets.join(dir), &options).expect("profile");
    Corpus { profile, cases }
}

fn input(case: &Value) -> RenderInput<'_> {
    RenderInput {
        messages: case["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default(),
        tools: case
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice),
        add_generation_prompt: case["add_generation_prompt"].as_bool().unwrap_or(false),
        chat_template_kwargs: case.get("chat_template_kwargs").and_then(Value::as_object),
    }
}

fn family_corpus(family: &str) -> Corpus {
    match family {
        "qwen3" => corpus("render_qwen3.jsonl", "qwen3", None),
        "deepseek_v3" => corpus("render_deepseek_v3.jsonl", "deepseek-v3", None),
        "kimi_k2" => corpus("render_kimi_k2.jsonl", "kimi-k2.5", Some("kimi-k2")),
        "kimi_k25" => Corpus {
            // The built-in K2.5 template, not the corpus's K2 one.
            profile: Profile::load(
                &assets_root().expect("shared assets").join("kimi-k2.5"),
                &LoadOptions::default(),
            )
            .expect("profile"),
            ..corpus("render_kimi_k2.jsonl", "kimi-k2.5", Some("kimi-k2"))
        },
        _ => corpus(
            "render_kimi_k2_thinking.jsonl",
            "kimi-k2.5",
            Some("kimi-k2-thinking"),
        ),
    }
}

const FAMILIES: [&str; 4] = ["qwen3", "deepseek_v3", "kimi_k2", "kimi_k2_thinking"];
/// The render-only benches also run K2.5's built-in template on the K2 conversations (no Python
/// reference renders K2.5, so it is not among the render + tokenize benches).
const RENDER_FAMILIES: [&str; 5] = [
    "qwen3",
    "deepseek_v3",
    "kimi_k2",
    "kimi_k2_thinking",
    "kimi_k25",
];

#[divan::bench(args = FAMILIES, sample_count = 10)]
fn render_and_tokenize_240_conversations(bencher: divan::Bencher, family: &str) {
    let corpus = family_corpus(family);
    bencher.bench_local(|| {
        corpus
            .cases
            .iter()
            .map(|case| {
                corpus
                    .profile
                    .render_ids(&input(case))
                    .expect("render")
                    .len()
            })
            .sum::<usize>()
    });
}

/// The render alone from conversations already read as [`Json`] with their tools as JSON text,
/// as `draftgen render` renders each input line (`Profile::render_json`; the native twin for
/// these templates).
#[divan::bench(args = RENDER_FAMILIES, sample_count = 20)]
fn render_240_conversations(bencher: divan::Bencher, family: &str) {
    let corpus = family_corpus(family);
    let templated = corpus
        .cases
        .iter()
        .filter(|case| {
            let (_, path) = corpus
                .profile
                .render_with_path(&input(case))
                .expect("render");
            path == RenderPath::Template
        })
        .count();
    assert_eq!(
        templated, 0,
        "{family}: conversations the native twin declined"
    );
    let cases: Vec<(Vec<Json>, Option<String>)> = corpus
        .cases
        .iter()
        .map(|case| {
            let input = input(case);
            let tools = input.tools.map(|t| serde_json::to_string(t).expect("json"));
            (json(input.messages), tools)
        })
        .collect();
    bencher.bench_local(|| {
        corpus
            .cases
            .iter()
            .zip(&cases)
            .map(|(case, (messages, tools))| {
                let values = input(case);
                let input = JsonRenderInput {
                    messages,
                    tools: tools.as_deref().map(Tools::Text),
                    add_generation_prompt: values.add_generation_prompt,
                    chat_template_kwargs: values.chat_template_kwargs,
                };
                corpus.profile.render_json(&input).expect("render").len()
            })
            .sum::<usize>()
    });
}

fn json(values: &[Value]) -> Vec<Json<'_>> {
    values.iter().map(Json::from_value).collect()
}

/// The render alone from `serde_json` values (`Profile::render`, the library API: the twin reads
/// them through a borrowed [`Json`] view built per call).
#[divan::bench(args = RENDER_FAMILIES, sample_count = 20)]
fn render_240_conversations_from_values(bencher: divan::Bencher, family: &str) {
    let corpus = family_corpus(family);
    bencher.bench_local(|| {
        corpus
            .cases
            .iter()
            .map(|case| corpus.profile.render(&input(case)).expect("render").len())
            .sum::<usize>()
    });
}

/// The render through minijinja, for comparison.
#[divan::bench(args = RENDER_FAMILIES, sample_count = 10)]
fn render_240_conversations_template(bencher: divan::Bencher, family: &str) {
    let corpus = family_corpus(family);
    bencher.bench_local(|| {
        corpus
            .cases
            .iter()
            .map(|case| {
                let text = corpus.profile.render_template(&input(case));
                text.expect("render").len()
            })
            .sum::<usize>()
    });
}
