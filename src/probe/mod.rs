//! `probe`: before a full run, ask every provider of a model (OpenRouter `provider.only`, one
//! provider per target) or every self-hosted server a fixed set of questions
//! ([`scenario::Scenario`]), concurrently and with short timeouts, and report per target and
//! scenario what came back — answered or the error class, latency, cost, where the reasoning
//! went, how tool calls came back, whether `usage.prompt_tokens` equals our render — and which
//! server shape ([`crate::server`]) explains the answers, so the user knows which `--kind` to
//! declare, and which provider conventions they show, read by `build`'s own inference
//! ([`conventions`]).
//!
//! Requests are built by the run's own code ([`crate::api::build_body`]) and sent by the run's
//! own client, so the probe sees what `generate` would; errors are the client's, key scrubbed.

pub mod conventions;
pub mod observe;
pub mod providers;
pub mod recognize;
pub mod scenario;
mod table;
pub mod verdict;

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{json, Value};

use crate::api::{build_body, ApiError, Client, Endpoint, RequestOptions, ServerKind, Timeouts};
use crate::dataset::Prompt;
use crate::model::{Profile, RenderInput};

pub use recognize::Recognition;
pub use scenario::Scenario;

/// One thing to probe: an endpoint, and on OpenRouter the one provider it is pinned to.
#[derive(Debug, Clone)]
pub struct Target {
    /// Shown in the table: the provider's name, or the base URL.
    pub name: String,
    pub endpoint: Endpoint,
    /// OpenRouter `provider.only` (with fallbacks off).
    pub provider: Option<String>,
    /// The endpoint's quantization, as OpenRouter lists it.
    pub quantization: Option<String>,
    /// The endpoint is OpenRouter (no self-hosted token-id flags; `usage` asked for).
    pub openrouter: bool,
}

/// What every request of the probe shares.
#[derive(Clone)]
pub struct ProbeOptions<'a> {
    /// The model id sent in every request.
    pub model: String,
    pub max_tokens: u32,
    pub timeouts: Timeouts,
    /// The first prompt of the user's dataset ([`Scenario::RealPrompt`]).
    pub real_prompt: Option<Prompt>,
    /// The model's tokenizer and template: `prompt_tokens` is compared with our render.
    pub profile: Option<&'a Profile>,
}

/// One target × scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub target: String,
    pub scenario: Scenario,
    /// `answered`, or the error class (`timeout`, `network`, `bad_request`, …).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub latency_ms: Option<u64>,
    /// Our render's prompt length (with `--tokenizer`).
    pub our_prompt_tokens: Option<usize>,
    /// `usage.prompt_tokens` equals our render.
    pub prompt_tokens_equal: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed: Option<observe::Observation>,
    /// What the answer says about the server's shape (for [`recognize`]).
    #[serde(skip)]
    pub clues: Vec<observe::Clue>,
    /// What the answer shows of each provider convention (with `--tokenizer`).
    #[serde(skip)]
    pub conventions: Option<conventions::AnswerEvidence>,
}

/// Every probe of one target and the shape that explains them.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    pub target: String,
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
    pub base_url: String,
    pub answered: usize,
    pub probes: Vec<Probe>,
    /// `None` when nothing was answered.
    pub recognized: Option<Recognition>,
}

/// The whole probe (`probe --json`).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub draftgen_version: &'static str,
    pub model: String,
    pub scenarios: Vec<Scenario>,
    pub targets: Vec<TargetReport>,
    /// Per target: use or avoid, with the reason and what the answers show.
    pub verdicts: Vec<verdict::TargetVerdict>,
    /// The routing line for the run config (`provider = { ignore = [...] }`), when a provider
    /// is to be avoided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<String>,
}

impl ProbeReport {
    /// The table for the terminal.
    pub fn terminal_table(&self) -> String {
        table::render(self)
    }
}

/// The request body of one scenario for one target.
fn body(target: &Target, ask: &scenario::Ask, opts: &ProbeOptions) -> Value {
    let options = RequestOptions {
        model: opts.model.clone(),
        max_tokens: Some(opts.max_tokens),
        temperature: Some(0.0),
        provider: target
            .provider
            .as_ref()
            .map(|p| json!({"only": [p], "allow_fallbacks": false})),
        tools_as_parameter: true,
        stream: false,
        server_kind: if target.openrouter {
            ServerKind::OpenRouter
        } else {
            ServerKind::Generic
        },
        extra_body: ask.extra.clone(),
        ..RequestOptions::default()
    };
    build_body(&ask.prompt, &options)
}

