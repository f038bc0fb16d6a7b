//! `prepare`: every adapter on the shared sample datasets against counts and ids computed by an
//! independent Python reference (`tests/data/prepare/expected.py`), malformed inputs, strict
//! mode, sharding, limits, Parquet, and the CLI contract.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use draftgen::dataset::{
    prepare, prepare_into, read_prompts, DatasetError, Format, PrepareOptions, Prompt, Shard,
};
use serde_json::{json, Value};

use common::datasets;

fn malformed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/malformed")
}

/// Expected counts and ids per shared file, written by `tests/data/prepare/expected.py`.
fn expected() -> BTreeMap<String, Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/prepare/expected.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn collect(
    inputs: &[PathBuf],
    opts: &PrepareOptions,
) -> (draftgen::dataset::PrepareReport, Vec<Prompt>) {
    let mut prompts = Vec::new();
    let report = prepare_into(inputs, opts, &mut |p| {
        prompts.push(p.clone());
        Ok(())
    })
    .unwrap();
    (report, prompts)
}

fn all_shared() -> Vec<PathBuf> {
    expected()
        .keys()
        .map(|name| datasets().join(name))
        .collect()
}

/// Per file: records read, prompts, duplicates and skip reasons exactly as the Python reference
/// counted them, and the very same prompt ids (so messages and tools agree byte for byte in
/// canonical form).
#[test]
fn every_shared_dataset_matches_the_python_reference() {
    for (name, want) in expected() {
        let (report, prompts) = collect(&[datasets().join(&name)], &PrepareOptions::default());
        let source = &report.sources[0];
        assert_eq!(source.read, want["read"].as_u64().unwrap(), "{name} read");
        assert_eq!(
            source.prompts,
            want["prompts"].as_u64().unwrap(),
            "{name} prompts"
        );
        assert_eq!(
            source.duplicates,
            want["duplicates"].as_u64().unwrap(),
            "{name} dups"
        );
        assert_eq!(source.malformed, 0, "{name}: {:?}", source.issues);
        assert_eq!(source.warnings, 0, "{name}: {:?}", source.issues);
        let skipped: BTreeMap<String, u64> =
            serde_json::from_value(want["skipped"].clone()).unwrap();
        assert_eq!(source.skipped, skipped, "{name} skipped");
        let mut ids: Vec<String> = prompts.iter().map(|p| p.id.clone()).collect();
        ids.sort();
        let want_ids: Vec<String> = serde_json::from_value(want["ids"].clone()).unwrap();
        assert_eq!(ids, want_ids, "{name} ids");
    }
}

#[test]
fn formats_are_detected_per_file() {
    let want = [
        ("evol_instruct_shape_sample.jsonl", "alpaca"),
        ("glaive_toolcall_en_demo.json", "llamafactory"),
        ("glaive_v2_shape_sample.jsonl", "glaive-v2"),
        ("magicoder_oss_shape_sample.jsonl", "magicoder"),
        ("opencodeinstruct_shape_sample.jsonl", "opencodeinstruct"),
        ("reason_tool_use_demo_50.jsonl", "reason-tool-use"),
        ("sharegpt_v3_sample_200.jsonl", "sharegpt"),
        ("ultrachat_shape_sample.jsonl", "ultrachat"),
    ];
    for (file, format) in want {
        let (report, _) = collect(&[datasets().join(file)], &PrepareOptions::default());
        let formats: Vec<&String> = report.sources[0].formats.keys().collect();
        assert_eq!(formats, [format], "{file}");
    }
}

/// Spot checks of shapes the reference id comparison already covers, written out for readers.
#[test]
fn prompts_end_at_the_last_user_turn_and_keep_the_answer_aside() {
    let (_, prompts) = collect(
        &[datasets().join("glaive_v2_shape_sample.jsonl")],
        &PrepareOptions::default(),
    );
    let first = &prompts[0];
    assert_eq!(first.messages.len(), 2);
    assert_eq!(first.messages[1]["role"], "user");
    assert_eq!(
        first.tools.as_ref().unwrap()[0]["function"]["name"],
        "book_flight"
    );
    let answer = &first.meta["reference_answer"];
    assert_eq!(
        answer[0]["tool_calls"][0],
        json!({"id": "call_0", "type": "function", "function": {"name": "book_flight",
               "arguments": "{\"origin\": \"New York\", \"destination\": \"London\"}"}})
    );
    assert_eq!(answer[1]["tool_call_id"], "call_0");
    assert_eq!(first.meta["format"], "glaive-v2");

    let (_, prompts) = collect(
        &[datasets().join("reason_tool_use_demo_50.jsonl")],
        &PrepareOptions::default(),
    );
    let history = prompts
        .iter()
        .find(|p| p.messages.iter().any(|m| m["role"] == "tool"))
        .unwrap();
    let assistant = history
        .messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert!(assistant["reasoning_content"].as_str().unwrap().len() > 10);
    assert_eq!(history.messages.last().unwrap()["role"], "user");
}

