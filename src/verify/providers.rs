//! The provider table of `verify.json`, the summary and the report: per provider its answers,
//! failures by class, the conventions `build` infers for it with their evidence, its samples'
//! exact / ambiguous / lossy / dropped shares, its tool-call id form, and a `use` / `avoid`
//! verdict ([`super::verdict`]); then the routing line for the run config and the provider
//! behind most failures ([`Failures::caused_by`]).

use std::collections::BTreeMap;

use serde::Serialize;

use super::figures::{GroupFigures, UNKNOWN};
use super::verdict::{self, Facts, Verdict};
use crate::build::ProviderReport;
use crate::journal::{Record, Status};
use crate::reconstruct::FidelityClass;

/// One provider's attempts as the journal shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Attempts {
    pub attempts: u64,
    /// Successful records (a retried prompt's later success counts once per record).
    pub answers: u64,
    pub failed: u64,
    /// Failed attempts by error class (`server_error`, `rate_limited`, …).
    pub by_class: BTreeMap<String, u64>,
}

/// Every attempt, per provider: the answer's `provider`, or the one a provider's error names
/// (OpenRouter's `metadata.provider_name`); `(unknown)` when neither does.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Failures {
    pub total: u64,
    pub by_class: BTreeMap<String, u64>,
    pub by_provider: BTreeMap<String, Attempts>,
    /// Failed attempts per endpoint (the run config's endpoint name).
    pub by_endpoint: BTreeMap<String, u64>,
    /// The provider behind at least half of the failed attempts: a resume routed to it fails
    /// again, so the summary names it with the routing line that avoids it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caused_by: Option<String>,
}

impl Failures {
    pub fn add(&mut self, record: &Record) {
        let provider = record.provider.clone().unwrap_or_else(|| UNKNOWN.into());
        let attempts = self.by_provider.entry(provider).or_default();
        attempts.attempts += 1;
        match record.status {
            Status::Success => attempts.answers += 1,
            Status::Failed => {
                let class = record
                    .error_class
                    .and_then(|c| serde_json::to_value(c).ok())
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "unknown".into());
                attempts.failed += 1;
                *attempts.by_class.entry(class.clone()).or_default() += 1;
                self.total += 1;
                *self.by_class.entry(class).or_default() += 1;
                *self.by_endpoint.entry(record.endpoint.clone()).or_default() += 1;
            }
            Status::Skipped => {}
        }
    }

    /// Name the provider behind at least half of the failures (never `(unknown)`: failures no
    /// provider is named for cannot be routed around).
    pub fn attribute(&mut self) {
        let top = self
            .by_provider
            .iter()
            .filter(|(name, a)| a.failed > 0 && *name != UNKNOWN)
            .max_by_key(|(_, a)| a.failed);
        self.caused_by = top
            .filter(|(_, a)| 2 * a.failed >= self.total)
            .map(|(name, _)| name.clone());
    }
}

/// A convention adopted for a provider, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConventionLine {
    pub name: String,
    /// `"completion count = rebuilt − 1 in 34 of 34"`.
    pub evidence: String,
}

/// Shares of a provider's samples (0 … 1).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Shares {
    pub exact: f64,
    pub ambiguous: f64,
    pub lossy: f64,
    pub dropped: f64,
}

/// One provider's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderRow {
    pub provider: String,
    pub answers: u64,
    pub failed: u64,
    pub failures_by_class: BTreeMap<String, u64>,
    /// The conventions its answers settle, each sample rebuilt under them.
    pub conventions: Vec<ConventionLine>,
    pub samples: u64,
    pub exact: u64,
    pub ambiguous: u64,
    pub lossy: u64,
    /// Samples `build` drops with its default policy (class `inconsistent`).
    pub dropped: u64,
    pub shares: Shares,
    pub tool_call_samples: u64,
    pub tool_call_exact: u64,
    /// Its tool-call ids' form (`functions.NAME:N`, `call_…`, …; `mixed: …` with counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id_form: Option<String>,
    pub verdict: Verdict,
    pub reason: String,
}

/// Every provider's row and the routing line that follows from the verdicts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProviderTable {
    pub rows: Vec<ProviderRow>,
    /// Paste into the run config (`provider = { ignore = [...] }`); absent when every named
    /// provider is to be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<String>,
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        (n as f64 / of as f64 * 1e4).round() / 1e4
    }
}

