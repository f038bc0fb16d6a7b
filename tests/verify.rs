//! `draftgen verify` end to end. The expected figures come from outside draftgen: the real
//! llama.cpp exchanges in `tests/data/real_server/` (the server's own ids and usage), labelled by
//! `tests/data/gen/make_verify_reference.py` with Hugging Face `tokenizers` (which also made the
//! `--reference` file, with a non-canonical split and a divergent answer built in); fidelity
//! classes from cases constructed so that their class follows from its definition; per-source
//! figures from the prompts file `prepare` wrote.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::run::RunDir;
use common::servers::start_sim;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

fn exchanges() -> Vec<Value> {
    std::fs::read_to_string(data("real_server/llama_cpp_smollm2.jsonl"))
        .expect("recorded exchanges")
        .lines()
        .map(|l| serde_json::from_str(l).expect("exchange"))
        .collect()
}

fn expected() -> Value {
    serde_json::from_slice(&std::fs::read(data("verify/verify_expected.json")).expect("labels"))
        .expect("labels JSON")
}

fn smollm2() -> String {
    common::assets()
        .join("smollm2-135m-instruct")
        .display()
        .to_string()
}

/// The dataset a prompt id is put in (two sources, by the id's first hex digit).
fn source_of(id: &str) -> &'static str {
    if id.as_bytes()[0] < b'8' {
        "set-a"
    } else {
        "set-b"
    }
}

/// A journal record for one exchange, as `generate` writes it.
fn record(id: &str, n: usize, ex: &Value, provider: &str, source: Option<&str>) -> Value {
    let mut r = json!({
        "id": id, "attempt": 1, "status": "success", "endpoint": "llama",
        "http_status": 200, "provider": provider,
        "started_at": format!("2026-01-01T00:{:02}:{:02}Z", n / 60, n % 60),
        "latency_ms": 100, "request": ex["request"], "response": ex["response"],
    });
    if let Some(source) = source {
        r["source"] = json!(source);
    }
    r
}

/// A run directory: a manifest naming the server kind, and the records as one segment.
fn run_dir(dir: &Path, kind: &str, records: &[Value]) -> PathBuf {
    let run = dir.join("run");
    std::fs::create_dir_all(run.join("journal")).expect("mkdir");
    let manifest = json!({
        "model": "smollm2", "endpoints": ["llama"], "sampling": {}, "request_options": {},
        "dataset_hash": "x", "fingerprint": "x",
        "servers": [{"endpoint": "llama", "kind": kind, "spaces_around_special_tokens": false}],
    });
    std::fs::write(run.join("manifest.json"), manifest.to_string()).expect("manifest");
    let mut text = String::new();
    for r in records {
        text.push_str(&r.to_string());
        text.push('\n');
    }
    std::fs::write(run.join("journal/000001.jsonl"), text).expect("journal");
    run
}

fn verify(model: &str, run: &Path, extra: &[&str]) -> (Output, Value) {
    let o = Command::new(BIN)
        .args(["verify", "--model", model, "--run"])
        .arg(run)
        .arg("--json")
        .args(extra)
        .output()
        .expect("run draftgen verify");
    let report = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o, report)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn count(labels: &Value, ids: &[&str], label: &str) -> u64 {
    ids.iter()
        .filter(|id| labels[**id].as_str() == Some(label))
        .count() as u64
}

/// The histogram of `deltas[id]` over `ids`, as verify.json writes it.
fn histogram(deltas: &Value, ids: &[&str]) -> BTreeMap<String, u64> {
    let mut h = BTreeMap::new();
    for id in ids {
        *h.entry(deltas[*id].as_i64().expect("delta").to_string())
            .or_default() += 1;
    }
    h
}

fn as_histogram(v: &Value) -> BTreeMap<String, u64> {
    serde_json::from_value(v.clone()).expect("histogram")
}

/// The non-streamed exchanges (they carry llama.cpp's `__verbose.tokens`).
fn plain_records() -> (Vec<Value>, Vec<String>) {
    let mut records = Vec::new();
    let mut ids = Vec::new();
    for (n, ex) in exchanges().iter().enumerate() {
        if ex["stream"] == json!(false) {
            let id = ex["id"].as_str().expect("id");
            records.push(record(id, n, ex, "llama.cpp", Some(source_of(id))));
            ids.push(id.to_string());
        }
    }
    (records, ids)
}

fn check_reference(
    figures: &Value,
    labels: &Value,
    ids: &[&str],
    source: &str,
    without_reference: u64,
) {
    assert_eq!(figures["source"], json!(source), "{figures}");
    assert_eq!(figures["compared"], json!(ids.len()), "{figures}");
    for label in [
        "exact",
        "bpe_benign",
        "truncated_mid_character",
        "divergent",
    ] {
        assert_eq!(
            figures[label],
            json!(count(labels, ids, label)),
            "{label}: {figures}"
        );
    }
    assert_eq!(figures["without_reference"], json!(without_reference));
}

