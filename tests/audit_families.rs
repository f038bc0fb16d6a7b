//! The tool-call audit knows every family: for each family in `Family::all()` whose tokenizer
//! files are among the reference assets, the simulator's answers (the family's native calls,
//! parsed by vLLM's shape for it) pass the audit clean — ids in the family's form, the round trip
//! through its syntax — and the same answers from a server without a parser (its calls left in
//! `content`) are found as markers out of place, by the family's own markers and call syntax.
//! A family without its files is skipped with a message.

mod common;

use draftgen::model::assets::Locations;
use draftgen::model::family::Family;
use draftgen::model::{LoadOptions, Profile};
use draftgen::sim::family_model::{find_in, search_dirs};
use draftgen::sim::{Answered, Flavor, SimConfig, Simulator};
use draftgen::verify::audit::answer::{audit_answer, Problem};
use draftgen::verify::audit::schema::Schemas;
use serde_json::{json, Value};

fn tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                "required": ["city"]}}},
        {"type": "function", "function": {"name": "search",
            "description": "Search the web.",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"]}}}
    ])
}

fn request(i: usize) -> Value {
    json!({"model": "m", "tool_choice": "required", "tools": tools(), "messages": [
        {"role": "user", "content": format!("Question {i}: the weather in Paris, and search it.")}]})
}

/// The answer `flavor` sends for `body` (non-streamed), the model writing its own answer.
fn answer(sim: &Simulator, body: &Value) -> Value {
    let (_, completion) = sim.sampled(body).expect("the sampled ids");
    match sim.answer_with(body, &completion).expect("an answer") {
        Answered::Body(body) => body,
        Answered::Events(_) => panic!("a streamed answer to a non-streamed request"),
    }
}

#[test]
fn every_familys_answers_are_audited_by_its_own_syntax() {
    let locations = Locations {
        asset_roots: vec![common::assets()],
        hub_cache: None,
        endpoint: String::new(),
        token: None,
        embedded_cache: None,
    };
    let dirs = search_dirs(&locations).1;
    let work = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    let mut ran = 0;
    for &family in Family::all() {
        let Some(found) = find_in(family, &dirs) else {
            eprintln!("SKIPPED {}: no tokenizer files for it", family.name());
            continue;
        };
        if family.syntax().is_none() {
            eprintln!("SKIPPED {}: no tool syntax servers parse", family.name());
            continue;
        }
        ran += 1;
        let dir = found
            .directory(&work.path().join(family.name()))
            .expect("the family's model directory");
        let options = LoadOptions {
            profile: Some(family.name().to_string()),
            chat_template: None,
        };
        let profile = Profile::load(&dir, &options).expect("the family's profile");
        let sim = |flavor| {
            Simulator::new(SimConfig {
                seed: 3,
                flavor,
                model_dir: Some(dir.clone()),
                profile: Some(family.name().to_string()),
                ..SimConfig::default()
            })
            .expect("a simulator")
        };
        let (parsed, raw) = (sim(Flavor::Vllm), sim(Flavor::Raw));
        let ids_in_stream = family.syntax().is_some_and(|s| s.ids_in_stream());
        let mut schemas = Schemas::default();
        for i in 0..6 {
            let body = request(i);
            let name = format!("{} #{i}", family.name());
            let response = answer(&parsed, &body);
            let audit = audit_answer(&body, &response, &profile, &mut schemas).expect("audited");
            if audit.calls == 0 || !audit.found.is_empty() || !audit.round_trip_checked {
                failures.push(format!(
                    "{name}: {} calls, found {:?}, round trip checked {}",
                    audit.calls, audit.found, audit.round_trip_checked
                ));
            }
            let (native, minted) = if ids_in_stream {
                (audit.calls, 0)
            } else {
                (0, audit.calls)
            };
            if (audit.ids_native, audit.ids_rewritten) != (native, minted) && ids_in_stream {
                failures.push(format!(
                    "{name}: ids native {} rewritten {}",
                    audit.ids_native, audit.ids_rewritten
                ));
            }
            let response = answer(&raw, &body);
            let audit = audit_answer(&body, &response, &profile, &mut schemas).expect("audited");
            let out_of_place = audit
                .found
                .iter()
                .any(|f| f.problem == Problem::MarkersInContent);
            if !out_of_place {
                failures.push(format!(
                    "{name}: a call left in content not found ({:?}): {}",
                    audit.found, response["choices"][0]["message"]["content"]
                ));
            }
        }
        eprintln!("{}: audited", family.name());
    }
    assert!(
        ran > 1,
        "only {ran} families ran: the reference assets are missing"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
