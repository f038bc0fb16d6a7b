//! The figures of `verify.json`: counts per fidelity class, the reference comparison and the
//! usage cross-check, for the whole run and per dataset (source) and per provider.
//!
//! Every figure is a count that adds up as samples stream by ([`Figures::add`]), so memory is
//! bounded by the number of groups and histogram buckets, never by the number of samples. The
//! field names are the contract in docs/FORMATS.md (other tools read them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::compare::Comparison;
use crate::reconstruct::{FidelityClass, Reason};

/// Divergent samples kept with their context in `verify.json` (all are counted).
pub const MAX_DIVERGENT_SAMPLES: usize = 100;

/// Kimi-Vendor-Verifier's acceptance band for `usage.prompt_tokens`: the expected count up to 3
/// more (`expected ≤ prompt_tokens ≤ expected + 3`).
pub const KVV_PROMPT_TOKENS_SLACK: i64 = 3;

/// Samples per fidelity class; every class is listed, zeros included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleCounts {
    pub total: u64,
    pub by_fidelity: BTreeMap<String, u64>,
}

impl Default for SampleCounts {
    fn default() -> Self {
        SampleCounts {
            total: 0,
            by_fidelity: FidelityClass::ALL
                .iter()
                .map(|c| (c.name().to_string(), 0))
                .collect(),
        }
    }
}

/// Where the reference ids came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceSource {
    /// The server's own ids in the journal (vLLM/SGLang `return_token_ids`, llama.cpp
    /// `__verbose.tokens`, an imported generation's ids).
    ServerIds,
    /// `--reference FILE`.
    File,
    /// Nothing to compare with.
    #[default]
    None,
}

/// One divergent sample: where the ids rebuilt from text first differ from the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DivergentSample {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// First differing token position in the completion.
    pub position: usize,
    /// Decoded text around `position`, ours (rebuilt from text) and the reference's.
    pub ours: String,
    pub reference: String,
}

/// The comparison of rebuilt ids with reference ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReferenceFigures {
    pub source: ReferenceSource,
    pub compared: u64,
    pub exact: u64,
    /// Different ids for identical bytes (a non-canonical split the model sampled).
    pub bpe_benign: u64,
    /// The reference ends inside a UTF-8 character that the text could not show.
    pub truncated_mid_character: u64,
    pub divergent: u64,
    /// Samples with no reference ids (not in the file, or no server ids).
    #[serde(default)]
    pub without_reference: u64,
    /// The first [`MAX_DIVERGENT_SAMPLES`] divergent samples, with their context.
    #[serde(default)]
    pub divergent_samples: Vec<DivergentSample>,
}

/// Reported minus rebuilt token counts, as a histogram (`"0"`, `"1"`, `"-2"`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageDelta {
    /// Samples whose answer reported this count.
    pub compared: u64,
    pub equal: u64,
    /// Reported − rebuilt, sorted by delta when read with [`UsageDelta::sorted`].
    pub delta_histogram: BTreeMap<String, u64>,
}

impl UsageDelta {
    pub fn add(&mut self, reported: u64, rebuilt: usize) {
        let delta = reported as i64 - rebuilt as i64;
        self.compared += 1;
        if delta == 0 {
            self.equal += 1;
        }
        *self.delta_histogram.entry(delta.to_string()).or_default() += 1;
    }

    /// The histogram as (delta, count), in delta order.
    pub fn sorted(&self) -> Vec<(i64, u64)> {
        let mut v: Vec<(i64, u64)> = self
            .delta_histogram
            .iter()
            .filter_map(|(k, n)| k.parse().ok().map(|d| (d, *n)))
            .collect();
        v.sort();
        v
    }

    /// Samples within `0 ..= slack` (Kimi-Vendor-Verifier's band for prompt tokens is 3).
    pub fn within(&self, slack: i64) -> u64 {
        self.sorted()
            .iter()
            .filter(|(d, _)| (0..=slack).contains(d))
            .map(|(_, n)| n)
            .sum()
    }

    fn merge(&mut self, other: &UsageDelta) {
        self.compared += other.compared;
        self.equal += other.equal;
        for (k, n) in &other.delta_histogram {
            *self.delta_histogram.entry(k.clone()).or_default() += n;
        }
    }
}

/// The usage cross-check: rebuilt prompt and completion lengths against the server's counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageFigures {
    pub prompt_tokens: UsageDelta,
    pub completion_tokens: UsageDelta,
    /// Prompts whose reported count is within Kimi-Vendor-Verifier's band (`0 ≤ Δ ≤ 3`).
    #[serde(default)]
    pub prompt_tokens_within_kvv_band: u64,
}

/// Log-scale token-length histogram: bucket `k` holds lengths in `[2^k, 2^(k+1))`, bucket 0 also
/// holds length 0. Keys are the bucket's lower bound.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LengthHistogram {
    pub buckets: BTreeMap<u32, u64>,
}

impl LengthHistogram {
    pub fn bucket_of(len: usize) -> u32 {
        if len < 2 {
            0
        } else {
            1u32 << (usize::BITS - 1 - len.leading_zeros())
        }
    }