#[test]
fn real_server_ids_are_the_reference_per_source_and_provider() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (records, ids) = plain_records();
    let run = run_dir(dir.path(), "llama_cpp", &records);
    let (o, report) = verify(&smollm2(), &run, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let expected = expected();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(report["samples"]["total"], json!(21));
    assert_eq!(
        report["samples"]["by_fidelity"]["exact_by_server_ids"],
        json!(21),
        "the server's ids were in every answer"
    );
    let labels = &expected["server_ids"];
    check_reference(&report["reference"], labels, &ids, "server_ids", 0);
    // A real mix, not 100% exact (as tests/data/real_server/ shows).
    assert!(
        count(labels, &ids, "bpe_benign") > 0 && count(labels, &ids, "truncated_mid_character") > 0
    );
    let usage = &report["usage"];
    assert_eq!(
        as_histogram(&usage["prompt_tokens"]["delta_histogram"]),
        histogram(&expected["prompt_delta"], &ids)
    );
    assert_eq!(usage["prompt_tokens_within_kvv_band"], json!(21));
    assert_eq!(
        as_histogram(&usage["completion_tokens"]["delta_histogram"]),
        histogram(&expected["completion_delta"], &ids)
    );
    // Per dataset: each source's share of the same labels.
    for source in ["set-a", "set-b"] {
        let mine: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| source_of(id) == source)
            .collect();
        let group = &report["by_source"][source];
        assert_eq!(group["samples"], json!(mine.len()), "{source}");
        check_reference(&group["reference"], labels, &mine, "server_ids", 0);
    }
    assert_eq!(report["by_provider"]["llama.cpp"]["samples"], json!(21));
    assert_eq!(report["gate"]["ok"], json!(true));
    assert!(run.join("verify.json").is_file() && run.join("report.html").is_file());
}

#[test]
fn reference_file_overrides_server_ids_and_finds_the_divergent_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (records, ids) = plain_records();
    let run = run_dir(dir.path(), "llama_cpp", &records);
    let out = dir.path().join("out");
    let reference = data("verify/verify_reference.jsonl");
    let (o, report) = verify(
        &smollm2(),
        &run,
        &[
            "--reference",
            reference.to_str().expect("path"),
            "--out",
            out.to_str().expect("path"),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "a divergent sample fails: {}",
        stderr(&o)
    );
    let expected = expected();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let labels = &expected["reference_file"];
    check_reference(&report["reference"], labels, &ids, "file", 0);
    assert_eq!(
        count(labels, &ids, "bpe_benign"),
        3,
        "the built-in non-canonical split"
    );
    let positions: BTreeMap<String, u64> =
        serde_json::from_value(expected["divergent_positions"].clone()).expect("positions");
    let found: BTreeMap<String, u64> = report["reference"]["divergent_samples"]
        .as_array()
        .expect("divergent samples")
        .iter()
        .map(|d| {
            assert!(
                d["ours"].as_str().is_some_and(|s| s.contains('\u{2502}')),
                "{d}"
            );
            assert!(
                d["reference"].as_str().is_some_and(|s| s.contains("zebra")),
                "{d}"
            );
            (
                d["id"].as_str().expect("id").to_string(),
                d["position"].as_u64().expect("position"),
            )
        })
        .collect();
    assert_eq!(found, positions);
    assert_eq!(report["gate"]["ok"], json!(false));
    assert!(
        report["gate"]["reasons"][0]
            .as_str()
            .is_some_and(|r| r.contains("divergent")),
        "{}",
        report["gate"]
    );
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    for id in positions.keys() {
        assert!(
            html.contains(id.as_str()),
            "the divergent sample is in the report"
        );
    }
    assert!(!run.join("verify.json").exists(), "--out is where it goes");
}

