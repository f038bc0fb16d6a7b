//! `draftgen import`: an SGLang-style output file recorded in a run, then `generate` against the
//! simulator sends exactly the other prompts (counted at the simulator), and `build` takes the
//! imported ids as they are.

mod common;

use std::process::Command;

use serde_json::{json, Value};

use common::run::{jsonl as lines, stderr, RunDir, BIN};
use common::servers::start_sim;

#[test]
fn imported_sglang_generations_are_skipped_by_generate_and_built_with_their_ids() {
    let dir = RunDir::new();
    let ids: Vec<String> = (0..10).map(|i| format!("p{i:02}")).collect();
    let prompts = dir.write_prompts(ids.iter().enumerate().map(|(i, id)| {
        json!({"id": id, "source": "t", "messages": [{"role": "user", "content": format!("question {i}")}]})
    }));
    // SGLang `Engine.generate` output for the first four prompts, in prompt order: output ids,
    // text and meta_info, no prompt ids (import renders those from the prompts).
    let sglang = dir.path().join("sglang.jsonl");
    let mut text = String::new();
    for i in 0..4u32 {
        text.push_str(
            &json!({"text": format!("answer {i}"), "output_ids": [1000 + i, 2000 + i, 163586],
                    "meta_info": {"id": format!("req-{i}"), "finish_reason": {"type": "stop"},
                                  "prompt_tokens": 9, "completion_tokens": 3}})
            .to_string(),
        );
        text.push('\n');
    }
    std::fs::write(&sglang, text).unwrap();
    let run = dir.run();

    let o = Command::new(BIN)
        .arg("import")
        .arg(&sglang)
        .args(["--model", "kimi-k2.5", "--run"])
        .arg(&run)
        .arg("--prompts")
        .arg(&prompts)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("4 generation(s) recorded"),
        "{}",
        stderr(&o)
    );

    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 5,
        ..draftgen::sim::SimConfig::default()
    });
    let o = dir
        .generate(&sim.base_url())
        .args(["--model", "m"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        sim.counters().requests,
        6,
        "only the 6 prompts not imported are sent"
    );
    // And exactly those: every generated record is for a prompt that was not imported.
    let journal: Vec<Value> = dir.journal();
    let generated: Vec<&str> = journal
        .iter()
        .filter(|r| !r["endpoint"].as_str().unwrap().starts_with("import:"))
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut expected: Vec<&str> = ids[4..].iter().map(String::as_str).collect();
    let mut got = generated.clone();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);

    // Re-importing the same file adds nothing: those prompts are finished.
    let o = Command::new(BIN)
        .arg("import")
        .arg(&sglang)
        .args(["--model", "kimi-k2.5", "--run"])
        .arg(&run)
        .arg("--prompts")
        .arg(&prompts)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("4 already finished"), "{}", stderr(&o));

    // build takes the imported ids: the rendered prompt, then the output ids as they were.
    let out = dir.join("out");
    let o = dir
        .build("kimi-k2.5", "out")
        // The simulator here loads no tokenizer, so its usage counts are not Kimi's and its
        // answers rebuild as `inconsistent`; keep every class, this test is about the imports.
        .args(["--jsonl", "--drop-class", "none"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let samples = lines(&out.join("samples.jsonl"));
    assert_eq!(samples.len(), 10);
    for i in 0..4u32 {
        let s = samples
            .iter()
            .find(|s| s["id"] == format!("p{i:02}"))
            .unwrap();
        let input: Vec<u64> = serde_json::from_value(s["input_ids"].clone()).unwrap();
        assert_eq!(
            input[input.len() - 3..],
            [1000 + u64::from(i), 2000 + u64::from(i), 163586]
        );
        assert_eq!(s["completion_len"], 3);
        assert_eq!(s["fidelity_class"], "exact_by_server_ids");
        assert_eq!(s["finish_reason"], "stop");
    }
}

#[test]
fn bad_lines_are_named_and_the_rest_imported() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spec.jsonl");
    std::fs::write(
        &file,
        "{\"id\": \"a\", \"input_ids\": [1, 2, 3], \"loss_mask\": [0, 1, 1]}\n\
         {\"id\": \"b\", \"input_ids\": [1, 2, 3], \"loss_mask\": [1, 0, 1]}\n\
         {\"id\": \"c\", \"text\": \"no ids\"}\n",
    )
    .unwrap();
    let o = Command::new(BIN)
        .arg("import")
        .arg(&file)
        .args(["--model", "kimi-k2.5", "--run"])
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("1 generation(s) recorded"), "{err}");
    assert!(err.contains(&format!("{}:2:", file.display())), "{err}");
    assert!(err.contains(&format!("{}:3:", file.display())), "{err}");
}
