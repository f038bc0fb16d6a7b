//! The tool-call audit (`draftgen::verify::audit`):
//!
//! - its JSON-schema verdicts equal Python `jsonschema`'s on Kimi-Vendor-Verifier's 212 real
//!   schemas (`tests/data/audit/schema_cases.jsonl`, made by `make_schema_cases.py`);
//! - K2-Vendor-Verifier's ToolCall-Trigger F1 and ToolCall-Schema Accuracy on a hand-computed
//!   case (journals written here, numbers worked out by hand below);
//! - on simulator runs with known injected tool-call defects, per provider and per dataset, it
//!   finds each defect and nothing else;
//! - every figure in verify.json's `tool_calls` equals what `tests/py/k2vv_oracle.py` (Python
//!   `json` + `jsonschema`, written from K2-Vendor-Verifier's `tool_calls_eval.py`) computes from
//!   the same journal, on simulator runs with every injectable defect and on constructed answers.

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use common::run::{RunDir, BIN};
use common::servers::start_sim;
use draftgen::verify::audit::answer::Problem;
use draftgen::verify::audit::schema::Schemas;
use draftgen::verify::audit::{audit_run, AuditOptions, ToolAudit};

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/audit")
}

fn kimi() -> draftgen::model::Profile {
    let dir = draftgen::model::assets::resolve_model("kimi-k2.5").expect("the kimi-k2.5 model");
    draftgen::model::Profile::load(&dir, &Default::default()).expect("the kimi-k2.5 profile")
}

/// Every (schema, arguments) case: our validator's verdict is Python `jsonschema`'s (what
/// K2-Vendor-Verifier's `jsonschema.validate` decides: a schema that fails its meta-schema fails).
#[test]
fn schema_verdicts_equal_python_jsonschema_on_kimi_vendor_verifier_schemas() {
    let text = std::fs::read_to_string(data().join("schema_cases.jsonl")).unwrap();
    let mut schemas = Schemas::default();
    let (mut n, mut valid, mut invalid) = (0, 0, 0);
    let mut wrong = Vec::new();
    let mut suites = std::collections::BTreeSet::new();
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let expected = case["valid"].as_bool().unwrap() && case["schema_ok"].as_bool().unwrap();
        let got = schemas
            .fits(&case["schema"], &case["arguments"])
            .unwrap_or(false);
        if got != expected {
            wrong.push(format!(
                "{}:{} {}: python {expected}, ours {got}: {} against {}",
                case["suite"], case["line"], case["rule"], case["arguments"], case["schema"]
            ));
        }
        suites.insert((case["suite"].to_string(), case["line"].as_u64()));
        n += 1;
        if expected {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    assert_eq!(suites.len(), 212, "every walle schema has cases");
    assert!(
        valid > 200 && invalid > 400,
        "{valid} valid, {invalid} invalid of {n}"
    );
    assert!(
        wrong.is_empty(),
        "{} of {n} verdicts differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A journal line as `generate` writes it (the fields the audit reads).
fn record(id: &str, source: &str, provider: &str, request: Value, response: Value) -> Value {
    json!({"id": id, "attempt": 1, "status": "success", "endpoint": "http://127.0.0.1:1/v1",
           "provider": provider, "source": source, "started_at": "2026-12-01T00:00:00Z",
           "latency_ms": 1, "request": request, "response": response})
}

fn write_run(dir: &Path, records: &[Value]) {
    std::fs::create_dir_all(dir.join("journal")).unwrap();
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.join("journal/000001.jsonl"), text).unwrap();
}

fn tool_request() -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "add"}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters": {
               "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}]})
}