#[test]
fn streamed_answers_without_ids_are_checked_by_their_usage() {
    // All 42 exchanges: the streamed ones (no ids) as a second provider. Their fidelity follows
    // from the counts: with a generic server and plain text there is one candidate, `unique` when
    // `usage.completion_tokens` is the canonical count, else no token stream fits: `inconsistent`.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut records = Vec::new();
    let mut stream_ids = Vec::new();
    for (n, ex) in exchanges().iter().enumerate() {
        let id = ex["id"].as_str().expect("id");
        if ex["stream"] == json!(true) {
            let sid = format!("{id}-stream");
            records.push(record(&sid, n, ex, "llama.cpp-stream", None));
            stream_ids.push(id.to_string());
        } else {
            records.push(record(id, n, ex, "llama.cpp", Some(source_of(id))));
        }
    }
    let run = run_dir(dir.path(), "generic", &records);
    let (o, report) = verify(&smollm2(), &run, &[]);
    let expected = expected();
    let deltas = &expected["stream_completion_delta"];
    let mismatched = stream_ids
        .iter()
        .filter(|id| deltas[id.as_str()] != json!(0))
        .count() as u64;
    assert!(mismatched > 0);
    assert_eq!(
        o.status.code(),
        Some(1),
        "inconsistent samples fail: {}",
        stderr(&o)
    );
    let stream = &report["by_provider"]["llama.cpp-stream"];
    assert_eq!(stream["samples"], json!(21));
    assert_eq!(
        stream["by_fidelity"]["inconsistent"],
        json!(mismatched),
        "{stream}"
    );
    assert_eq!(
        stream["by_fidelity"]["unique"],
        json!(21 - mismatched),
        "{stream}"
    );
    assert_eq!(stream["reference"]["without_reference"], json!(21));
    let sids: Vec<&str> = stream_ids.iter().map(String::as_str).collect();
    assert_eq!(
        as_histogram(&stream["usage"]["completion_tokens"]["delta_histogram"]),
        histogram(deltas, &sids)
    );
    assert_eq!(
        as_histogram(&stream["usage"]["prompt_tokens"]["delta_histogram"]),
        histogram(&expected["stream_prompt_delta"], &sids)
    );
    // Records without a source (old journals) are counted, under "(unknown)".
    assert_eq!(report["by_source"]["(unknown)"]["samples"], json!(21));
    assert_eq!(report["samples"]["total"], json!(42));
}

/// The fixture case of `tests/data/reconstruct/FILE` named `name`.
fn reconstruct_case(file: &str, name: &str) -> Value {
    std::fs::read_to_string(data(&format!("reconstruct/{file}")))
        .expect("cases")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("case"))
        .find(|c| c["name"] == json!(name))
        .unwrap_or_else(|| panic!("no case {name}"))
}

#[test]
fn each_fidelity_class_from_constructed_cases() {
    // SmolLM2 behind llama.cpp: the real answer with its ids, without them, with a wrong count,
    // and a length cut ending in U+FFFD (how a server shows a character cut in half).
    let exchanges = exchanges();
    let labels = expected();
    let plain = |label: &str| {
        exchanges
            .iter()
            .find(|ex| {
                ex["stream"] == json!(false)
                    && labels["server_ids"][ex["id"].as_str().unwrap()] == json!(label)
            })
            .expect("an exchange with that label")
    };
    let exact = plain("exact");
    let cut = plain("truncated_mid_character");
    let strip = |ex: &Value| {
        let mut ex = ex.clone();
        ex["response"]
            .as_object_mut()
            .expect("body")
            .remove("__verbose");
        ex
    };
    let mut miscounted = strip(exact);
    let n = miscounted["response"]["usage"]["completion_tokens"]
        .as_u64()
        .expect("count");
    miscounted["response"]["usage"]["completion_tokens"] = json!(n + 7);
    let mut replaced = strip(cut);
    let content = replaced["response"]["choices"][0]["message"]["content"]
        .as_str()
        .expect("content")
        .to_string();
    replaced["response"]["choices"][0]["message"]["content"] = json!(format!("{content}\u{FFFD}"));
    replaced["response"]["usage"]
        .as_object_mut()
        .expect("usage")
        .remove("completion_tokens");
    let records = [
        record("a-server-ids", 0, exact, "p", Some("s")),
        record("b-text-only", 1, &strip(exact), "p", Some("s")),
        record("c-miscounted", 2, &miscounted, "p", Some("s")),
        record("d-cut-character", 3, &replaced, "p", Some("s")),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let run = run_dir(dir.path(), "generic", &records);
    let (o, report) = verify(&smollm2(), &run, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "inconsistent fails: {}",
        stderr(&o)
    );
    let classes = &report["samples"]["by_fidelity"];
    for (class, n) in [
        ("exact_by_server_ids", 1),
        ("unique", 1),
        ("inconsistent", 1),
        ("truncated_mid_character", 1),
        ("ambiguous", 0),
        ("lossy", 0),
    ] {
        assert_eq!(classes[class], json!(n), "{class}: {classes}");
    }

    // Kimi K2.5 through OpenRouter (cases made by tests/data/gen/make_reconstruct_cases.py):
    // OpenRouter replaces the model's tool-call ids (lossy); a length cut with no usage that the
    // generator marked ambiguous; a plain answer whose count settles it (unique).
    let kimi: Vec<Value> = [
        "kimi_k25/openrouter/single_call/18",
        "kimi_k25/openrouter/non_ascii+length_mid_reasoning+no_usage/86",
        "kimi_k25/openrouter/no_tools_simple/0",
    ]
    .iter()
    .enumerate()
    .map(|(n, name)| {
        let case = reconstruct_case("kimi_k25.jsonl", name);
        record(&format!("kimi-{n}"), n, &case, "Moonshot AI", Some("kimi"))
    })
    .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    // The answers are OpenRouter's: under `generic` a plain reasoning answer stays `ambiguous`
    // (vLLM strips the reasoning's trailing whitespace: reconstruct/undeclared.rs).
    let run = run_dir(dir.path(), "openrouter", &kimi);
    let (o, report) = verify("kimi-k2.5", &run, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let classes = &report["samples"]["by_fidelity"];
    for (class, n) in [("lossy", 1), ("ambiguous", 1), ("unique", 1)] {
        assert_eq!(classes[class], json!(n), "{class}: {classes}");
    }
    assert_eq!(report["reference"]["source"], json!("none"));
}

#[test]
fn bad_input_exit_codes_and_bad_reference_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (o, _) = verify(&smollm2(), dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "not a run: {}", stderr(&o));
    assert!(
        stderr(&o).contains("neither a run directory"),
        "{}",
        stderr(&o)
    );

    let (records, _) = plain_records();
    let run = run_dir(dir.path(), "llama_cpp", &records[..2]);
    let (o, _) = verify(&smollm2(), &run, &["--reference", "/nonexistent/ids.jsonl"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/nonexistent/ids.jsonl"),
        "{}",
        stderr(&o)
    );

    // A bad reference line is named by file:line and the rest is still compared.
    let reference = dir.path().join("ids.jsonl");
    let ids = |r: &Value| r["response"]["__verbose"]["tokens"].clone();
    std::fs::write(
        &reference,
        format!(
            "{}\n{{\"id\": \"x\", \"output_ids\": \"nope\"}}\n{}\n",
            json!({"id": records[0]["id"], "output_ids": ids(&records[0])}),
            json!({"id": records[1]["id"], "output_ids": ids(&records[1])}),
        ),
    )
    .expect("write");
    let (o, report) = verify(
        &smollm2(),
        &run,
        &["--reference", reference.to_str().unwrap()],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "an unreadable line fails the gate: {}",
        stderr(&o)
    );
    assert_eq!(report["reference"]["compared"], json!(2));
    let problems = report["problems"].to_string();
    assert!(problems.contains("ids.jsonl:2 (id x)"), "{problems}");
}

fn sha256_hex(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).expect("read")))
}

