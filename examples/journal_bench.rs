//! Resume-index benchmark helper (used by `scripts/bench_resume.sh`).
//!
//! ```text
//! journal_bench gen RUN_DIR N     write a realistic N-record journal (1–2 KB records)
//! journal_bench index RUN_DIR     build the resume index read-only; print counts and seconds
//! ```

use std::time::Instant;

use anyhow::{bail, Context};
use draftgen::api::ErrorClass;
use draftgen::journal::{Manifest, Record, RunDir, Status};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

const WORDS: &[&str] = &[
    "the",
    "model",
    "returns",
    "a",
    "token",
    "stream",
    "and",
    "we",
    "reconstruct",
    "ids",
    "exactly",
    "für",
    "große",
    "数据",
    "模型",
    "🙂",
    "reasoning",
    "about",
    "tool",
    "calls",
    "with",
    "\"quoted\"",
    "arguments",
    "\\path",
    "line\nbreak",
    "of",
    "function",
    "value",
];

fn text(rng: &mut StdRng, min: usize, max: usize) -> String {
    let bytes = rng.random_range(min..max);
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(WORDS[rng.random_range(0..WORDS.len())]);
        s.push(' ');
    }
    s
}

fn manifest() -> Manifest {
    Manifest::new(
        "moonshotai/kimi-k2.5",
        vec!["https://openrouter.ai/api/v1".into()],
        json!({"temperature": 1.0, "max_tokens": 8192}),
        json!({"reasoning": {"effort": "high"}, "stream": true}),
        "bench",
    )
}

fn generate(run: &str, n: u64) -> anyhow::Result<()> {
    let mut rng = StdRng::seed_from_u64(7);
    let (mut journal, state) = RunDir::create_or_open(run, &manifest(), false)?;
    if state.totals.records > 0 {
        bail!("{run} already has a journal; remove it first");
    }
    for i in 0..n {
        // ~10% of prompts get a transient failure before their success.
        let id = format!("{:016x}{:016x}{:016x}{:016x}", i, i ^ 0x5555, i * 31, i * 7);
        let failed_first = i % 10 == 3;
        let status = if failed_first {
            Status::Failed
        } else {
            Status::Success
        };
        let user = text(&mut rng, 150, 400);
        let reasoning = text(&mut rng, 300, 700);
        let content = text(&mut rng, 200, 500);
        let record = Record {
            id,
            attempt: 1,
            status,
            error_class: failed_first.then_some(ErrorClass::RateLimited),
            error: failed_first.then(|| "429 Too Many Requests".to_string()),
            endpoint: "openrouter".into(),
            request: json!({"model": "moonshotai/kimi-k2.5", "stream": true,
                "messages": [{"role": "system", "content": "You are a helpful assistant."},
                             {"role": "user", "content": user}]}),
            response: (!failed_first).then(|| json!({
                "id": format!("gen-{i}"), "object": "chat.completion", "model": "moonshotai/kimi-k2.5",
                "provider": "Moonshot AI",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "reasoning": reasoning, "content": content}}],
                "usage": {"prompt_tokens": 120 + i % 300, "completion_tokens": 200 + i % 900,
                          "total_tokens": 320 + i % 1200, "cost": 0.0021,
                          "completion_tokens_details": {"reasoning_tokens": 150}}})),
            http_status: Some(if failed_first { 429 } else { 200 }),
            provider: Some("Moonshot AI".into()),
            cost_usd: (!failed_first).then_some(0.0021),
            prompt_tokens: (!failed_first).then_some(120 + i % 300),
            completion_tokens: (!failed_first).then_some(200 + i % 900),
            started_at: "2025-06-01T12:00:00.000Z".into(),
            latency_ms: 5000 + i % 20000,
            first_byte_ms: Some(400 + i % 900),
            not_before_ms: None,
            source: Some("sharegpt".into()),
            origin: Default::default(),
            usage_flag: None,
        };
        journal.append(&record)?;
    }
    journal.close()?;
    Ok(())
}

fn index(run: &str) -> anyhow::Result<()> {
    let start = Instant::now();
    let state = RunDir::new(run).read_state()?;
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "records={} prompts={} finished={} retry={} bytes={} corrupt={} seconds={seconds:.3}",
        state.totals.records,
        state.prompt_count(),
        state
            .prompts()
            .filter(|(_, p)| p.disposition().is_finished())
            .count(),
        state.to_retry().count(),
        state.report.bytes,
        state.report.corrupt_lines.len(),
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["gen", run, n] => generate(run, n.parse().context("N must be a number")?),
        ["index", run] => index(run),
        _ => bail!("usage: journal_bench gen RUN_DIR N | journal_bench index RUN_DIR"),
    }
}
