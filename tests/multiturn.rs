//! `generate --turns all` on the simulator with a 3-turn conversation, then `build`: one sample
//! whose ids and mask equal what the reference template renders for the regenerated
//! conversation (`tests/data/multiturn/expected.json`, made by
//! `tests/data/gen/make_multiturn.py` with transformers' Jinja pipeline and tiktoken from the
//! sim's recorded answers, `tests/data/multiturn/regenerated.json`).
//!
//! The simulator is deterministic (fixed seed, answers a pure function of the request), so the
//! recorded answers are checked too. To record them again: `DRAFTGEN_RECORD_MULTITURN=1 cargo
//! test --test multiturn`, then run the Python script.

mod common;

use std::path::PathBuf;

use serde_json::{json, Value};

use common::run::{jsonl as lines, stderr, RunDir};
use common::servers::start_sim;

#[test]
fn three_turns_regenerated_in_order_build_one_sample_as_the_reference_template_renders_it() {
    let assets = draftgen::model::assets::assets_root().expect("reference assets");
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/multiturn");
    let dir = RunDir::new();
    let conversation = json!({"id": "conv1", "source": "t", "messages": [
        {"role": "user", "content": "Name a prime number."},
        {"role": "assistant", "content": "Seven."},
        {"role": "user", "content": "And a larger one?"},
        {"role": "assistant", "content": "Thirteen."},
        {"role": "user", "content": "Now add them."},
        {"role": "assistant", "content": "Twenty."}
    ]});
    dir.write_prompts([conversation]);
    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 7,
        model_dir: Some(assets.join("kimi-k2.5")),
        ..draftgen::sim::SimConfig::default()
    });
    let generate = || {
        dir.generate(&sim.base_url())
            .args(["--turns", "all", "--model", "m"])
            .output()
            .unwrap()
    };
    let o = generate();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sim.counters().requests, 3, "one request per turn");
    // Resumable per turn: a second run has nothing left to do.
    let o = generate();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sim.counters().requests, 3);

    let mut records: Vec<Value> = dir.journal();
    records.sort_by_key(|r| r["id"].as_str().unwrap().to_string());
    let ids: Vec<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["conv1:turn1/3", "conv1:turn2/3", "conv1:turn3/3"]);
    // Each turn's request holds the answers of the turns before it.
    let answer = |r: &Value| r["response"]["choices"][0]["message"]["content"].clone();
    assert_eq!(
        records[1]["request"]["messages"][1]["content"],
        answer(&records[0])
    );
    assert_eq!(
        records[2]["request"]["messages"][3]["content"],
        answer(&records[1])
    );

    let regenerated = json!({
        "requests": records.iter().map(|r| r["request"]["messages"].clone()).collect::<Vec<_>>(),
        "answers": records.iter().map(|r| {
            let m = &r["response"]["choices"][0]["message"];
            json!({"reasoning": m["reasoning"], "content": m["content"]})
        }).collect::<Vec<_>>(),
    });
    if std::env::var_os("DRAFTGEN_RECORD_MULTITURN").is_some() {
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(
            data.join("regenerated.json"),
            serde_json::to_string_pretty(&regenerated).unwrap() + "\n",
        )
        .unwrap();
    }
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("regenerated.json")).unwrap())
            .unwrap();
    assert_eq!(regenerated, recorded, "the simulator answered as recorded");

    let out = dir.join("out");
    let o = dir
        .build("kimi-k2.5", "out")
        .arg("--jsonl")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let samples = lines(&out.join("samples.jsonl"));
    assert_eq!(samples.len(), 1, "one sample per conversation");
    let sample = &samples[0];
    assert_eq!(sample["id"], "conv1");
    assert_eq!(sample["turns"], 3);

    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("expected.json")).unwrap())
            .unwrap();
    assert_eq!(sample["input_ids"], expected["input_ids"]);
    assert_eq!(sample["loss_mask"], expected["loss_mask"]);
    let flagged = sample["fidelity_reasons"]
        .as_array()
        .unwrap()
        .contains(&json!("history_rerender_differs"));
    assert_eq!(
        flagged,
        expected["history_rerender_differs"].as_bool().unwrap()
    );
}