#[test]
fn sim_run_with_two_sources_needs_only_the_run_directory() {
    use draftgen::sim::{Flavor, SimConfig};
    let dir = RunDir::new();
    // Two datasets, prepared into one prompts file.
    let mut files = Vec::new();
    for (name, n) in [("alpha", 5), ("beta", 3)] {
        let path = dir.path().join(format!("{name}.jsonl"));
        let lines: String = (0..n)
            .map(|i| {
                json!({"messages": [{"role": "user", "content": format!("{name} question {i}?")}]})
                    .to_string()
                    + "\n"
            })
            .collect();
        std::fs::write(&path, lines).expect("dataset");
        files.push(path);
    }
    let prompts = dir.prompts();
    let o = Command::new(BIN)
        .arg("prepare")
        .args(&files)
        .arg("--out")
        .arg(&prompts)
        .output()
        .expect("prepare");
    assert!(o.status.success(), "{}", stderr(&o));
    // The expected figures: prompts per source, as prepare wrote them.
    let mut per_source: BTreeMap<String, u64> = BTreeMap::new();
    for line in std::fs::read_to_string(&prompts).expect("prompts").lines() {
        let p: Value = serde_json::from_str(line).expect("prompt");
        *per_source
            .entry(p["source"].as_str().expect("source").to_string())
            .or_default() += 1;
    }
    assert_eq!(per_source.len(), 2, "{per_source:?}");

    let sim = start_sim(SimConfig {
        flavor: Flavor::OpenRouter,
        seed: 3,
        // The run's model must be in the model list (an unlisted id stops the run).
        model_name: "kimi-k2.5".into(),
        ..SimConfig::default()
    });
    let run = dir.run();
    let o = dir
        .generate(&sim.base_url())
        .args([
            "--model",
            "kimi-k2.5",
            "--kind",
            "openrouter",
            "--max-tokens",
            "64",
        ])
        .env("OPENROUTER_API_KEY", "sk-or-v1-verify-test-key")
        .output()
        .expect("generate");
    assert!(o.status.success(), "{}", stderr(&o));

    // The manifest records the kind actually used, and the prompts file with its hash.
    let manifest: draftgen::journal::Manifest =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).expect("manifest"))
            .expect("manifest JSON");
    assert_eq!(
        manifest.servers.first().map(|s| s.kind),
        Some(draftgen::api::ServerKind::OpenRouter),
        "--kind openrouter must not be recorded as generic"
    );
    let recorded = manifest.prompts.expect("prompts file recorded");
    assert_eq!(
        Path::new(&recorded.path),
        std::fs::canonicalize(&prompts).expect("canonical")
    );
    assert_eq!(recorded.sha256, sha256_hex(&prompts));

    let check = |report: &Value| {
        for (source, n) in &per_source {
            assert_eq!(
                report["by_source"][source]["samples"],
                json!(n),
                "{source}: {}",
                report["by_source"]
            );
        }
        let providers: u64 = report["by_provider"]
            .as_object()
            .expect("providers")
            .values()
            .map(|g| g["samples"].as_u64().expect("n"))
            .sum();
        assert_eq!(providers, 8);
        assert!(
            report["by_provider"].get("(unknown)").is_none(),
            "{}",
            report["by_provider"]
        );
    };
    let (o, report) = verify("kimi-k2.5", &run, &[]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    check(&report);

    // An older journal without `source`: the manifest's prompts file (hash unchanged) fills in.
    let segment = run.join("journal/000001.jsonl");
    let lines: String = std::fs::read_to_string(&segment)
        .expect("journal")
        .lines()
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).expect("record");
            assert!(r["source"].is_string(), "records carry their source");
            r.as_object_mut().expect("record").remove("source");
            r.to_string() + "\n"
        })
        .collect();
    std::fs::write(&segment, lines).expect("rewrite");
    let (_, report) = verify("kimi-k2.5", &run, &[]);
    check(&report);

    // A prompts file that changed since is not trusted, and says so.
    std::fs::write(&prompts, "").expect("truncate");
    let (_, report) = verify("kimi-k2.5", &run, &[]);
    assert_eq!(report["by_source"]["(unknown)"]["samples"], json!(8));
    assert!(report["problems"]
        .to_string()
        .contains("changed since the run recorded it"));
}