/// The most frequent reason among `classes` of a group.
fn top_reason(g: &GroupFigures, classes: &[FidelityClass]) -> Option<(String, u64)> {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for class in classes {
        for (reason, n) in g.reasons_by_class.get(class.name()).into_iter().flatten() {
            *counts.entry(reason).or_default() += n;
        }
    }
    counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(r, n)| (r.to_string(), n))
}

fn id_form(forms: &BTreeMap<String, u64>) -> Option<String> {
    match forms.len() {
        0 => None,
        1 => forms.keys().next().cloned(),
        _ => Some(format!(
            "mixed: {}",
            forms
                .iter()
                .map(|(f, n)| format!("{f} {n}"))
                .collect::<Vec<_>>()
                .join(" · ")
        )),
    }
}

/// The conventions adopted for `provider`, over its endpoints' groups.
fn conventions_of(provider: &str, groups: &[ProviderReport]) -> Vec<ConventionLine> {
    let mut lines: Vec<ConventionLine> = Vec::new();
    for g in groups
        .iter()
        .filter(|g| g.provider.as_deref().unwrap_or(UNKNOWN) == provider)
    {
        for c in &g.conventions {
            if !lines.iter().any(|l| l.name == c.name) {
                lines.push(ConventionLine {
                    name: c.name.clone(),
                    evidence: c.evidence.clone(),
                });
            }
        }
    }
    lines
}

/// One provider's row. `dropped_by_build`: rows a build already dropped (verifying a build
/// directory, whose rows no longer hold them).
fn row(
    name: &str,
    g: &GroupFigures,
    attempts: Option<&Attempts>,
    groups: &[ProviderReport],
    dropped_by_build: u64,
) -> ProviderRow {
    let exact = g.class(FidelityClass::ExactByServerIds) + g.class(FidelityClass::Unique);
    let dropped = g.class(FidelityClass::Inconsistent) + dropped_by_build;
    let samples = g.samples + dropped_by_build;
    let failed = attempts.map_or(0, |a| a.failed);
    let top_failure = attempts.and_then(|a| {
        a.by_class
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(c, n)| (c.clone(), *n))
    });
    let top_doubt = if dropped > 0 {
        top_reason(g, &[FidelityClass::Inconsistent])
    } else {
        top_reason(
            g,
            &[
                FidelityClass::TruncatedMidCharacter,
                FidelityClass::Ambiguous,
                FidelityClass::Lossy,
            ],
        )
    };
    let facts = Facts {
        answers: attempts.map_or(samples, |a| a.answers.max(samples)),
        failed,
        top_failure,
        samples,
        exact,
        dropped,
        top_doubt,
        cut: g.cut_by_max_tokens,
    };
    let (verdict, reason) = verdict::judge(&facts);
    ProviderRow {
        provider: name.to_string(),
        answers: facts.answers,
        failed,
        failures_by_class: attempts.map(|a| a.by_class.clone()).unwrap_or_default(),
        conventions: conventions_of(name, groups),
        samples,
        exact,
        ambiguous: g.class(FidelityClass::Ambiguous),
        lossy: g.class(FidelityClass::Lossy),
        dropped,
        shares: Shares {
            exact: share(exact, samples),
            ambiguous: share(g.class(FidelityClass::Ambiguous), samples),
            lossy: share(g.class(FidelityClass::Lossy), samples),
            dropped: share(dropped, samples),
        },
        tool_call_samples: g.tool_call_samples,
        tool_call_exact: g.tool_call_exact,
        call_id_form: id_form(&g.call_id_forms),
        verdict,
        reason,
    }
}