/// What `ask` sends, as the template renders it.
fn render_input(ask: &scenario::Ask) -> RenderInput<'_> {
    RenderInput {
        messages: &ask.prompt.messages,
        tools: ask.prompt.tools.as_deref(),
        add_generation_prompt: true,
        chat_template_kwargs: None,
    }
}

/// Our render's length of what `ask` sends.
fn our_prompt_tokens(profile: &Profile, ask: &scenario::Ask) -> Option<usize> {
    profile
        .render_ids(&render_input(ask))
        .ok()
        .map(|ids| ids.len())
}

async fn one(
    client: &Client,
    target: &Target,
    ask: &scenario::Ask,
    opts: &ProbeOptions<'_>,
) -> Probe {
    let body = body(target, ask, opts);
    let our = opts.profile.and_then(|p| our_prompt_tokens(p, ask));
    let expect = opts.profile.map(|profile| observe::Expectation {
        profile,
        input: render_input(ask),
    });
    let mut probe = Probe {
        target: target.name.clone(),
        scenario: ask.scenario,
        status: String::new(),
        http_status: None,
        error: None,
        latency_ms: None,
        our_prompt_tokens: our,
        prompt_tokens_equal: None,
        observed: None,
        clues: Vec::new(),
        conventions: None,
    };
    let raw = match serde_json::value::to_raw_value(&body) {
        Ok(raw) => raw,
        Err(e) => {
            probe.status = "malformed".into();
            probe.error = Some(format!("cannot serialize the request: {e}"));
            return probe;
        }
    };
    match client.chat(&target.endpoint, &raw, &opts.timeouts).await {
        Ok(outcome) => {
            probe.status = "answered".into();
            probe.http_status = Some(outcome.http_status);
            probe.latency_ms = Some(outcome.latency_ms);
            let (observed, clues) = observe::observe(&outcome.response, expect.as_ref(), false);
            probe.clues = clues;
            probe.conventions = opts.profile.and_then(|profile| {
                conventions::of_answer(profile, target.openrouter, &body, &outcome.response)
            });
            probe.prompt_tokens_equal = our
                .zip(observed.prompt_tokens)
                .map(|(ours, theirs)| ours as u64 == theirs);
            probe.observed = Some(observed);
        }
        Err(ApiError {
            class,
            message,
            http_status,
            ..
        }) => {
            probe.status = crate::engine::class_name(class);
            probe.http_status = http_status;
            probe.error = Some(message);
        }
    }
    probe
}

/// Ask every target every scenario, all at once; the report lists targets and scenarios in the
/// order given.
pub async fn probe(client: &Client, targets: &[Target], opts: &ProbeOptions<'_>) -> ProbeReport {
    let scenarios: Vec<Scenario> = Scenario::ALL
        .into_iter()
        .filter(|s| *s != Scenario::RealPrompt || opts.real_prompt.is_some())
        .collect();
    let asks: Vec<(usize, scenario::Ask)> = targets
        .iter()
        .enumerate()
        .flat_map(|(t, target)| {
            scenarios.iter().filter_map(move |s| {
                scenario::ask(*s, opts.real_prompt.as_ref(), !target.openrouter).map(|a| (t, a))
            })
        })
        .collect();
    let probes = futures_util::future::join_all(
        asks.iter()
            .map(|(t, ask)| one(client, &targets[*t], ask, opts)),
    )
    .await;
    let mut reports: Vec<TargetReport> = targets
        .iter()
        .map(|t| TargetReport {
            target: t.name.clone(),
            provider: t.provider.clone(),
            quantization: t.quantization.clone(),
            base_url: t.endpoint.base_url.clone(),
            answered: 0,
            probes: Vec::new(),
            recognized: None,
        })
        .collect();
    for ((t, _), probe) in asks.iter().zip(probes) {
        reports[*t].probes.push(probe);
    }
    for report in &mut reports {
        report.answered = report
            .probes
            .iter()
            .filter(|p| p.observed.is_some())
            .count();
        report.recognized = recognize_target(report);
    }
    let verdicts = verdict::verdicts(&reports);
    ProbeReport {
        draftgen_version: env!("CARGO_PKG_VERSION"),
        model: opts.model.clone(),
        scenarios,
        routing: verdict::routing_line(&reports, &verdicts),
        verdicts,
        targets: reports,
    }
}

fn recognize_target(report: &TargetReport) -> Option<Recognition> {
    let observed: Vec<&observe::Observation> = report
        .probes
        .iter()
        .filter_map(|p| p.observed.as_ref())
        .collect();
    if observed.is_empty() {
        return None;
    }
    let clues: BTreeSet<observe::Clue> = report
        .probes
        .iter()
        .flat_map(|p| p.clues.iter().copied())
        .collect();
    Some(recognize::recognize(&clues, &observed))
}