fn answer(finish: &str, calls: &[(&str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("functions.{name}:{i}"), "type": "function",
                                         "function": {"name": name, "arguments": args}})
        })
        .collect();
    let mut message =
        json!({"role": "assistant", "content": if calls.is_empty() { "ok" } else { "" }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({"id": "x", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
}

/// Hand-computed K2-Vendor-Verifier metrics.
///
/// Reference run: p0..p5 end with `tool_calls`, p6..p9 with `stop`.
/// This run: p0..p3 `tool_calls` (TP = 4), p4, p5 `stop` (FN = 2), p6 `tool_calls` (FP = 1),
/// p7..p9 `stop` (TN = 3); p10 only here (not compared).
///   precision = 4 / (4 + 1) = 0.8, recall = 4 / (4 + 2) = 2/3,
///   F1 = 2 · 0.8 · 2/3 / (0.8 + 2/3) = (16/15) / (22/15) = 8/11 ≈ 0.72727 — below K2.5's 73%.
/// Schema accuracy: 5 answers end with `tool_calls` (p0, p1, p2, p3, p6); p1's arguments are not
/// JSON, p2's `a` is a string, p3's second call names an undeclared tool: 2 of 5 valid = 0.4.
#[test]
fn trigger_f1_and_schema_accuracy_on_a_hand_computed_case() {
    let dir = tempfile::tempdir().unwrap();
    let (ours, reference) = (dir.path().join("ours"), dir.path().join("reference"));
    let ok = [("f", r#"{"a": 1}"#)];
    let mine: Vec<(usize, Value)> = vec![
        (0, answer("tool_calls", &ok)),
        (1, answer("tool_calls", &[("f", r#"{"a": 1"#)])),
        (2, answer("tool_calls", &[("f", r#"{"a": "1"}"#)])),
        (
            3,
            answer("tool_calls", &[("f", r#"{"a": 1}"#), ("g", "{}")]),
        ),
        (4, answer("stop", &[])),
        (5, answer("stop", &[])),
        (6, answer("tool_calls", &ok)),
        (7, answer("stop", &[])),
        (8, answer("stop", &[])),
        (9, answer("stop", &[])),
        (10, answer("stop", &[])),
    ];
    let records: Vec<Value> = mine
        .into_iter()
        .map(|(i, a)| record(&format!("p{i}"), "d", "P", tool_request(), a))
        .collect();
    write_run(&ours, &records);
    let refs: Vec<Value> = (0..10)
        .map(|i| {
            let a = if i < 6 {
                answer("tool_calls", &ok)
            } else {
                answer("stop", &[])
            };
            record(&format!("p{i}"), "d", "official", tool_request(), a)
        })
        .collect();
    write_run(&reference, &refs);

    let audit = audit_run(
        &ours,
        &kimi(),
        &AuditOptions {
            reference_run: Some(&reference),
        },
    )
    .unwrap();
    let p = &audit.by_provider["P"];
    let t = p.trigger_similarity.as_ref().unwrap();
    assert_eq!((t.compared, t.tp, t.fp, t.fn_, t.tn), (10, 4, 1, 2, 3));
    assert!((t.tool_call_precision.unwrap() - 0.8).abs() < 1e-12);
    assert!((t.tool_call_recall.unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert!((t.tool_call_f1.unwrap() - 8.0 / 11.0).abs() < 1e-12);
    let s = &p.schema_accuracy;
    assert_eq!(
        (
            s.count_finish_reason_tool_calls,
            s.count_successful_tool_call
        ),
        (5, 2)
    );
    assert!((s.schema_accuracy.unwrap() - 0.4).abs() < 1e-12);
    let r = audit.reference.as_ref().unwrap();
    assert_eq!((r.paired, r.only_here, r.only_in_reference), (10, 1, 0));
    // The records' own `source` names the dataset; its figures are the provider's here.
    assert_eq!(audit.source_from, "journal");
    assert_eq!(
        audit.by_source["d"].trigger_similarity,
        p.trigger_similarity
    );
    // Our own findings: one each.
    assert_eq!(p.count(Problem::InvalidJson), 1);
    assert_eq!(p.count(Problem::SchemaViolation), 1);
    assert_eq!(p.count(Problem::UndeclaredName), 1);
    let flags = audit.red_flags();
    assert_eq!(flags.len(), 2, "{flags:?}");
    assert!(
        flags.iter().any(|f| f.contains("Schema Accuracy 40.00%")),
        "{flags:?}"
    );
    assert!(flags.iter().any(|f| f.contains("F1 72.73%")), "{flags:?}");
    check_renders(&audit);
}

fn check_renders(audit: &ToolAudit) {
    let table = audit.terminal_table();
    assert!(table.contains("provider"), "{table}");
    let html = audit.html_section();
    assert!(html.starts_with("<section") && html.ends_with("</section>"));
    assert!(
        !html.contains("<script") && !html.contains("http"),
        "self-contained"
    );
    serde_json::to_value(audit).unwrap();
}

/// Every answer with tools calls exactly one tool, with nothing around it: any finding then
/// comes from an injected defect.
fn plain_behaviour() -> draftgen::sim::Behaviour {
    draftgen::sim::Behaviour {
        tool_call_rate: 1.0,
        parallel_rate: 0.0,
        section_in_reasoning_rate: 0.0,
        content_with_tools_rate: 0.0,
    }
}

/// `generate` of the directory's prompts into its run, as an OpenRouter client.
fn generate(dir: &RunDir, base_url: &str, config: Option<&Path>) {
    let mut command = dir.generate(base_url);
    // The model the simulator lists (an unlisted id stops the run before anything is sent).
    command.args(["--kind", "openrouter", "--model", "moonshotai/kimi-k2.5"]);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let o = command.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn weather_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
        "days": {"type": "integer"}}, "required": ["city"]}}})
}

/// (provider, flavour, defect, the problem the audit must report for it)
const PROVIDERS: [(&str, &str, &str, Option<Problem>); 10] = [
    ("Clean", "vllm", "", None),
    ("CleanRouter", "openrouter", "", None),
    (
        "Undeclared",
        "vllm",
        "undeclared",
        Some(Problem::UndeclaredName),
    ),
    ("BadJson", "sglang", "badjson", Some(Problem::InvalidJson)),
    ("Schema", "vllm", "schema", Some(Problem::SchemaViolation)),
    ("BadId", "vllm", "badid", Some(Problem::IdMalformed)),
    (
        "Markers",
        "vllm",
        "markers",
        Some(Problem::MarkersInContent),
    ),
    (
        "InReasoning",
        "vllm",
        "inreasoning",
        Some(Problem::CallInReasoning),
    ),
    (
        "Finish",
        "openrouter",
        "finish",
        Some(Problem::FinishReasonDisagreement),
    ),
    ("Never", "vllm", "nocall", None),
];

/// Three prompts with tools per provider (routed with the prompt's own `provider.only`), two
/// plain prompts and one with `tool_choice: "none"` on the clean provider. Each provider has
/// one defect at rate 1: the audit finds it on each of the provider's three answers, in the
/// provider's row and in the dataset's, and nothing else anywhere.
#[test]
fn injected_defects_are_found_per_provider_and_dataset_and_nothing_else() {
    let providers = PROVIDERS
        .iter()
        .map(|(name, flavor, defect, _)| {
            let spec = if defect.is_empty() {
                format!("{name}:{flavor}")
            } else {
                format!("{name}:{flavor}:{defect}=1")
            };
            spec.parse().unwrap()
        })
        .collect();
    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 11,
        behaviour: plain_behaviour(),
        providers,
        ..Default::default()
    });
    let dir = RunDir::new();
    let prompts = dir.prompts();
    let mut lines = Vec::new();
    for (name, ..) in PROVIDERS {
        for k in 0..3 {
            let mut p = draftgen::dataset::Prompt::new(
                "tools.jsonl",
                vec![json!({"role": "user", "content": format!("Weather {k} for {name}?")})],
                Some(vec![weather_tool()]),
                Value::Null,
            );
            p.request_options = Some(Box::new(draftgen::dataset::PromptOptions {
                provider: Some(json!({"only": [name]})),
                ..Default::default()
            }));
            lines.push(serde_json::to_string(&p).unwrap());
        }
    }
    for k in 0..2 {
        let mut p = draftgen::dataset::Prompt::new(
            "chat.jsonl",
            vec![json!({"role": "user", "content": format!("Hello {k}")})],
            None,
            Value::Null,
        );
        p.request_options = Some(Box::new(draftgen::dataset::PromptOptions {
            provider: Some(json!({"only": ["Clean"]})),
            ..Default::default()
        }));
        lines.push(serde_json::to_string(&p).unwrap());
    }
    let mut none = draftgen::dataset::Prompt::new(
        "none.jsonl",
        vec![json!({"role": "user", "content": "Do not call anything."})],
        Some(vec![weather_tool()]),
        Value::Null,
    );
    none.request_options = Some(Box::new(draftgen::dataset::PromptOptions {
        tool_choice: Some(json!("none")),
        provider: Some(json!({"only": ["Clean"]})),
        ..Default::default()
    }));
    lines.push(serde_json::to_string(&none).unwrap());
    std::fs::write(&prompts, lines.join("\n") + "\n").unwrap();
    let run = dir.run();
    generate(&dir, &sim.base_url(), None);

    // The prompt's own options went out in its request.
    let journal = std::fs::read_to_string(run.join("journal/000001.jsonl")).unwrap();
    let sent: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let none_request = sent
        .iter()
        .find(|r| r["id"] == none.id.as_str())
        .map(|r| &r["request"])
        .unwrap();
    assert_eq!(none_request["tool_choice"], "none");
    assert_eq!(none_request["provider"], json!({"only": ["Clean"]}));

    let audit = audit_run(
        &run,
        &kimi(),
        &AuditOptions {
            reference_run: None,
        },
    )
    .unwrap();
    let mut expected_total: std::collections::BTreeMap<Problem, u64> = Default::default();
    for (name, _, _, problem) in PROVIDERS {
        let f = &audit.by_provider[name];
        let expect_calls = !matches!(name, "InReasoning" | "Never");
        let clean_extra = if name == "Clean" { 3 } else { 0 }; // chat ×2 + none ×1
        assert_eq!(f.answers, 3 + clean_extra, "{name}");
        assert_eq!(f.declaring_tools, 3 + u64::from(name == "Clean"), "{name}");
        assert_eq!(f.calls, if expect_calls { 3 } else { 0 }, "{name}");
        assert_eq!(f.triggered, if expect_calls { 3 } else { 0 }, "{name}");
        for p in Problem::ALL {
            let want = if Some(p) == problem { 3 } else { 0 };
            assert_eq!(
                f.count(p),
                want,
                "provider {name}, problem {}: {:?}",
                p.name(),
                audit.examples
            );
        }
        if let Some(p) = problem {
            *expected_total.entry(p).or_insert(0) += 3;
        }
        // Ids: the model's own, through vLLM/SGLang and through OpenRouter (which passes its
        // upstream's on).
        if expect_calls && name != "BadId" {
            assert_eq!((f.ids_native, f.ids_rewritten), (3, 0), "{name}");
        }
    }
    // Red: the three providers whose calls fail K2-Vendor-Verifier's schema check; no dataset
    // (every dataset that declares tools got calls).
    let mut flags = audit.red_flags();
    flags.sort();
    assert_eq!(flags.len(), 3, "{flags:?}");
    for (flag, name) in flags.iter().zip(["BadJson", "Schema", "Undeclared"]) {
        assert!(
            flag.starts_with(&format!("provider {name}: ToolCall-Schema Accuracy 0.00%")),
            "{flag}"
        );
    }
    check_renders(&audit);

    let finish = &audit.by_provider["Finish"];
    assert_eq!(
        finish.finish_reasons,
        [("tool_calls".to_string(), 3)].into_iter().collect()
    );
    assert_eq!(
        finish.native_finish_reasons,
        [("stop".to_string(), 3)].into_iter().collect()
    );
    assert_eq!(audit.all.declaring_tools, 31);

    // Per dataset: journal records carry the prompt's `source` (helper `verify`'s change to
    // `journal::Record`); a journal without it (older runs, or this branch before that merge)
    // leaves the dataset unknown, and the audit says so rather than guessing.
    if sent.iter().all(|r| r.get("source").is_none()) {
        assert_eq!(audit.source_from, "none");
        assert_eq!(audit.by_source.keys().collect::<Vec<_>>(), ["(unknown)"]);
        eprintln!("journal records carry no `source` yet: per-dataset figures not checked");
        return;
    }
    let tools = &audit.by_source["tools.jsonl"];
    assert_eq!(tools.answers, 30);
    assert_eq!(tools.tools_as_parameter, 30);
    for p in Problem::ALL {
        assert_eq!(
            tools.count(p),
            expected_total.get(&p).copied().unwrap_or(0),
            "{}",
            p.name()
        );
        assert_eq!(audit.by_source["chat.jsonl"].count(p), 0);
        assert_eq!(audit.by_source["none.jsonl"].count(p), 0);
    }
    assert_eq!(audit.by_source["none.jsonl"].triggered, 0);
    // `tool_choice: "none"` forbids calls: that dataset is not expected to trigger (no red flag).
    assert_eq!(audit.by_source["none.jsonl"].callable, 0);
    assert_eq!(audit.source_from, "journal");
}

/// The seed's blind spot, for real: glaive-v2 rows prepared and sent with
/// `tools_as_parameter = false` go out with the dataset's system text (function JSON in the
/// system message) and no `tools` field; the simulated server (like a real one without a tools
/// parameter) never calls, and the audit calls the dataset out in red.
#[test]
fn glaive_prompts_keep_their_system_text_and_a_dataset_that_never_triggers_is_red() {
    let dir = RunDir::new();
    let rows = dir.join("glaive.jsonl");
    let system = "SYSTEM: You are a helpful assistant with access to the following functions. Use them if required -\n{\n    \"name\": \"get_exchange_rate\",\n    \"description\": \"Get the exchange rate between two currencies\",\n    \"parameters\": {\n        \"type\": \"object\",\n        \"properties\": {\n            \"base_currency\": {\"type\": \"string\"},\n            \"target_currency\": {\"type\": \"string\"}\n        },\n        \"required\": [\"base_currency\", \"target_currency\"]\n    }\n}\n";
    let text: String = (0..3)
        .map(|k| {
            json!({"system": system, "chat": format!("USER: How many euros is {k}00 dollars?\n\n\nASSISTANT: <functioncall> {{\"name\": \"get_exchange_rate\", \"arguments\": '{{\"base_currency\": \"USD\", \"target_currency\": \"EUR\"}}'}} <|endoftext|>\n")})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(&rows, text).unwrap();
    let prompts = dir.prompts();
    let o = std::process::Command::new(BIN)
        .args(["prepare", "--format", "glaive-v2", "--out"])
        .arg(&prompts)
        .arg(&rows)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let config = dir.path().join("run.toml");
    std::fs::write(&config, "[request]\ntools_as_parameter = false\n").unwrap();
    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 3,
        behaviour: plain_behaviour(),
        ..Default::default()
    });
    let run = dir.run();
    generate(&dir, &sim.base_url(), Some(&config));

    let journal = std::fs::read_to_string(run.join("journal/000001.jsonl")).unwrap();
    let records: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3);
    for r in &records {
        let request = &r["request"];
        assert!(
            request.get("tools").is_none(),
            "no tools parameter: {request}"
        );
        assert_eq!(request["messages"][0]["role"], "system");
        assert_eq!(
            request["messages"][0]["content"],
            system.trim().strip_prefix("SYSTEM: ").unwrap(),
            "the dataset's system text as it was"
        );
    }

    let audit = audit_run(
        &run,
        &kimi(),
        &AuditOptions {
            reference_run: None,
        },
    )
    .unwrap();
    let f = audit.by_source.values().next().unwrap();
    assert_eq!(
        (f.answers, f.tools_in_system_prompt, f.triggered),
        (3, 3, 0)
    );
    let flags = audit.red_flags();
    assert_eq!(flags.len(), 1, "{flags:?}");
    assert!(flags[0].contains("3 prompts declare tools (0 as the tools parameter, 3 only in the system prompt) but no answer called a tool"), "{}", flags[0]);
    assert!(audit.html_section().contains("ta-flag"));
}

/// Constructed answers for the checks the simulator does not inject, each found alone.
#[test]
fn constructed_answers_each_show_their_one_problem() {
    let with_calls = |calls: Value, finish: &str| {
        json!({"choices": [{"index": 0, "finish_reason": finish,
            "message": {"role": "assistant", "content": "", "tool_calls": calls}}]})
    };
    let call = |id: &str, args: &str| json!([{"id": id, "type": "function", "function": {"name": "f", "arguments": args}}]);
    let mut none_request = tool_request();
    none_request["tool_choice"] = json!("none");
    // A history with one earlier call: this answer's call is number 1.
    let mut history = tool_request();
    history["messages"] = json!([
        {"role": "user", "content": "add"},
        {"role": "assistant", "content": "", "tool_calls": call("functions.f:0", r#"{"a": 1}"#)},
        {"role": "tool", "tool_call_id": "functions.f:0", "content": "2"},
        {"role": "user", "content": "again"}]);
    let cases: Vec<(&str, Value, Value, Option<Problem>)> = vec![
        (
            "clean",
            tool_request(),
            with_calls(call("functions.f:0", r#"{"a": 1}"#), "tool_calls"),
            None,
        ),
        (
            "clean-history",
            history.clone(),
            with_calls(call("functions.f:1", r#"{"a": 1}"#), "tool_calls"),
            None,
        ),
        (
            "none",
            none_request,
            with_calls(call("functions.f:0", r#"{"a": 1}"#), "tool_calls"),
            Some(Problem::CallsDespiteToolChoiceNone),
        ),
        (
            "misnumbered",
            history,
            with_calls(call("functions.f:0", r#"{"a": 1}"#), "tool_calls"),
            Some(Problem::IdMisnumbered),
        ),
        (
            "no-finish",
            tool_request(),
            with_calls(call("functions.f:0", r#"{"a": 1}"#), "stop"),
            Some(Problem::CallsWithoutFinish),
        ),
        (
            "no-calls",
            tool_request(),
            json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": "hm"}}]}),
            Some(Problem::FinishWithoutCalls),
        ),
        (
            "reasoning-marker",
            tool_request(),
            json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "ok", "reasoning": "done<|tool_calls_section_end|>"}}]}),
            Some(Problem::MarkersInReasoning),
        ),
        // Arguments holding a marker: the native text cuts the call there, so the training
        // tokens would not say what the API said.
        (
            "round-trip",
            tool_request(),
            with_calls(
                call("functions.f:0", r#"{"a": 1, "b": "<|tool_call_end|>"}"#),
                "tool_calls",
            ),
            Some(Problem::RoundTrip),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Value> = cases
        .iter()
        .map(|(id, request, response, _)| record(id, "d", id, request.clone(), response.clone()))
        .collect();
    write_run(dir.path(), &records);
    let audit = audit_run(
        dir.path(),
        &kimi(),
        &AuditOptions {
            reference_run: None,
        },
    )
    .unwrap();
    for (id, _, _, problem) in &cases {
        let f = &audit.by_provider[*id];
        for p in Problem::ALL {
            let want = u64::from(Some(p) == *problem);
            assert_eq!(f.count(p), want, "{id}: {}: {:?}", p.name(), audit.examples);
        }
    }
}

/// python3 with `jsonschema` (K2-Vendor-Verifier's validator), installed with pip when missing;
/// `None` when that fails (the oracle test then skips, saying so).
fn oracle_python() -> Option<&'static str> {
    let has = || {
        std::process::Command::new("python3")
            .args(["-c", "import jsonschema"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if has() {
        return Some("python3");
    }
    let _ = std::process::Command::new("python3")
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .arg("jsonschema")
        .status();
    has().then_some("python3")
}

/// `tests/py/k2vv_oracle.py RUN [REFERENCE]`: K2-Vendor-Verifier's figures from the journal.
fn oracle(python: &str, run: &Path, reference: Option<&Path>) -> Value {
    let mut command = std::process::Command::new(python);
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/k2vv_oracle.py"))
        .arg(run);
    if let Some(r) = reference {
        command.arg(r);
    }
    let o = command.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `draftgen verify --json` of `run`: its `tool_calls` (what verify.json carries).
fn verified_tool_calls(run: &Path, reference: Option<&Path>) -> Value {
    let mut command = std::process::Command::new(BIN);
    command
        .args(["verify", "--model", "kimi-k2.5", "--json", "--run"])
        .arg(run);
    if let Some(r) = reference {
        command.arg("--tools-reference-run").arg(r);
    }
    let o = command.output().unwrap();
    let report: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("verify --json: {e}: {}", String::from_utf8_lossy(&o.stderr)));
    let summary = String::from_utf8_lossy(&o.stderr);
    assert!(summary.contains("acc-k2vv"), "{summary}");
    report["tool_calls"].clone()
}

/// Every figure the oracle computes equals verify.json's, group by group; returns how many
/// figures were compared.
fn assert_equal_figures(oracle: &Value, ours: &Value) -> usize {
    let mut compared = 0;
    let mut differ = Vec::new();
    let mut groups = vec![("all".to_string(), &oracle["all"], &ours["all"])];
    for kind in ["by_provider", "by_source"] {
        let theirs = oracle[kind].as_object().unwrap();
        assert_eq!(
            theirs.keys().collect::<Vec<_>>(),
            ours[kind].as_object().unwrap().keys().collect::<Vec<_>>(),
            "{kind}"
        );
        for (name, g) in theirs {
            groups.push((format!("{kind} {name}"), g, &ours[kind][name]));
        }
    }
    for (name, theirs, ours) in groups {
        let mut pairs: Vec<(String, &Value, &Value)> = ["answers", "calls"]
            .iter()
            .map(|k| (k.to_string(), &theirs[*k], &ours[*k]))
            .collect();
        for (k, v) in theirs["problems"].as_object().unwrap() {
            pairs.push((format!("problems.{k}"), v, &ours["problems"][k]));
        }
        for figure in [
            "schema_accuracy",
            "schema_accuracy_system_prompt",
            "trigger_similarity",
        ] {
            if let Some(fields) = theirs[figure].as_object() {
                for (k, v) in fields {
                    pairs.push((format!("{figure}.{k}"), v, &ours[figure][k]));
                }
            }
        }
        for (field, want, got) in pairs {
            compared += 1;
            let equal = match (want.as_f64(), got.as_f64()) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-12,
                _ => want == got,
            };
            if !equal {
                differ.push(format!("{name} {field}: oracle {want}, verify {got}"));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    compared
}

/// A tools-parameter or system-prompt request and one answer, for the constructed corpus.
fn oracle_cases() -> Vec<(&'static str, Value, Value)> {
    let system = "You may call these -\n{\"name\": \"f\", \"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}, \"required\": [\"a\"]}}\n{\"name\": \"bare\", \"description\": \"no parameters\"}\n{\"name\": \"empty\", \"parameters\": {}}";
    let sys_request = json!({"model": "m", "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": "add"}]});
    let mut empty_schema = tool_request();
    empty_schema["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "function", "function": {"name": "empty", "parameters": {}}}));
    let finish_without = |calls: Option<Value>| {
        let mut message = json!({"role": "assistant", "content": "hm"});
        if let Some(calls) = calls {
            message["tool_calls"] = calls;
        }
        json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]})
    };
    let ok = r#"{"a": 1}"#;
    vec![
        (
            "s-ok",
            sys_request.clone(),
            answer("tool_calls", &[("f", ok)]),
        ),
        (
            "s-json",
            sys_request.clone(),
            answer("tool_calls", &[("f", r#"{"a": 1"#)]),
        ),
        (
            "s-undecl-json",
            sys_request.clone(),
            answer("tool_calls", &[("g", "{")]),
        ),
        (
            "s-schema",
            sys_request.clone(),
            answer("tool_calls", &[("f", r#"{"a": "x"}"#)]),
        ),
        (
            "s-bare",
            sys_request.clone(),
            answer("tool_calls", &[("bare", "{}")]),
        ),
        (
            "s-empty",
            sys_request.clone(),
            answer("tool_calls", &[("empty", "{}")]),
        ),
        ("s-none", sys_request.clone(), finish_without(None)),
        ("s-stop", sys_request.clone(), answer("stop", &[])),
        (
            "s-two",
            sys_request,
            answer("tool_calls", &[("f", ok), ("f", ok)]),
        ),
        ("p-ok", tool_request(), answer("tool_calls", &[("f", ok)])),
        ("p-absent", tool_request(), finish_without(None)),
        (
            "p-empty-list",
            tool_request(),
            finish_without(Some(json!([]))),
        ),
        ("p-null", tool_request(), finish_without(Some(Value::Null))),
        (
            "p-undecl-json",
            tool_request(),
            answer("tool_calls", &[("g", "{")]),
        ),
        (
            "p-mixed",
            tool_request(),
            answer("tool_calls", &[("f", ok), ("f", "[]")]),
        ),
        (
            "p-empty-schema",
            empty_schema,
            answer("tool_calls", &[("empty", "{}")]),
        ),
        ("p-length", tool_request(), answer("length", &[("f", ok)])),
    ]
}

/// K2-Vendor-Verifier's figures as its published code computes them
/// (`tests/py/k2vv_oracle.py`, Python `json` + `jsonschema`, written from `tool_calls_eval.py`)
/// equal verify.json's, group by group: on simulator runs where every tool-call defect the
/// simulator can inject is injected (with a reference run for the trigger F1), and on
/// constructed answers for what the simulator never sends (tools only in the system prompt,
/// `tool_calls` without calls as absent / `[]` / `null`, a call both undeclared and not JSON,
/// a tool with an empty schema).
#[test]
fn k2vv_figures_equal_an_independent_python_oracle() {
    let Some(python) = oracle_python() else {
        eprintln!("SKIPPED: python3 with jsonschema is not available and pip could not install it");
        return;
    };
    // One provider per defect at rate 0.5, one with every defect at 0.3, one clean.
    let mut specs: Vec<String> = draftgen::sim::ToolDefect::ALL
        .iter()
        .map(|d| {
            let flavor = if d.name() == "finish" {
                "openrouter"
            } else {
                "vllm"
            };
            format!("D{}:{flavor}:{}=0.5", d.name(), d.name())
        })
        .collect();
    let every: Vec<String> = draftgen::sim::ToolDefect::ALL
        .iter()
        .map(|d| format!("{}=0.3", d.name()))
        .collect();
    specs.push(format!("Every:sglang:{}", every.join(",")));
    specs.push("Clean:openrouter".to_string());
    let names: Vec<String> = specs
        .iter()
        .map(|s| s.split(':').next().unwrap().to_string())
        .collect();

    let dir = RunDir::new();
    let mut lines = Vec::new();
    for name in &names {
        for k in 0..8 {
            let mut p = draftgen::dataset::Prompt::new(
                if k % 2 == 0 {
                    "even.jsonl"
                } else {
                    "odd.jsonl"
                },
                vec![json!({"role": "user", "content": format!("Weather {k} for {name}?")})],
                Some(vec![weather_tool()]),
                Value::Null,
            );
            p.request_options = Some(Box::new(draftgen::dataset::PromptOptions {
                provider: Some(json!({"only": [name]})),
                ..Default::default()
            }));
            lines.push(serde_json::to_string(&p).unwrap());
        }
    }
    let text = lines.join("\n") + "\n";
    std::fs::write(dir.prompts(), &text).unwrap();
    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 5,
        providers: specs.iter().map(|s| s.parse().unwrap()).collect(),
        ..Default::default()
    });
    generate(&dir, &sim.base_url(), None);
    // The reference: the same prompts, the same provider names, no defects, another seed.
    let reference = RunDir::new();
    std::fs::write(reference.prompts(), &text).unwrap();
    let clean = start_sim(draftgen::sim::SimConfig {
        seed: 6,
        providers: names
            .iter()
            .map(|n| format!("{n}:vllm").parse().unwrap())
            .collect(),
        ..Default::default()
    });
    generate(&reference, &clean.base_url(), None);

    let theirs = oracle(python, &dir.run(), Some(&reference.run()));
    let ours = verified_tool_calls(&dir.run(), Some(&reference.run()));
    let compared = assert_equal_figures(&theirs, &ours);
    // Every injected call defect showed up, and the F1 is a real comparison.
    for p in ["undeclared_name", "invalid_json", "schema_violation"] {
        assert!(ours["all"]["problems"][p].as_u64().unwrap() > 0, "{p}");
    }
    let t = &ours["all"]["trigger_similarity"];
    assert!(
        t["tp"].as_u64().unwrap() > 0 && t["fn"].as_u64().unwrap() > 0,
        "{t}"
    );

    let constructed = tempfile::tempdir().unwrap();
    let records: Vec<Value> = oracle_cases()
        .into_iter()
        .map(|(id, request, response)| record(id, &id[..1], id, request, response))
        .collect();
    write_run(constructed.path(), &records);
    let theirs = oracle(python, constructed.path(), None);
    let ours = verified_tool_calls(constructed.path(), None);
    let compared = compared + assert_equal_figures(&theirs, &ours);
    // The definitions differ where they should: `all()` over no calls.
    let p = &ours["by_source"]["p"]["schema_accuracy"];
    assert_eq!(p["count_finish_reason_tool_calls_without_calls"], 3, "{p}");
    let s = &ours["by_source"]["s"]["schema_accuracy_system_prompt"];
    assert_eq!(s["count_finish_reason_tool_calls"], 8, "{s}");
    eprintln!("{compared} figures equal the oracle's");
}
