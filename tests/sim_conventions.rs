//! Simulated providers with conventions (`--provider NAME:openrouter:CONVENTION,…`,
//! `draftgen::sim::conventions`) through the whole pipeline: `generate` against the simulator
//! behind OpenRouter's shape, each prompt routed to one provider by `provider.only`, then
//! `build`. Asserted: `build.json` `providers` adopts, for each provider, exactly the counting
//! and spacing conventions it was given (`usage_excludes_end_token`, `generates_think`,
//! `spaces_special_tokens`; the argument and id forms are not inferred as such), and **no
//! sample classed exact has other ids than the ones the simulated model saw and wrote**
//! (`Simulator::sampled`: the same request answered without faults, a generated `<think>` the
//! completion's first id). Every non-exact sample names a reason.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::run::{output, stderr, RunDir};
use common::servers::start_sim;
use draftgen::dataset::{Prompt, PromptOptions};
use draftgen::sim::{NamedProvider, SimConfig, Simulator};
use serde_json::{json, Value};

/// Each provider: its spec and the conventions inference must adopt for it.
const PROVIDERS: &[(&str, &[&str])] = &[
    ("Fireworks:openrouter", &[]),
    (
        "DeepInfra:openrouter:usage_excludes_end_token,ids=index",
        &["usage_excludes_end_token"],
    ),
    (
        "AtlasCloud:openrouter:generates_think,ids=no_prefix",
        &["generates_think"],
    ),
    (
        "Chutes:openrouter:spaces_special_tokens",
        &["spaces_special_tokens"],
    ),
    ("Groq:openrouter:compacts_arguments=ascii", &[]),
    ("Together:openrouter:compacts_arguments,ids=minted", &[]),
    // The simulated model writes no whitespace at these boundaries: nothing for the count to
    // show, so nothing is adopted, and no sample may be exact with other ids.
    (
        "Trimmer:openrouter:strips=reasoning_start+content_start+content_end_before_calls+content_end",
        &[],
    ),
];

/// The conventions inference decides on (others it may add are not this test's).
const INFERRED: [&str; 8] = [
    "usage_excludes_end_token",
    "generates_think",
    "spaces_special_tokens",
    "strips_reasoning_start",
    "strips_reasoning_end",
    "strips_content_start",
    "strips_content_end_before_calls",
    "strips_content_end",
];

/// Answers per provider: above inference's minimum (8), with room for answers a convention
/// makes no difference to.
const PER_PROVIDER: usize = 14;

fn tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather", "description": "Current weather for a city",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                "required": ["city"]}}},
        {"type": "function", "function": {
            "name": "get_news", "description": "Latest news on some topics",
            "parameters": {"type": "object", "properties": {
                "topics": {"type": "array", "items": {"type": "string"}},
                "location": {"type": "string"}},
                "required": ["topics"]}}}
    ])
}

const QUESTIONS: [&str; 7] = [
    "What's the weather in {} right now?",
    "Any news about sports in {}?",
    "Should I take an umbrella in {} today?",
    "Tell me something nice about {}.",
    "What is the latest technology news from {}?",
    "How warm is it in {}, in fahrenheit?",
    "Give me a short poem about {}.",
];

const CITIES: [&str; 4] = ["Lisbon", "Zürich", "Osaka", "Nairobi"];

fn prompts(names: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for (p, name) in names.iter().enumerate() {
        for i in 0..PER_PROVIDER {
            let question =
                QUESTIONS[(i + p) % QUESTIONS.len()].replace("{}", CITIES[i % CITIES.len()]);
            let mut prompt = Prompt::new(
                "sim_conventions",
                vec![json!({"role": "user", "content": format!("{question} ({name} {i})")})],
                tools().as_array().cloned(),
                Value::Null,
            );
            prompt.request_options = Some(Box::new(PromptOptions {
                provider: Some(json!({"only": [name], "allow_fallbacks": false})),
                ..PromptOptions::default()
            }));
            out.push(serde_json::to_value(&prompt).expect("a prompt"));
        }
    }
    out
}

fn config() -> SimConfig {
    SimConfig {
        seed: 5,
        model_dir: Some(common::assets().join("kimi-k2.5")),
        profile: Some("kimi-k2.5".into()),
        providers: PROVIDERS
            .iter()
            .map(|(spec, _)| spec.parse::<NamedProvider>().expect("a provider spec"))
            .collect(),
        ..SimConfig::default()
    }
}

