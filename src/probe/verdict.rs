//! The probe's verdict on each target before a run: `use` or `avoid`, with the reason, and the
//! routing line to paste into the run config — the verdicts `verify` gives after a run
//! (`verify/verdict.rs`), decided on what a handful of scenario answers can show.
//!
//! The rules, in order (the first that holds decides):
//! 1. no scenario answered: **avoid**;
//! 2. more than [`MAX_FAILED_SHARE`] of the scenarios failed: **avoid** (as verify: most
//!    attempts would fail and be retried there);
//! 3. `usage.prompt_tokens` differs from our render by other than one token less in more than
//!    half of the answers that report it (with `--tokenizer`): **avoid** — its template is not
//!    the model's, so its samples would be `inconsistent` and `build` would drop them. One less
//!    is a stack that lets the model generate `<think>`, which `build` infers;
//! 4. tool calls come back as raw markers in the text in more than half of the answers with
//!    tool calls: **avoid** (the calls are not parsed; the samples' tool turns are not exact);
//! 5. otherwise **use**.
//!
//! What a few answers show of each convention (spaces around special tokens, the count one
//! short, argument style, id form) is listed as evidence, and with `--tokenizer` read by
//! `build`'s own inference (`conventions.rs`): `build` adopts a convention only from at least
//! eight answers, so below that the probe names it and says so, without deciding on it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::conventions::{self, ConventionsFound};
use super::TargetReport;

/// Scenarios that may fail before a target is avoided (as `verify/verdict.rs`).
pub const MAX_FAILED_SHARE: f64 = 0.5;

/// One target's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetVerdict {
    pub target: String,
    /// `use` or `avoid`.
    pub verdict: &'static str,
    pub reason: String,
    pub answered: usize,
    pub failed: usize,
    pub failures_by_class: BTreeMap<String, usize>,
    /// What the answers show of each provider convention (`"spaces around special tokens in 2
    /// of 3"`).
    pub evidence: Vec<String>,
    /// The tool-call id forms seen (`native`, `openrouter`, `other`, `minted`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub call_ids: Vec<&'static str>,
    /// The conventions `build`'s inference finds in the answers (with `--tokenizer`).
    pub conventions: ConventionsFound,
}

/// What the answers of one target show.
#[derive(Default)]
struct Seen {
    failures: BTreeMap<String, usize>,
    prompt_reported: usize,
    prompt_equal: usize,
    prompt_one_less: usize,
    marker_answers: usize,
    spaced: usize,
    tool_answers: usize,
    raw_tools: usize,
    arguments: BTreeMap<&'static str, usize>,
    call_ids: Vec<&'static str>,
}

fn seen(t: &TargetReport) -> Seen {
    let mut s = Seen::default();
    for p in &t.probes {
        let Some(o) = &p.observed else {
            *s.failures.entry(p.status.clone()).or_default() += 1;
            continue;
        };
        if let (Some(theirs), Some(ours)) = (o.prompt_tokens, p.our_prompt_tokens) {
            s.prompt_reported += 1;
            let ours = ours as u64;
            if theirs == ours {
                s.prompt_equal += 1;
            } else if theirs + 1 == ours {
                s.prompt_one_less += 1;
            }
        }
        if let Some(spaced) = o.spaces_around_markers {
            s.marker_answers += 1;
            s.spaced += usize::from(spaced);
        }
        if o.tool_calls != "none" {
            s.tool_answers += 1;
            s.raw_tools += usize::from(o.tool_calls == "raw");
        }
        if let Some(style) = o.arguments {
            *s.arguments.entry(style).or_default() += 1;
        }
        if let Some(form) = o.call_ids {
            if !s.call_ids.contains(&form) {
                s.call_ids.push(form);
            }
        }
    }
    s
}

fn evidence(s: &Seen) -> Vec<String> {
    let mut lines = Vec::new();
    if s.prompt_reported > 0 {
        lines.push(format!(
            "prompt count = our render in {} of {}",
            s.prompt_equal, s.prompt_reported
        ));
    }
    if s.prompt_one_less > 0 {
        lines.push(format!(
            "prompt count = our render − 1 (the model generates <think>) in {} of {}",
            s.prompt_one_less, s.prompt_reported
        ));
    }
    if s.spaced > 0 {
        lines.push(format!(
            "spaces around special tokens in {} of {}",
            s.spaced, s.marker_answers
        ));
    }
    if s.raw_tools > 0 {
        lines.push(format!(
            "tool calls as raw markers in the text in {} of {}",
            s.raw_tools, s.tool_answers
        ));
    }
    for (style, n) in &s.arguments {
        lines.push(format!("arguments {style} in {n}"));
    }
    lines
}