#[test]
fn whole_run_writes_prompts_jsonl_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prompts.jsonl");
    let opts = PrepareOptions {
        out: out.clone(),
        ..Default::default()
    };
    let report = prepare(&all_shared(), &opts).unwrap();
    let prompts = read_prompts(&out).unwrap();
    assert_eq!(prompts.len() as u64, report.prompts());
    assert_eq!(report.prompts(), 518);
    let ids: HashSet<&str> = prompts.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids.len(), prompts.len());
    for prompt in &prompts {
        assert_eq!(
            Prompt::content_id(&prompt.messages, prompt.tools.as_deref()),
            prompt.id
        );
    }
    // Only the output file is left: the temporary file was renamed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn malformed_records_are_reported_with_their_line_and_the_rest_goes_on() {
    let dir = malformed_dir();
    let inputs: Vec<PathBuf> = [
        "mixed.jsonl",
        "empty.jsonl",
        "invalid_utf8.jsonl",
        "broken_array.json",
        "wrapped.json",
    ]
    .iter()
    .map(|f| dir.join(f))
    .collect();
    let (report, prompts) = collect(&inputs, &PrepareOptions::default());
    let d = dir.display();
    let issues: Vec<&String> = report.sources.iter().flat_map(|s| &s.issues).collect();
    let want = [
        format!("{d}/mixed.jsonl:2: broken JSON: EOF while parsing a value at column 26"),
        format!("{d}/mixed.jsonl:3: sharegpt: conversations[0] has no \"value\""),
        format!("{d}/mixed.jsonl:4: openai: field \"messages\" is a string, expected an array"),
        format!("{d}/mixed.jsonl:5: magicoder: field \"problem\" is a number, expected a string"),
        format!(
            "{d}/mixed.jsonl:6: unrecognized record shape (keys: question); \
             pass --format to say which it is"
        ),
        format!(
            "{d}/mixed.jsonl:7: sharegpt: conversations[0].from is \"wizard\", not a known role \
             (human, user, gpt, chatgpt, bing, bard, assistant, model, system, function_call, \
             observation)"
        ),
        format!("{d}/mixed.jsonl:8: record is an array, expected a JSON object"),
        format!("{d}/empty.jsonl: empty file, no records"),
        format!("{d}/invalid_utf8.jsonl:2: invalid UTF-8 at byte 20 of the line"),
        format!(
            "{d}/broken_array.json: element 1: magicoder: field \"problem\" is a number, \
             expected a string"
        ),
        format!(
            "{d}/broken_array.json: element 2: broken JSON (expected value at line 1 column \
             101); the rest of the file cannot be read"
        ),
        format!(
            "{d}/wrapped.json: element 1: unrecognized record shape (keys: input); \
             pass --format to say which it is"
        ),
    ];
    assert_eq!(issues, want.iter().collect::<Vec<_>>());
    let mixed = &report.sources[0];
    assert_eq!(
        (
            mixed.read,
            mixed.prompts,
            mixed.malformed,
            mixed.skipped_total()
        ),
        (10, 2, 7, 1)
    );
    assert_eq!(mixed.skipped["no user turn"], 1);
    let users: Vec<&Value> = prompts.iter().map(|p| &p.messages[0]["content"]).collect();
    assert_eq!(users, ["Say hi.", "Say bye.", "ok", "p1", "q1"]);
    assert_eq!(report.malformed(), 12);
}

