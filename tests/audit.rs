//! The tool-call audit (`draftgen::verify::audit`):
//!
//! - its JSON-schema verdicts equal Python `jsonschema`'s on Kimi-Vendor-Verifier's 212 real
//!   schemas (`tests/data/audit/schema_cases.jsonl`, made by `make_schema_cases.py`);
//! - K2-Vendor-Verifier's ToolCall-Trigger F1 and ToolCall-Schema Accuracy on a hand-computed
//!   case (journals written here, numbers worked out by hand below);
//! - on simulator runs with known injected tool-call defects, per provider and per dataset, it
//!   finds each defect and nothing else.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

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
