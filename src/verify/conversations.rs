//! Multi-turn runs (`generate --turns all`): a conversation's turn records (`PROMPT:turnI/N`) are
//! grouped as `build` groups them ([`crate::build::conversation`]) and counted as ONE sample —
//! the row `build` writes, its fidelity the worst of its turns plus what re-rendering the
//! history costs — and each turn is also checked on its own, under its provider group's shape and
//! conventions as `build` rebuilds it (its fidelity, its rebuilt ids
//! against the reference ids where that turn has them, its usage), so a report shows which turn
//! of which conversation is wrong.
//!
//! The conversation's sample takes the worst turn comparison (divergent, then truncated
//! mid-character, then BPE-benign, then exact) so one divergent turn fails the gate once; a
//! divergent turn is named by its own record id in the divergent samples.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::compare::Comparison;
use super::figures::{SampleFigures, SampleTrust};
use super::sample;
use crate::build::conversation::{self, TurnRecord};
use crate::build::Providers;
use crate::model::Profile;
use crate::reconstruct::Reason;

/// Conversations listed one by one in `verify.json` (all are counted).
const MAX_LISTED: usize = 200;

/// One turn of a conversation, checked on its own.
#[derive(Debug, Clone, Serialize)]
pub struct TurnFigures {
    /// The turn's record id (`PROMPT:turnI/N`).
    pub id: String,
    pub turn: usize,
    pub fidelity: &'static str,
    /// `exact`, `bpe_benign`, `truncated_mid_character`, `divergent`; `null`: no reference ids.
    pub reference: Option<&'static str>,
    /// First differing completion position of a divergent turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergent_at: Option<usize>,
    /// `usage.prompt_tokens` minus our render of the turn's prompt.
    pub prompt_tokens_delta: Option<i64>,
    /// `usage.completion_tokens` minus the turn's completion rebuilt from text.
    pub completion_tokens_delta: Option<i64>,
}

/// One conversation: the sample `build` writes, and its turns.
#[derive(Debug, Clone, Serialize)]
pub struct ConversationFigures {
    /// The prompt id (the row's id).
    pub id: String,
    pub source: Option<String>,
    pub provider: Option<String>,
    pub fidelity: &'static str,
    pub fidelity_reasons: Vec<Reason>,
    pub turns: Vec<TurnFigures>,
}

/// Every conversation of the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConversationReport {
    /// Conversations verified (each is one sample in `samples`).
    pub conversations: u64,
    /// Their turns, each checked on its own.
    pub turns: u64,
    pub turns_by_fidelity: BTreeMap<String, u64>,
    /// Turn comparisons by outcome (`exact`, `bpe_benign`, …, `without_reference`).
    pub turns_by_reference: BTreeMap<String, u64>,
    /// Conversations with turns missing (not verified, as `build` leaves them out).
    pub incomplete: u64,
    /// The first conversations, turn by turn.
    pub listed: Vec<ConversationFigures>,
}

impl ConversationReport {
    pub fn add(&mut self, conversation: ConversationFigures) {
        self.conversations += 1;
        for t in &conversation.turns {
            self.turns += 1;
            *self
                .turns_by_fidelity
                .entry(t.fidelity.to_string())
                .or_default() += 1;
            *self
                .turns_by_reference
                .entry(t.reference.unwrap_or("without_reference").to_string())
                .or_default() += 1;
        }
        if self.listed.len() < MAX_LISTED {
            self.listed.push(conversation);
        }
    }
}

fn label(c: &Comparison) -> &'static str {
    match c {
        Comparison::Exact => "exact",
        Comparison::BpeBenign => "bpe_benign",
        Comparison::TruncatedMidCharacter => "truncated_mid_character",
        Comparison::Divergent(_) => "divergent",
    }
}

/// How bad a comparison is, for the conversation's worst.
fn severity(c: &Comparison) -> u8 {
    match c {
        Comparison::Exact => 0,
        Comparison::BpeBenign => 1,
        Comparison::TruncatedMidCharacter => 2,
        Comparison::Divergent(_) => 3,
    }
}

fn delta(usage: Option<(u64, usize)>) -> Option<i64> {
    usage.map(|(reported, ours)| reported as i64 - ours as i64)
}

/// What checking one conversation gives: its sample for the figures, and its report entry.
pub struct Checked {
    pub sample: SampleFigures,
    pub figures: ConversationFigures,
}

/// Check one complete conversation (its turns in order). `references`: `--reference` ids by
/// turn record id (`use_file`: a file was given, it overrides server ids). Errors name the turn.
pub fn check(
    profile: &Profile,
    providers: &Providers,
    sources: &HashMap<String, String>,
    turns: Vec<TurnRecord>,
    use_file: bool,
    references: &HashMap<String, Vec<u32>>,
) -> Result<Checked, String> {
    let first = turns.first().ok_or("a conversation without turns")?;
    let prompt_id = first.prompt.clone();
    let source = turns
        .iter()
        .find_map(|t| t.record.source.clone())
        .or_else(|| sources.get(&prompt_id).cloned());
    let mut checked_turns = Vec::with_capacity(turns.len());
    for t in &turns {
        let (options, conventions) =
            providers.rebuild_with(providers.group(&t.record), &t.record.endpoint);
        let s = sample::check_record(
            profile,
            options,
            conventions,
            &t.record,
            source.clone(),
            use_file,
            references.get(&t.record.id).map(Vec::as_slice),
        )
        .map_err(|e| format!("{} (id {}): {e}", t.location, t.record.id))?;
        checked_turns.push((t.turn, s));
    }
    let built = conversation::row_under(profile, providers, sources, turns)?;
    let row = built.row;

    let worst = checked_turns
        .iter()
        .filter_map(|(_, s)| s.comparison.as_ref().map(|c| (s, c)))
        .max_by_key(|(_, c)| severity(c));
    let last = checked_turns.last().map(|(_, s)| s);
    let sample = SampleFigures {
        // A divergent conversation is named by its divergent turn (where the position counts).
        id: match worst {
            Some((s, Comparison::Divergent(_))) => s.id.clone(),
            _ => row.id.clone(),
        },
        source: source.clone(),
        provider: row.provider.clone(),
        fidelity: row.fidelity_class,
        prompt_len: row.prompt_len as usize,
        completion_len: row.completion_len as usize,
        comparison: worst.map(|(_, c)| c.clone()),
        // The last turn's prompt is the whole regenerated history.
        prompt_usage: last.and_then(|s| s.prompt_usage),
        completion_usage: last.and_then(|s| s.completion_usage),
        trust: SampleTrust {
            reasons: row.fidelity_reasons.clone(),
            tool_calls: row.has_tool_calls,
            call_id_form: checked_turns.iter().find_map(|(_, s)| s.trust.call_id_form),
        },
    };
    let figures = ConversationFigures {
        id: row.id.clone(),
        source,
        provider: row.provider.clone(),
        fidelity: row.fidelity_class.name(),
        fidelity_reasons: row.fidelity_reasons.clone(),
        turns: checked_turns
            .iter()
            .map(|(turn, s)| TurnFigures {
                id: s.id.clone(),
                turn: *turn,
                fidelity: s.fidelity.name(),
                reference: s.comparison.as_ref().map(label),
                divergent_at: match &s.comparison {
                    Some(Comparison::Divergent(d)) => Some(d.position),
                    _ => None,
                },
                prompt_tokens_delta: delta(s.prompt_usage),
                completion_tokens_delta: delta(s.completion_usage),
            })
            .collect(),
    };
    Ok(Checked { sample, figures })
}