    pub fn add(&mut self, len: usize) {
        *self.buckets.entry(Self::bucket_of(len)).or_default() += 1;
    }

    fn merge(&mut self, other: &LengthHistogram) {
        for (k, n) in &other.buckets {
            *self.buckets.entry(*k).or_default() += n;
        }
    }
}

/// The figures of one group of samples (the whole run, one source, one provider).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupFigures {
    pub samples: u64,
    pub by_fidelity: BTreeMap<String, u64>,
    /// Per fidelity class, how many of its samples carry each reason (a sample with two
    /// reasons counts under both; a class whose samples carry none is absent).
    #[serde(default)]
    pub reasons_by_class: BTreeMap<String, BTreeMap<String, u64>>,
    /// Samples whose answer made tool calls, and how many of them were rebuilt exactly.
    #[serde(default)]
    pub tool_call_samples: u64,
    #[serde(default)]
    pub tool_call_exact: u64,
    /// The form of the answers' tool-call ids (`functions.NAME:N`, `NAME:N`, `digits`,
    /// `call_…`, `other`), counted per sample with tool calls.
    #[serde(default)]
    pub call_id_forms: BTreeMap<String, u64>,
    /// Samples not exact only because `max_tokens` cut them (class `truncated_mid_character`,
    /// or every reason a cut: [`is_cut`]): the run's limit, not the provider, put them there.
    #[serde(default)]
    pub cut_by_max_tokens: u64,
    pub reference: ReferenceFigures,
    pub usage: UsageFigures,
    pub prompt_lengths: LengthHistogram,
    pub completion_lengths: LengthHistogram,
}

/// What one sample contributes.
#[derive(Debug, Clone)]
pub struct SampleFigures {
    pub id: String,
    pub source: Option<String>,
    pub provider: Option<String>,
    pub fidelity: FidelityClass,
    pub prompt_len: usize,
    pub completion_len: usize,
    pub comparison: Option<Comparison>,
    /// (reported, rebuilt-from-text) prompt and completion counts.
    pub prompt_usage: Option<(u64, usize)>,
    pub completion_usage: Option<(u64, usize)>,
    pub trust: SampleTrust,
}

/// Why a sample is in its class, and its tool calls.
#[derive(Debug, Clone, Default)]
pub struct SampleTrust {
    pub reasons: Vec<Reason>,
    pub tool_calls: bool,
    /// The form of its first tool-call id ([`call_id_form`]).
    pub call_id_form: Option<&'static str>,
}

/// The form of a tool-call id, as providers write them: the model's own `functions.NAME:N`
/// (Kimi), `NAME:N`, a bare number, OpenAI-style `call_…`, or something else.
pub fn call_id_form(id: Option<&str>) -> &'static str {
    let Some(id) = id.filter(|id| !id.is_empty()) else {
        return "none";
    };
    let numbered = |s: &str| {
        s.rsplit_once(':').is_some_and(|(name, n)| {
            !name.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        })
    };
    if id.bytes().all(|b| b.is_ascii_digit()) {
        "digits"
    } else if id.starts_with("functions.") && numbered(id) {
        "functions.NAME:N"
    } else if numbered(id) {
        "NAME:N"
    } else if id.starts_with("call_") {
        "call_…"
    } else {
        "other"
    }
}

impl GroupFigures {
    pub fn add(&mut self, s: &SampleFigures, reference_source: ReferenceSource) {
        self.samples += 1;
        *self
            .by_fidelity
            .entry(s.fidelity.name().to_string())
            .or_default() += 1;
        self.add_trust(s);
        self.prompt_lengths.add(s.prompt_len);
        self.completion_lengths.add(s.completion_len);
        let r = &mut self.reference;
        match &s.comparison {
            None => r.without_reference += 1,
            Some(c) => {
                r.source = reference_source;
                r.compared += 1;
                match c {
                    Comparison::Exact => r.exact += 1,
                    Comparison::BpeBenign => r.bpe_benign += 1,
                    Comparison::TruncatedMidCharacter => r.truncated_mid_character += 1,
                    Comparison::Divergent(d) => {
                        r.divergent += 1;
                        if r.divergent_samples.len() < MAX_DIVERGENT_SAMPLES {
                            r.divergent_samples.push(DivergentSample {
                                id: s.id.clone(),
                                source: s.source.clone(),
                                provider: s.provider.clone(),
                                position: d.position,
                                ours: d.ours.clone(),
                                reference: d.reference.clone(),
                            });
                        }
                    }
                }
            }
        }
        if let Some((reported, rebuilt)) = s.prompt_usage {
            self.usage.prompt_tokens.add(reported, rebuilt);
            let delta = reported as i64 - rebuilt as i64;
            if (0..=KVV_PROMPT_TOKENS_SLACK).contains(&delta) {
                self.usage.prompt_tokens_within_kvv_band += 1;
            }
        }
        if let Some((reported, rebuilt)) = s.completion_usage {
            self.usage.completion_tokens.add(reported, rebuilt);
        }
    }