#[test]
fn a_huge_line_is_skipped_without_reading_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.jsonl");
    let mut text = String::from("{\"instruction\": \"first\"}\n{\"instruction\": \"");
    text.push_str(&"x".repeat(64 << 20));
    text.push_str("\"}\n{\"instruction\": \"last\"}\n");
    std::fs::write(&path, &text).unwrap();
    drop(text);
    let (report, prompts) = collect(std::slice::from_ref(&path), &PrepareOptions::default());
    assert_eq!(
        report.sources[0].issues,
        [format!(
            "{}:2: line is 67108883 bytes, over the 67108864-byte limit (raise --max-line-bytes to read it)",
            path.display()
        )]
    );
    assert_eq!(prompts.len(), 2);
    let small = PrepareOptions {
        max_line_bytes: 30,
        ..Default::default()
    };
    let (report, _) = collect(&[path], &small);
    assert_eq!(report.sources[0].malformed, 1);
    assert_eq!(report.sources[0].prompts, 2);
}

#[test]
fn strict_fails_on_the_first_malformed_record_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prompts.jsonl");
    let opts = PrepareOptions {
        out: out.clone(),
        strict: true,
        ..Default::default()
    };
    let err = prepare(&[malformed_dir().join("mixed.jsonl")], &opts).unwrap_err();
    let DatasetError::Strict(malformed) = &err else {
        panic!("{err}")
    };
    assert!(malformed
        .to_string()
        .ends_with("mixed.jsonl:2: broken JSON: EOF while parsing a value at column 26"));
    assert!(err.is_input_error());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn shards_are_disjoint_stable_and_cover_everything() {
    let (_, all) = collect(&all_shared(), &PrepareOptions::default());
    let all: HashSet<String> = all.into_iter().map(|p| p.id).collect();
    let mut union = HashSet::new();
    for index in 0..4 {
        let opts = PrepareOptions {
            shard: Some(Shard { index, count: 4 }),
            ..Default::default()
        };
        let (report, shard) = collect(&all_shared(), &opts);
        assert!(!shard.is_empty());
        let out_of_shard: u64 = report.sources.iter().map(|s| s.out_of_shard).sum();
        assert_eq!(out_of_shard as usize + shard.len(), all.len());
        for prompt in shard {
            assert_eq!(prompt.shard(4), index);
            assert!(union.insert(prompt.id), "a prompt is in two shards");
        }
    }
    assert_eq!(union, all);
}

#[test]
fn limits_stop_reading_early() {
    let opts = PrepareOptions {
        limit_per_source: Some(3),
        ..Default::default()
    };
    let (report, prompts) = collect(&all_shared(), &opts);
    for source in &report.sources {
        assert!(source.prompts <= 3, "{}", source.source);
        assert_eq!(source.limited, source.prompts == 3, "{}", source.source);
    }
    // glaive_toolcall: 3 prompts from its first 3 elements, the rest of the file never read.
    let glaive = report
        .sources
        .iter()
        .find(|s| s.source == "glaive_toolcall_en_demo.json")
        .unwrap();
    assert_eq!(glaive.read, 3);
    assert_eq!(prompts.len(), 3 + 3 + 3 + 2 + 2 + 2 + 3 + 1);

    let opts = PrepareOptions {
        limit: Some(5),
        ..Default::default()
    };
    let (report, prompts) = collect(&all_shared(), &opts);
    assert_eq!(prompts.len(), 5);
    assert_eq!(report.prompts(), 5);
}

#[test]
fn duplicates_across_files_are_counted_once() {
    let file = datasets().join("sharegpt_v3_sample_200.jsonl");
    let (report, prompts) = collect(&[file.clone(), file], &PrepareOptions::default());
    assert_eq!(report.sources[1].duplicates, report.sources[0].prompts);
    assert_eq!(prompts.len() as u64, report.sources[0].prompts);
}

#[test]
fn forced_format_overrides_detection() {
    let opts = PrepareOptions {
        format: Some("opencodeinstruct".parse::<Format>().unwrap()),
        ..Default::default()
    };
    let (report, _) = collect(
        &[datasets().join("evol_instruct_shape_sample.jsonl")],
        &opts,
    );
    assert_eq!(report.sources[0].malformed, 2);
    assert!(report.sources[0].issues[0].contains("opencodeinstruct: missing field \"input\""));
    assert!("nonsense".parse::<Format>().is_err());
}