/// build.json's conventions per provider.
fn adopted(built: &std::path::Path) -> BTreeMap<String, BTreeSet<String>> {
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(built.join("build.json")).expect("build.json"),
    )
    .expect("build.json is JSON");
    let mut out = BTreeMap::new();
    for p in info["providers"].as_array().into_iter().flatten() {
        let names = p["conventions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .filter(|n| INFERRED.contains(n))
            .map(str::to_string)
            .collect();
        out.insert(
            p["provider"].as_str().unwrap_or_default().to_string(),
            names,
        );
    }
    out
}

fn run(stream: bool) {
    let config = config();
    let names: Vec<String> = config.providers.iter().map(|p| p.name.clone()).collect();
    let truth = Simulator::new(config.clone()).expect("a simulator for the truth");
    let sim = start_sim(config);
    let dir = RunDir::new();
    dir.write_prompts(prompts(&names));
    let mut generate = dir.generate(&sim.base_url());
    generate.args(["--kind", "openrouter", "--model", "moonshotai/kimi-k2.5"]);
    if stream {
        generate.arg("--stream");
    }
    let out = output(&mut generate);
    assert!(out.status.success(), "generate: {}", stderr(&out));
    let built = dir.join("built");
    let out = output(
        dir.build(
            &common::assets().join("kimi-k2.5").display().to_string(),
            "built",
        )
        .args(["--jsonl", "--drop-class", "none", "--profile", "kimi-k2.5"]),
    );
    assert!(out.status.success(), "build: {}", stderr(&out));

    let adopted = adopted(&built);
    for (spec, want) in PROVIDERS {
        let name = spec.split(':').next().unwrap_or_default();
        let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            adopted.get(name).cloned().unwrap_or_default(),
            want,
            "stream {stream}: {name}'s conventions adopted (all: {adopted:?})"
        );
    }

    let requests: HashMap<String, Value> = dir
        .journal()
        .into_iter()
        .filter(|r| r["response"].is_object())
        .filter_map(|r| Some((r["id"].as_str()?.to_string(), r["request"].clone())))
        .collect();
    let samples = common::run::jsonl(&built.join("samples.jsonl"));
    assert_eq!(
        samples.len(),
        names.len() * PER_PROVIDER,
        "every prompt built"
    );
    let mut failures = Vec::new();
    let mut table: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for sample in &samples {
        let id = sample["id"].as_str().expect("a sample id");
        let class = sample["fidelity_class"].as_str().unwrap_or_default();
        let provider = sample["provider"].as_str().unwrap_or_default().to_string();
        *table
            .entry(provider)
            .or_default()
            .entry(class.into())
            .or_default() += 1;
        let reasons = sample["fidelity_reasons"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let (prompt, completion) = truth
            .sampled(&requests[id])
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        let ids: Vec<u32> = serde_json::from_value(sample["input_ids"].clone()).expect("input_ids");
        let prompt_len = sample["prompt_len"].as_u64().expect("prompt_len") as usize;
        let (p, c) = ids.split_at(prompt_len.min(ids.len()));
        let exact = matches!(class, "unique" | "exact_by_server_ids");
        if exact && (p != prompt.as_slice() || c != completion.as_slice()) {
            failures.push(format!(
                "{id} ({}): classed {class} but rebuilt {} + {} ids, the model's {} + {} (reasons {reasons:?})",
                sample["provider"],
                p.len(),
                c.len(),
                prompt.len(),
                completion.len()
            ));
        }
        if !exact && reasons.is_empty() {
            failures.push(format!("{id}: classed {class} with no reason"));
        }
    }
    eprintln!("stream {stream}: classes per provider {table:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn providers_conventions_are_inferred_and_nothing_exact_is_wrong() {
    run(false);
}

#[test]
fn the_same_streamed() {
    run(true);
}

/// A bad provider spec stops `draftgen sim` with a usage error naming the spec and what is
/// expected.
#[test]
fn a_bad_spec_is_a_clear_error() {
    for (spec, expected) in [
        ("X:openrouter:ids=uuid", "ids=no_prefix"),
        (
            "X:sglang:spaces_special_tokens",
            "never spaces added tokens",
        ),
        ("X:openrouter:generates_think=yes", "takes no value"),
        (
            "X:openrouter:compacts_arguments=html",
            "compacts_arguments=ascii",
        ),
        ("X:openrouter:usage_excludes_end", "unknown item"),
    ] {
        let out = std::process::Command::new(common::run::BIN)
            .args(["sim", "--port", "0", "--provider", spec])
            .output()
            .expect("draftgen sim");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(
            err.contains(spec) && err.contains(expected),
            "{spec}: {err}"
        );
    }
}
