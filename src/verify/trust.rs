//! What `verify` says about trust beyond the counts: the inconsistent samples by name (with
//! their reasons and where they first disagree), what `build` will drop, and what each fidelity
//! class means ([`GLOSSARY`], for the report).

use serde::Serialize;

use super::compare::Comparison;
use super::figures::{reason_name, SampleFigures};
use crate::reconstruct::FidelityClass;

/// Inconsistent samples listed by name in `verify.json` (all are counted).
pub const MAX_INCONSISTENT_SAMPLES: usize = 100;

/// One sample of class `inconsistent`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InconsistentSample {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub reasons: Vec<String>,
    /// Where the rebuilt ids first disagree with what the server said: the reference ids'
    /// first differing token, else its `usage` counts against the rebuilt lengths.
    pub first_difference: String,
}

impl InconsistentSample {
    pub fn of(s: &SampleFigures) -> InconsistentSample {
        InconsistentSample {
            id: s.id.clone(),
            provider: s.provider.clone(),
            source: s.source.clone(),
            reasons: s.trust.reasons.iter().map(|r| reason_name(*r)).collect(),
            first_difference: first_difference(s),
        }
    }
}

fn first_difference(s: &SampleFigures) -> String {
    if let Some(Comparison::Divergent(d)) = &s.comparison {
        return format!(
            "token {}: rebuilt {:?}, server {:?}",
            d.position, d.ours, d.reference
        );
    }
    let counts = |what: &str, usage: Option<(u64, usize)>| {
        usage
            .filter(|(reported, rebuilt)| *reported != *rebuilt as u64)
            .map(|(reported, rebuilt)| format!("{what} reported {reported}, rebuilt {rebuilt}"))
    };
    counts("completion_tokens", s.completion_usage)
        .or_else(|| counts("prompt_tokens", s.prompt_usage))
        .unwrap_or_else(|| "no token stream the answer allows was found".into())
}

/// What `build` does with the samples verified here.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BuildDrops {
    /// The classes build drops by default (`--drop-class`).
    pub classes: Vec<String>,
    /// Samples it drops, and keeps.
    pub drops: u64,
    pub keeps: u64,
    /// The sentence the summary and report print.
    pub note: String,
}

impl BuildDrops {
    /// For a run: what build's default policy will drop. `already`: a build directory's own
    /// dropped rows (its shards no longer hold them).
    pub fn of(total: u64, inconsistent: u64, already: Option<u64>) -> BuildDrops {
        let class = FidelityClass::Inconsistent.name();
        let note = match already {
            Some(dropped) => format!(
                "this build dropped {dropped} sample(s) by its policies and kept {total}"
            ),
            None if inconsistent == 0 => format!(
                "build keeps all {total} sample(s): none is {class} (the class it drops by default)"
            ),
            None => format!(
                "build drops {inconsistent} sample(s) of class {class} (its default --drop-class) and keeps {}",
                total - inconsistent
            ),
        };
        BuildDrops {
            classes: vec![class.to_string()],
            drops: already.unwrap_or(inconsistent),
            keeps: total - if already.is_some() { 0 } else { inconsistent },
            note,
        }
    }
}

/// What each fidelity class means, for the report's glossary.
pub const GLOSSARY: [(FidelityClass, &str); 6] = [
    (
        FidelityClass::ExactByServerIds,
        "The server returned its own token ids and they are used as they are.",
    ),
    (
        FidelityClass::Unique,
        "Exactly one token stream is consistent with the answer's text and its usage counts: the ids are rebuilt exactly.",
    ),
    (
        FidelityClass::TruncatedMidCharacter,
        "max_tokens cut a multi-byte character: the last token is a partial-byte id the text cannot show.",
    ),
    (
        FidelityClass::Ambiguous,
        "Several token streams fit the answer and nothing decides between them; the reasons say where.",
    ),
    (
        FidelityClass::Lossy,
        "The server is known to destroy something the answer does not recover (rewritten call ids, stripped whitespace, re-serialized arguments): the ids may differ where the reasons say.",
    ),
    (
        FidelityClass::Inconsistent,
        "No token stream consistent with the answer was found (its usage disagrees with every rebuild): the ids are not to be trusted, and build drops the sample by default.",
    ),
];

/// Counts as the terminal and the report print them: "usage_disagrees 3 · no_usage 1",
/// most frequent first.
pub fn counted<'a>(items: impl IntoIterator<Item = (&'a String, &'a u64)>) -> String {
    let mut v: Vec<(&String, &u64)> = items.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(" · ")
}