#[test]
fn a_build_directory_verifies_from_its_rows() {
    // `build` takes the server's ids; against the reference file (the server's ids, with one
    // answer re-split and one replaced, see the generator) they are exact except those two.
    let dir = tempfile::tempdir().expect("tempdir");
    let (records, ids) = plain_records();
    let run = run_dir(dir.path(), "llama_cpp", &records);
    let out = dir.path().join("build");
    let o = Command::new(BIN)
        .args(["build", "--model", &smollm2(), "--run"])
        .arg(&run)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("build");
    assert!(o.status.success(), "{}", stderr(&o));
    let reference = data("verify/verify_reference.jsonl");
    let (o, report) = verify(
        &smollm2(),
        &out,
        &["--reference", reference.to_str().expect("path")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(report["input"], json!("build"));
    assert_eq!(
        report["samples"]["by_fidelity"]["exact_by_server_ids"],
        json!(ids.len())
    );
    let r = &report["reference"];
    assert_eq!(
        (
            r["compared"].clone(),
            r["exact"].clone(),
            r["bpe_benign"].clone(),
            r["divergent"].clone()
        ),
        (json!(ids.len()), json!(ids.len() - 2), json!(1), json!(1)),
        "{r}"
    );
    // Usage, from the run build.json names: the rows' prompts are our render (as the run's
    // text rebuild), so the prompt deltas are the generator's labels.
    let ids_str: Vec<&str> = ids.iter().map(String::as_str).collect();
    let usage = &report["usage"];
    assert_eq!(
        as_histogram(&usage["prompt_tokens"]["delta_histogram"]),
        histogram(&expected()["prompt_delta"], &ids_str),
        "{usage:#}"
    );
    assert_eq!(usage["prompt_tokens_within_kvv_band"], json!(ids.len()));
    // The completions are the server's own ids (`__verbose.tokens`, the end token included when
    // the model stopped): against the server's own count, read from the recorded exchanges.
    let mut completion = BTreeMap::new();
    for ex in exchanges().iter().filter(|ex| ex["stream"] == json!(false)) {
        let r = &ex["response"];
        let ids = r["__verbose"]["tokens"].as_array().expect("tokens").len() as i64;
        let reported = r["usage"]["completion_tokens"].as_i64().expect("usage");
        *completion.entry((reported - ids).to_string()).or_default() += 1u64;
    }
    assert_eq!(
        as_histogram(&usage["completion_tokens"]["delta_histogram"]),
        completion,
        "{usage:#}"
    );
    // A build whose run is gone is still verified, without usage, and says why.
    std::fs::rename(&run, dir.path().join("moved")).expect("move the run");
    let (o, moved) = verify(&smollm2(), &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(moved["usage"]["prompt_tokens"]["compared"], json!(0));
    assert!(
        moved["problems"]
            .as_array()
            .expect("problems")
            .iter()
            .any(|p| p
                .as_str()
                .is_some_and(|p| p.contains("usage cross-check skipped"))),
        "{}",
        moved["problems"]
    );
    // The rows carry the journal's sources.
    for source in ["set-a", "set-b"] {
        let n = ids.iter().filter(|id| source_of(id) == source).count();
        assert_eq!(
            report["by_source"][source]["samples"],
            json!(n),
            "{}",
            report["by_source"]
        );
    }
}

/// `generate --turns all` on the simulator (vLLM flavour, the server's ids kept): a 3-turn
/// conversation is ONE sample, as `build` writes it, and each turn is checked on its own. Turn 2
/// is then made inconsistent (its ids dropped, its `usage.completion_tokens` off by 7 — no token
/// stream fits): the conversation is `inconsistent`, turns 1 and 3 still exact against their
/// ids, and the gate fails.
#[test]
fn a_multi_turn_conversation_is_one_sample_reported_per_turn() {
    use draftgen::sim::{Flavor, SimConfig};
    let dir = RunDir::new();
    let conversation = json!({"id": "conv1", "source": "chats", "messages": [
        {"role": "user", "content": "Name a prime number."},
        {"role": "assistant", "content": "Seven."},
        {"role": "user", "content": "And a larger one?"},
        {"role": "assistant", "content": "Thirteen."},
        {"role": "user", "content": "Now add them."},
        {"role": "assistant", "content": "Twenty."}
    ]});
    dir.write_prompts([conversation]);
    let kimi = common::assets().join("kimi-k2.5");
    let sim = start_sim(SimConfig {
        flavor: Flavor::Vllm,
        seed: 7,
        model_dir: Some(kimi.clone()),
        profile: Some("kimi-k2.5".into()),
        ..SimConfig::default()
    });
    let run = dir.run();
    let o = dir
        .generate(&sim.base_url())
        .args(["--turns", "all", "--kind", "vllm", "--server-token-ids"])
        .args(["--model", "m"])
        .output()
        .expect("generate");
    assert!(o.status.success(), "{}", stderr(&o));
    let model = kimi.display().to_string();
    let turn_ids = ["conv1:turn1/3", "conv1:turn2/3", "conv1:turn3/3"];

    let (o, report) = verify(&model, &run, &["--profile", "kimi-k2.5"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        report["samples"]["total"],
        json!(1),
        "one sample per conversation"
    );
    assert_eq!(report["by_source"]["chats"]["samples"], json!(1));
    let c = &report["conversations"];
    assert_eq!(
        (c["conversations"].clone(), c["turns"].clone()),
        (json!(1), json!(3))
    );
    let listed = &c["listed"][0];
    assert_eq!(listed["id"], "conv1");
    let turns = listed["turns"].as_array().expect("turns");
    let ids: Vec<&str> = turns.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, turn_ids);
    for t in turns {
        assert_eq!(t["fidelity"], "exact_by_server_ids", "{t:#}");
        assert_eq!(t["reference"], "exact", "{t:#}");
        assert_eq!(t["completion_tokens_delta"], json!(0), "{t:#}");
    }
    assert_eq!(report["reference"]["compared"], json!(1));
    assert_eq!(report["reference"]["exact"], json!(1));

    // Turn 2 made inconsistent.
    let segment = std::fs::read_dir(run.join("journal"))
        .expect("journal")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a segment");
    let text = std::fs::read_to_string(&segment).expect("segment");
    let mut edited = String::new();
    for line in text.lines() {
        let mut r: Value = serde_json::from_str(line).expect("record");
        if r["id"] == turn_ids[1] {
            let choice = &mut r["response"]["choices"][0];
            let choice = choice.as_object_mut().expect("choice");
            choice.remove("token_ids");
            choice.remove("prompt_token_ids");
            r["response"]
                .as_object_mut()
                .expect("body")
                .remove("prompt_token_ids");
            let n = r["response"]["usage"]["completion_tokens"]
                .as_u64()
                .expect("usage");
            r["response"]["usage"]["completion_tokens"] = json!(n + 7);
            if let Some(prefix) = r.get_mut("completion_tokens") {
                *prefix = json!(n + 7);
            }
        }
        edited.push_str(&r.to_string());
        edited.push('\n');
    }
    std::fs::write(&segment, edited).expect("write segment");
    let (o, report) = verify(&model, &run, &["--profile", "kimi-k2.5"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(report["samples"]["total"], json!(1));
    assert_eq!(report["samples"]["by_fidelity"]["inconsistent"], json!(1));
    let listed = &report["conversations"]["listed"][0];
    assert_eq!(listed["fidelity"], "inconsistent", "{listed:#}");
    let turns = listed["turns"].as_array().expect("turns");
    let fidelity: Vec<&str> = turns
        .iter()
        .filter_map(|t| t["fidelity"].as_str())
        .collect();
    assert_eq!(
        fidelity,
        ["exact_by_server_ids", "inconsistent", "exact_by_server_ids"],
        "{listed:#}"
    );
    assert_eq!(turns[1]["reference"], Value::Null, "no ids left on turn 2");
    assert_eq!(turns[1]["completion_tokens_delta"], json!(7), "{listed:#}");
    for t in [&turns[0], &turns[2]] {
        assert_eq!(t["reference"], "exact", "{t:#}");
    }
    assert_eq!(
        report["conversations"]["turns_by_fidelity"]["inconsistent"],
        json!(1)
    );
    assert!(report["gate"]["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .any(|r| r.as_str().is_some_and(|r| r.contains("inconsistent"))));
}

/// The journal's records of a run, each parsed.
fn journal_records(run: &Path) -> Vec<Value> {
    let mut records = Vec::new();
    let mut segments: Vec<PathBuf> = std::fs::read_dir(run.join("journal"))
        .expect("journal")
        .map(|e| e.expect("entry").path())
        .collect();
    segments.sort();
    for segment in segments {
        for line in std::fs::read_to_string(&segment).expect("segment").lines() {
            records.push(serde_json::from_str(line).expect("record"));
        }
    }
    records
}

/// A run answered by three simulated OpenRouter providers: `Good` answers as OpenRouter does,
/// `Short` too but its answers' `usage.completion_tokens` are then lowered by 5 in the journal
/// (fewer tokens than its answer's text holds: no token stream of that length is the text, so
/// by definition every one of its samples is `inconsistent`), `Dead` fails every request (the simulator's `down`). Expected
/// figures come from the journal itself (who answered, who failed, with what) and from that
/// construction — never from verify's own output.
#[test]
fn a_multi_provider_run_gets_verdicts_and_a_routing_line() {
    use draftgen::sim::{Flavor, SimConfig};
    let dir = RunDir::new();
    let dataset = dir.path().join("weather.jsonl");
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "description": "Current weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    let lines: String = (0..24)
        .map(|i| {
            let mut p = json!({"messages": [{"role": "user",
                "content": format!("What is the weather in city number {i}?")}]});
            if i % 4 == 0 {
                p["tools"] = tools.clone();
            }
            p.to_string() + "\n"
        })
        .collect();
    std::fs::write(&dataset, lines).expect("dataset");
    let o = Command::new(BIN)
        .arg("prepare")
        .arg(&dataset)
        .arg("--out")
        .arg(dir.prompts())
        .output()
        .expect("prepare");
    assert!(o.status.success(), "{}", stderr(&o));
    let sim = start_sim(SimConfig {
        flavor: Flavor::OpenRouter,
        seed: 5,
        model_dir: Some(common::assets().join("kimi-k2.5")),
        providers: [
            "Good:openrouter",
            "Short:openrouter",
            "Dead:openrouter:down",
        ]
        .iter()
        .map(|p| p.parse().expect("provider spec"))
        .collect(),
        ..SimConfig::default()
    });
    let run = dir.run();
    // Without fallbacks, as OpenRouter does, a request routed to Dead fails there (with them,
    // the sim, like OpenRouter, would answer it from another provider).
    let config = dir.path().join("run.toml");
    std::fs::write(&config, "[request.provider]\nallow_fallbacks = false\n").expect("config");
    let o = dir
        .generate(&sim.base_url())
        .arg("--config")
        .arg(&config)
        .args([
            "--model",
            "moonshotai/kimi-k2.5",
            "--kind",
            "openrouter",
            "--max-tokens",
            "1024",
        ])
        .env("OPENROUTER_API_KEY", "sk-or-v1-verify-test-key")
        .output()
        .expect("generate");
    assert!(run.join("journal").is_dir(), "{}", stderr(&o));

    // Lower Short's counts; tally what the journal says of each provider.
    let mut records = journal_records(&run);
    let mut short_ids: Vec<String> = Vec::new();
    let (mut good, mut dead_failed, mut failed) = (0u64, 0u64, 0u64);
    for r in &mut records {
        let provider = r["provider"].as_str().unwrap_or_default().to_string();
        match (r["status"].as_str(), provider.as_str()) {
            (Some("success"), "Short") => {
                short_ids.push(r["id"].as_str().expect("id").to_string());
                let n = r["response"]["usage"]["completion_tokens"]
                    .as_u64()
                    .expect("usage");
                assert!(n > 5, "{r}");
                r["response"]["usage"]["completion_tokens"] = json!(n - 5);
                if r["completion_tokens"].is_u64() {
                    r["completion_tokens"] = json!(n - 5);
                }
            }
            (Some("success"), "Good") => good += 1,
            (Some("failed"), name) => {
                failed += 1;
                if name == "Dead" {
                    dead_failed += 1;
                }
            }
            _ => {}
        }
    }
    assert!(good > 0 && !short_ids.is_empty() && dead_failed > 0);
    std::fs::remove_dir_all(run.join("journal")).expect("rm journal");
    std::fs::create_dir_all(run.join("journal")).expect("mkdir");
    let text: String = records.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(run.join("journal/000001.jsonl"), text).expect("journal");

    let (o, report) = verify("kimi-k2.5", &run, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "inconsistent samples fail the gate: {}",
        stderr(&o)
    );
    let rows = report["providers"]["rows"].as_array().expect("rows");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["provider"] == name)
            .unwrap_or_else(|| panic!("{name}: {rows:#?}"))
    };
    let n_short = short_ids.len() as u64;
    assert_eq!(row("Good")["verdict"], "use", "{:#}", row("Good"));
    assert_eq!(row("Good")["answers"], json!(good));
    assert_eq!(row("Short")["verdict"], "avoid");
    assert_eq!(row("Short")["dropped"], json!(n_short));
    assert_eq!(row("Short")["shares"]["dropped"], json!(1.0));
    assert!(row("Short")["reason"]
        .as_str()
        .is_some_and(|r| r.starts_with(&format!("build drops {n_short} of {n_short}"))));
    assert_eq!(row("Dead")["verdict"], "avoid");
    assert_eq!(row("Dead")["answers"], json!(0));
    assert_eq!(row("Dead")["failed"], json!(dead_failed));
    assert_eq!(
        row("Dead")["failures_by_class"]["server_error"],
        json!(dead_failed)
    );
    assert_eq!(report["failures"]["total"], json!(failed));
    assert_eq!(report["failures"]["caused_by"], "Dead");
    let routing = r#"provider = { ignore = ["Short", "Dead"] }"#;
    assert_eq!(report["providers"]["routing"], routing);

    // Trust: every inconsistent sample named with its reason and first difference, and what
    // build drops.
    let mut listed: Vec<&str> = report["inconsistent_samples"]
        .as_array()
        .expect("inconsistent samples")
        .iter()
        .map(|s| {
            assert!(s["reasons"].to_string().contains("usage_disagrees"), "{s}");
            assert!(
                s["first_difference"]
                    .as_str()
                    .is_some_and(|d| d.starts_with("completion_tokens reported")),
                "{s}"
            );
            s["id"].as_str().expect("id")
        })
        .collect();
    listed.sort_unstable();
    short_ids.sort_unstable();
    assert_eq!(listed, short_ids);
    assert_eq!(
        report["fidelity_reasons"]["inconsistent"]["usage_disagrees"],
        json!(n_short)
    );
    assert_eq!(report["build_drops"]["drops"], json!(n_short));

    // Tool-call samples per provider, as the journal's answers carry calls.
    let with_calls = |name: &str| {
        records
            .iter()
            .filter(|r| r["status"] == "success" && r["provider"] == name)
            .filter(|r| {
                r["response"]["choices"][0]["message"]["tool_calls"]
                    .as_array()
                    .is_some_and(|c| !c.is_empty())
            })
            .count() as u64
    };
    assert_eq!(row("Good")["tool_call_samples"], json!(with_calls("Good")));
    assert_eq!(
        row("Short")["tool_call_samples"],
        json!(with_calls("Short"))
    );

    // The same in the terminal summary and the report.
    let summary = stderr(&o);
    for line in [
        format!("routing    paste into the run config: {routing}"),
        format!("build      build drops {n_short} sample(s) of class inconsistent"),
        "came from Dead".to_string(),
        format!("inconsistent {}", short_ids[0]),
    ] {
        assert!(summary.contains(&line), "{line}\n{summary}");
    }
    let html = std::fs::read_to_string(run.join("report.html")).expect("report");
    for heading in [
        "<h2>What to trust</h2>",
        "<h2>Providers and verdicts</h2>",
        "<h2>Glossary of fidelity classes</h2>",
    ] {
        assert_eq!(html.matches(heading).count(), 1, "{heading}");
    }
    if with_calls("Good") + with_calls("Short") > 0 {
        assert!(html.contains("<b>Tool-call samples rebuilt exactly:</b>"));
    }
    assert!(html.contains("provider = { ignore = [&quot;Short&quot;, &quot;Dead&quot;] }"));

    // The build of that run: its rows no longer hold Short's samples (build dropped them), and
    // verify on the build directory still avoids Short for them.
    let o = dir.build("kimi-k2.5", "out").output().expect("build");
    assert!(o.status.success(), "{}", stderr(&o));
    let (o, report) = verify("kimi-k2.5", &dir.join("out"), &[]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let rows = report["providers"]["rows"].as_array().expect("rows");
    let short = rows
        .iter()
        .find(|r| r["provider"] == "Short")
        .unwrap_or_else(|| panic!("{rows:#?}"));
    assert_eq!(short["dropped"], json!(n_short), "{short:#}");
    assert_eq!(short["verdict"], "avoid");
    assert_eq!(report["build_drops"]["drops"], json!(n_short));
}