/// Parquet written here with arrow (the reader under test is the arrow reader plus our
/// row-to-JSON conversion): flat string columns and a list<struct> `messages` column.
#[test]
fn parquet_rows_become_records() {
    use arrow_array::builder::{ListBuilder, StringBuilder, StructBuilder};
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Fields};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.parquet");
    let fields = Fields::from(vec![
        Field::new("role", DataType::Utf8, true),
        Field::new("content", DataType::Utf8, true),
    ]);
    let mut messages = ListBuilder::new(StructBuilder::from_fields(fields, 4));
    for turns in [
        &[("user", "Hi?"), ("assistant", "Hello.")][..],
        &[("user", "Bye?")],
    ] {
        let entry = messages.values();
        for (role, content) in turns {
            entry
                .field_builder::<StringBuilder>(0)
                .unwrap()
                .append_value(role);
            entry
                .field_builder::<StringBuilder>(1)
                .unwrap()
                .append_value(content);
            entry.append(true);
        }
        messages.append(true);
    }
    let prompt: ArrayRef = Arc::new(StringArray::from(vec!["Hi?", "Bye?"]));
    let messages: ArrayRef = Arc::new(messages.finish());
    let batch = RecordBatch::try_from_iter([("prompt", prompt), ("messages", messages)]).unwrap();
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();

    let (report, prompts) = collect(&[path], &PrepareOptions::default());
    assert_eq!(
        report.sources[0].formats.keys().collect::<Vec<_>>(),
        ["ultrachat"]
    );
    assert_eq!(
        prompts[0].messages,
        [json!({"role": "user", "content": "Hi?"})]
    );
    assert_eq!(
        prompts[0].meta["reference_answer"],
        json!([{"role": "assistant", "content": "Hello."}])
    );
    assert_eq!(
        prompts[1].messages,
        [json!({"role": "user", "content": "Bye?"})]
    );
    assert!(prompts[1].meta["record"]
        .as_str()
        .unwrap()
        .ends_with("rows.parquet: row 1"));
}

fn draftgen(args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_draftgen"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

#[test]
fn cli_writes_prompts_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let inputs: Vec<String> = all_shared()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut args = vec!["prepare", "--out", "p.jsonl"];
    args.extend(inputs.iter().map(String::as_str));
    let output = draftgen(&args, dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("518 prompts written to p.jsonl"),
        "{stderr}"
    );
    assert!(stderr.contains("skipped 4: no user turn"), "{stderr}");
    assert_eq!(read_prompts(dir.path().join("p.jsonl")).unwrap().len(), 518);

    args.push("--json");
    let output = draftgen(&args, dir.path());
    assert!(output.status.success());
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    let glaive = summary["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "glaive_toolcall_en_demo.json")
        .unwrap();
    assert_eq!(
        (glaive["prompts"].as_u64(), glaive["duplicates"].as_u64()),
        (Some(263), Some(37))
    );
}

#[test]
fn cli_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let mixed = malformed_dir().join("mixed.jsonl").display().to_string();
    let empty = malformed_dir().join("empty.jsonl").display().to_string();

    let lenient = draftgen(&["prepare", &mixed], dir.path());
    assert_eq!(lenient.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&lenient.stderr).contains("mixed.jsonl:7: sharegpt"));

    let strict = draftgen(&["prepare", "--strict", &mixed], dir.path());
    assert_eq!(strict.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("mixed.jsonl:2: broken JSON"));

    let nothing = draftgen(&["prepare", &empty], dir.path());
    assert_eq!(nothing.status.code(), Some(2));

    let bad_shard = draftgen(&["prepare", "--shard", "4/4", &mixed], dir.path());
    assert_eq!(bad_shard.status.code(), Some(2));
    let missing = draftgen(&["prepare", "no/such/file.jsonl"], dir.path());
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/file.jsonl"));
}

#[test]
fn bundled_samples_give_the_independently_counted_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = draftgen::dataset::samples::write_bundled(dir.path()).unwrap();
    let (report, prompts) = collect(&inputs, &PrepareOptions::default());
    assert_eq!(report.malformed(), 0);
    assert_eq!(
        prompts.len() as u64,
        draftgen::dataset::samples::BUNDLED_PROMPTS
    );
    assert_eq!(prompts.len(), 54);
    let duplicates: u64 = report.sources.iter().map(|s| s.duplicates).sum();
    assert_eq!(duplicates, 1);
    assert_eq!(report.sources.len(), 8);
}