fn judge(t: &TargetReport, s: &Seen) -> (&'static str, String) {
    let failed: usize = s.failures.values().sum();
    let asked = t.probes.len();
    let mostly = || {
        s.failures
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(c, n)| format!(" (mostly {c}: {n})"))
            .unwrap_or_default()
    };
    if t.answered == 0 {
        return (
            "avoid",
            format!("all {asked} scenario(s) failed{}", mostly()),
        );
    }
    if failed as f64 > MAX_FAILED_SHARE * asked as f64 {
        return (
            "avoid",
            format!("{failed} of {asked} scenarios failed{}", mostly()),
        );
    }
    let other_count = s.prompt_reported - s.prompt_equal - s.prompt_one_less;
    if 2 * other_count > s.prompt_reported {
        return (
            "avoid",
            format!(
                "prompt_tokens differs from our render in {other_count} of {} answers: build would class its samples inconsistent and drop them",
                s.prompt_reported
            ),
        );
    }
    if 2 * s.raw_tools > s.tool_answers {
        return (
            "avoid",
            format!(
                "tool calls come back as raw markers in {} of {} answers with calls",
                s.raw_tools, s.tool_answers
            ),
        );
    }
    let mut reason = format!("{} of {asked} scenarios answered", t.answered);
    if s.prompt_reported > 0 {
        reason.push_str(&format!(
            ", prompt count explained in {} of {}",
            s.prompt_equal + s.prompt_one_less,
            s.prompt_reported
        ));
    }
    ("use", reason)
}

/// Every target's verdict, in the report's order.
pub fn verdicts(targets: &[TargetReport]) -> Vec<TargetVerdict> {
    targets
        .iter()
        .map(|t| {
            let s = seen(t);
            let (verdict, reason) = judge(t, &s);
            TargetVerdict {
                target: t.target.clone(),
                verdict,
                reason,
                answered: t.answered,
                failed: s.failures.values().sum(),
                failures_by_class: s.failures.clone(),
                evidence: evidence(&s),
                call_ids: s.call_ids.clone(),
                conventions: conventions::found(
                    t.probes.iter().filter_map(|p| p.conventions.as_ref()),
                ),
            }
        })
        .collect()
}

/// The line to paste into the run config for OpenRouter targets (`routing` names them by the
/// slug `provider.only` took): `ignore` the avoided ones, or, when all are avoided, `order` them
/// by answers. `None` when nothing needs to change or no target is an OpenRouter provider.
pub fn routing_line(targets: &[TargetReport], verdicts: &[TargetVerdict]) -> Option<String> {
    let named: Vec<(&String, &TargetVerdict)> = targets
        .iter()
        .zip(verdicts)
        .filter_map(|(t, v)| t.provider.as_ref().map(|p| (p, v)))
        .collect();
    let quoted = |names: Vec<&String>| {
        names
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let avoid: Vec<&String> = named
        .iter()
        .filter(|(_, v)| v.verdict == "avoid")
        .map(|(p, _)| *p)
        .collect();
    if avoid.is_empty() {
        return None;
    }
    if avoid.len() < named.len() {
        return Some(format!("provider = {{ ignore = [{}] }}", quoted(avoid)));
    }
    let mut ranked = named.clone();
    ranked.sort_by_key(|(_, v)| std::cmp::Reverse(v.answered));
    Some(format!(
        "provider = {{ order = [{}] }}",
        quoted(ranked.into_iter().map(|(p, _)| p).collect())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::observe::Observation;
    use crate::probe::{Probe, Scenario};

    fn answered(prompt_tokens: u64, ours: usize, tool_calls: &'static str) -> Probe {
        Probe {
            target: "t".into(),
            scenario: Scenario::Plain,
            status: "answered".into(),
            http_status: Some(200),
            error: None,
            latency_ms: Some(1),
            our_prompt_tokens: Some(ours),
            prompt_tokens_equal: Some(prompt_tokens == ours as u64),
            observed: Some(Observation {
                prompt_tokens: Some(prompt_tokens),
                tool_calls,
                ..Observation::default()
            }),
            clues: Vec::new(),
            conventions: None,
        }
    }

    fn target(provider: &str, probes: Vec<Probe>) -> TargetReport {
        TargetReport {
            target: provider.to_uppercase(),
            provider: Some(provider.into()),
            quantization: None,
            base_url: "u".into(),
            answered: probes.iter().filter(|p| p.observed.is_some()).count(),
            probes,
            recognized: None,
        }
    }

    #[test]
    fn a_foreign_template_or_raw_calls_are_avoided_one_token_less_is_not() {
        let think = target(
            "think",
            vec![answered(9, 10, "none"), answered(19, 20, "structured")],
        );
        let foreign = target(
            "foreign",
            vec![answered(14, 10, "none"), answered(25, 20, "none")],
        );
        let raw = target(
            "raw",
            vec![answered(10, 10, "raw"), answered(20, 20, "raw")],
        );
        let targets = [think, foreign, raw];
        let v = verdicts(&targets);
        let got: Vec<&str> = v.iter().map(|v| v.verdict).collect();
        assert_eq!(got, ["use", "avoid", "avoid"], "{v:#?}");
        assert!(v[0].evidence.iter().any(|e| e.contains("− 1")), "{v:#?}");
        assert_eq!(
            routing_line(&targets, &v).as_deref(),
            Some(r#"provider = { ignore = ["foreign", "raw"] }"#)
        );
    }
}