/// The table over every provider that answered or failed. `groups`: the provider groups with
/// their conventions (`build`'s inference); `build_dropped`: per provider, rows a build already
/// dropped (a build directory as input).
pub fn table(
    by_provider: &BTreeMap<String, GroupFigures>,
    failures: &Failures,
    groups: &[ProviderReport],
    build_dropped: &BTreeMap<String, u64>,
) -> ProviderTable {
    let empty = GroupFigures::default();
    let mut names: Vec<&String> = by_provider.keys().collect();
    // A provider with only failures, or (a build directory) only dropped rows, has a row too.
    let dropped_only = build_dropped
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, _)| k);
    // Attempts no provider is named for (an endpoint's own 429s and errors) have no row: no
    // verdict can route around them; the failures' summary counts them by class and endpoint.
    let failed_only = failures.by_provider.keys().filter(|k| *k != UNKNOWN);
    for name in failed_only.chain(dropped_only) {
        if !by_provider.contains_key(name) && !names.contains(&name) {
            names.push(name);
        }
    }
    let rows: Vec<ProviderRow> = names
        .into_iter()
        .map(|name| {
            row(
                name,
                by_provider.get(name).unwrap_or(&empty),
                failures.by_provider.get(name),
                groups,
                build_dropped.get(name).copied().unwrap_or(0),
            )
        })
        .collect();
    // Only providers a run config can name are routed.
    let named: Vec<&ProviderRow> = rows.iter().filter(|r| r.provider != UNKNOWN).collect();
    let verdicts: Vec<(String, Verdict)> = named
        .iter()
        .map(|r| (r.provider.clone(), r.verdict))
        .collect();
    let mut ranked = named.clone();
    ranked.sort_by(|a, b| {
        let fail = |r: &ProviderRow| share(r.failed, r.answers + r.failed);
        b.shares
            .exact
            .total_cmp(&a.shares.exact)
            .then(fail(a).total_cmp(&fail(b)))
    });
    let ranked: Vec<String> = ranked.iter().map(|r| r.provider.clone()).collect();
    ProviderTable {
        routing: verdict::routing_line(&verdicts, &ranked),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(samples: u64, exact: u64, inconsistent: u64) -> GroupFigures {
        let mut g = GroupFigures {
            samples,
            ..GroupFigures::default()
        };
        g.by_fidelity.insert("unique".into(), exact);
        g.by_fidelity.insert("inconsistent".into(), inconsistent);
        g.by_fidelity
            .insert("lossy".into(), samples - exact - inconsistent);
        g
    }

    #[test]
    fn a_dead_provider_is_avoided_and_named_as_the_cause() {
        let mut failures = Failures::default();
        let mut dead = Attempts {
            attempts: 9,
            failed: 9,
            ..Attempts::default()
        };
        dead.by_class.insert("server_error".into(), 9);
        failures.total = 10;
        failures.by_provider.insert("Dead".into(), dead);
        failures.by_provider.insert(
            "Good".into(),
            Attempts {
                attempts: 11,
                answers: 10,
                failed: 1,
                ..Attempts::default()
            },
        );
        failures.attribute();
        assert_eq!(failures.caused_by.as_deref(), Some("Dead"));
        let by_provider = BTreeMap::from([
            ("Good".to_string(), group(10, 10, 0)),
            ("Short".to_string(), group(10, 0, 10)),
        ]);
        let t = table(&by_provider, &failures, &[], &BTreeMap::new());
        let verdicts: Vec<(&str, Verdict)> = t
            .rows
            .iter()
            .map(|r| (r.provider.as_str(), r.verdict))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("Good", Verdict::Use),
                ("Short", Verdict::Avoid),
                ("Dead", Verdict::Avoid)
            ]
        );
        assert_eq!(
            t.rows[2].reason,
            "all 9 attempt(s) failed (mostly server_error: 9)"
        );
        assert!(t.rows[0].conventions.is_empty());
        assert_eq!(
            t.routing.as_deref(),
            Some(r#"provider = { ignore = ["Short", "Dead"] }"#)
        );
    }

    #[test]
    fn conventions_come_from_builds_groups_of_the_provider() {
        let report = |endpoint: &str| ProviderReport {
            endpoint: endpoint.into(),
            provider: Some("DeepInfra".into()),
            conventions: vec![crate::build::ConventionReport {
                name: "usage_excludes_end_token".into(),
                evidence: "completion count = rebuilt − 1 in 34 of 34".into(),
                ..Default::default()
            }],
            ..ProviderReport::default()
        };
        let by_provider = BTreeMap::from([("DeepInfra".to_string(), group(34, 34, 0))]);
        let t = table(
            &by_provider,
            &Failures::default(),
            &[report("or-1"), report("or-2")],
            &BTreeMap::new(),
        );
        assert_eq!(
            t.rows[0].conventions,
            [ConventionLine {
                name: "usage_excludes_end_token".into(),
                evidence: "completion count = rebuilt − 1 in 34 of 34".into(),
            }],
            "one line per convention over the provider's endpoints"
        );
        assert_eq!(t.rows[0].verdict, Verdict::Use);
        assert_eq!(t.routing, None);
    }
}