    /// The sample's reasons under its class, and its tool calls.
    fn add_trust(&mut self, s: &SampleFigures) {
        let cut = s.fidelity == FidelityClass::TruncatedMidCharacter
            || (!s.fidelity.is_exact()
                && s.fidelity != FidelityClass::Inconsistent
                && !s.trust.reasons.is_empty()
                && s.trust.reasons.iter().all(|r| is_cut(*r)));
        if cut {
            self.cut_by_max_tokens += 1;
        }
        if !s.trust.reasons.is_empty() {
            let reasons = self
                .reasons_by_class
                .entry(s.fidelity.name().to_string())
                .or_default();
            for reason in &s.trust.reasons {
                *reasons.entry(reason_name(*reason)).or_default() += 1;
            }
        }
        if s.trust.tool_calls {
            self.tool_call_samples += 1;
            if s.fidelity.is_exact() {
                self.tool_call_exact += 1;
            }
            // A build directory's rows do not keep the ids: no form to count.
            if let Some(form) = s.trust.call_id_form {
                *self.call_id_forms.entry(form.to_string()).or_default() += 1;
            }
        }
    }

    /// Add another group's counts (used for tests and for merging partial tallies).
    pub fn merge(&mut self, other: &GroupFigures) {
        self.samples += other.samples;
        for (k, n) in &other.by_fidelity {
            *self.by_fidelity.entry(k.clone()).or_default() += n;
        }
        for (class, reasons) in &other.reasons_by_class {
            let mine = self.reasons_by_class.entry(class.clone()).or_default();
            for (reason, n) in reasons {
                *mine.entry(reason.clone()).or_default() += n;
            }
        }
        self.cut_by_max_tokens += other.cut_by_max_tokens;
        self.tool_call_samples += other.tool_call_samples;
        self.tool_call_exact += other.tool_call_exact;
        for (form, n) in &other.call_id_forms {
            *self.call_id_forms.entry(form.clone()).or_default() += n;
        }
        let (r, o) = (&mut self.reference, &other.reference);
        if o.compared > 0 {
            r.source = o.source;
        }
        r.compared += o.compared;
        r.exact += o.exact;
        r.bpe_benign += o.bpe_benign;
        r.truncated_mid_character += o.truncated_mid_character;
        r.divergent += o.divergent;
        r.without_reference += o.without_reference;
        for d in &o.divergent_samples {
            if r.divergent_samples.len() < MAX_DIVERGENT_SAMPLES {
                r.divergent_samples.push(d.clone());
            }
        }
        self.usage.prompt_tokens.merge(&other.usage.prompt_tokens);
        self.usage
            .completion_tokens
            .merge(&other.usage.completion_tokens);
        self.usage.prompt_tokens_within_kvv_band += other.usage.prompt_tokens_within_kvv_band;
        self.prompt_lengths.merge(&other.prompt_lengths);
        self.completion_lengths.merge(&other.completion_lengths);
    }

    /// Samples of fidelity class `class`.
    pub fn class(&self, class: FidelityClass) -> u64 {
        self.by_fidelity.get(class.name()).copied().unwrap_or(0)
    }
}

/// A reason that only says `max_tokens` cut the answer somewhere the text cannot settle.
pub fn is_cut(reason: Reason) -> bool {
    matches!(
        reason,
        Reason::CutInsideToolSection | Reason::CutAfterToolCall | Reason::PartialCharacter
    )
}

/// A reason's stable name (as `build` writes it in `fidelity_reasons`).
pub fn reason_name(reason: Reason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{reason:?}"))
}

/// Label of samples without a source or provider.
pub const UNKNOWN: &str = "(unknown)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_buckets_are_powers_of_two() {
        assert_eq!(LengthHistogram::bucket_of(0), 0);
        assert_eq!(LengthHistogram::bucket_of(1), 0);
        assert_eq!(LengthHistogram::bucket_of(2), 2);
        assert_eq!(LengthHistogram::bucket_of(3), 2);
        assert_eq!(LengthHistogram::bucket_of(4), 4);
        assert_eq!(LengthHistogram::bucket_of(1000), 512);
    }

    #[test]
    fn call_id_forms_as_providers_write_them() {
        assert_eq!(
            call_id_form(Some("functions.get_weather:0")),
            "functions.NAME:N"
        );
        assert_eq!(call_id_form(Some("get_weather:12")), "NAME:N");
        assert_eq!(call_id_form(Some("0")), "digits");
        assert_eq!(call_id_form(Some("call_0f3a9b")), "call_…");
        assert_eq!(call_id_form(Some("toolu_01")), "other");
        assert_eq!(call_id_form(Some("")), "none");
        assert_eq!(call_id_form(None), "none");
    }

    #[test]
    fn usage_deltas_and_the_kvv_band() {
        let mut u = UsageDelta::default();
        u.add(10, 10);
        u.add(12, 10);
        u.add(9, 10);
        u.add(20, 10);
        assert_eq!((u.compared, u.equal), (4, 1));
        assert_eq!(u.sorted(), vec![(-1, 1), (0, 1), (2, 1), (10, 1)]);
        assert_eq!(u.within(3), 2);
    }
}
