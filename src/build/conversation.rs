//! Multi-turn samples: every regenerated assistant turn of a conversation in ONE row.
//!
//! `generate --turns all` journals one record per assistant turn, with the record id
//! [`turn_id`](crate::journal::record::turn_id)`(prompt, i, n)` = `PROMPT:turnI/N` (1-based), so each turn resumes on its own. Turn
//! `i`'s request holds the regenerated history (turns `1..i` as the model answered them, written
//! back as the family's template expects) and its answer is turn `i`.
//!
//! The row is the last turn's prompt followed by the last turn's completion: the last prompt *is*
//! the template's render of the whole regenerated history — exactly the tokens the model saw when
//! it wrote the last turn — and the last completion is what it wrote. The mask covers:
//! - the last completion (all of it, as for a single turn);
//! - each earlier turn `i` where the history shows it: from the end of the longest common prefix
//!   of turn `i`'s own prompt and the last prompt (the template's assistant header, and whatever
//!   of the generation prompt the history repeats, stay 0) through the first end-of-turn token
//!   after it.
//!
//! "Vanishing thought": templates that drop reasoning from history (Kimi K2-Thinking / K2.5 keep
//! reasoning only after the last plain assistant message; Qwen3 keeps it only after the last
//! user query; DeepSeek-V3 never writes it) re-render an earlier turn differently from what the
//! model produced. The row then still has the template's layout (what a model trained on it will
//! see at inference), but its fidelity gets [`Reason::HistoryRerenderDiffers`]: the masked tokens
//! of that turn are not the stream the model produced in the context it produced them.
//!
//! Each turn is rebuilt under its own provider group's shape and inferred conventions
//! ([`Providers::rebuild_with`]): behind OpenRouter the turns of one conversation may be
//! answered by different providers.

use std::collections::{BTreeMap, HashMap};

use super::providers::Providers;
use super::row::{read_request, BuiltRow, Row};
use crate::completion::Completion;
use crate::journal::record::parse_turn_id;
use crate::journal::Record;
use crate::model::Profile;
use crate::reconstruct::infer::{self, Convention};
use crate::reconstruct::{Fidelity, Reason, ReconstructOptions};

/// A successful turn record waiting for its conversation.
#[derive(Debug)]
pub struct TurnRecord {
    pub prompt: String,
    pub turn: usize,
    pub of: usize,
    pub location: String,
    pub record: Record,
}

impl TurnRecord {
    /// The record as a turn (taken, not copied) when its id is a turn id, else the record back.
    pub fn of(record: Record, location: &str) -> Result<TurnRecord, Box<Record>> {
        let Some((prompt, turn, of)) = parse_turn_id(&record.id) else {
            return Err(Box::new(record));
        };
        let prompt = prompt.to_string();
        Ok(TurnRecord {
            prompt,
            turn,
            of,
            location: location.to_string(),
            record,
        })
    }
}

/// Turns read so far, per conversation, until all of a conversation's turns are in.
#[derive(Debug, Default)]
pub struct Pending {
    by_prompt: HashMap<String, BTreeMap<usize, TurnRecord>>,
}

impl Pending {
    pub fn add(&mut self, turn: TurnRecord) {
        // A turn that succeeded twice (a duplicate success) keeps its first record.
        self.by_prompt
            .entry(turn.prompt.clone())
            .or_default()
            .entry(turn.turn)
            .or_insert(turn);
    }

    /// Conversations whose every turn is in, turns in order.
    pub fn take_complete(&mut self) -> Vec<Vec<TurnRecord>> {
        let done: Vec<String> = self
            .by_prompt
            .iter()
            .filter(|(_, turns)| {
                turns
                    .values()
                    .next()
                    .is_some_and(|first| turns.len() == first.of)
            })
            .map(|(prompt, _)| prompt.clone())
            .collect();
        let mut complete: Vec<Vec<TurnRecord>> = done
            .into_iter()
            .filter_map(|prompt| self.by_prompt.remove(&prompt))
            .map(|turns| turns.into_values().collect())
            .collect();
        // Deterministic output order: by the location of the first turn read.
        complete.sort_by(|a: &Vec<TurnRecord>, b| a[0].location.cmp(&b[0].location));
        complete
    }

    /// Prompt ids of conversations still missing turns.
    pub fn incomplete(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.by_prompt.keys().cloned().collect();
        ids.sort();
        ids
    }
}

/// One turn rebuilt: its own prompt and completion ids.
struct Turn {
    prompt: Vec<u32>,
    completion: Vec<u32>,
    fidelity: Fidelity,
    completion_info: Completion,
    server_ids: bool,
}

/// All turns of one conversation → one row, every turn rebuilt under `options`, nothing
/// inferred.
pub fn row_of(
    profile: &Profile,
    options: &ReconstructOptions,
    sources: &HashMap<String, String>,
    turns: Vec<TurnRecord>,
) -> Result<BuiltRow, String> {
    row_with(profile, |_| (options, &[]), sources, turns)
}

/// All turns of one conversation → one row, each turn rebuilt under its provider group's
/// shape and conventions.
pub fn row_under(
    profile: &Profile,
    providers: &Providers,
    sources: &HashMap<String, String>,
    turns: Vec<TurnRecord>,
) -> Result<BuiltRow, String> {
    let rebuild_with =
        |record: &Record| providers.rebuild_with(providers.group(record), &record.endpoint);
    row_with(profile, rebuild_with, sources, turns)
}

/// The row, each turn rebuilt under the shape and conventions `rebuild_with` gives its record.
fn row_with<'a>(
    profile: &Profile,
    rebuild_with: impl Fn(&Record) -> (&'a ReconstructOptions, &'a [&'static dyn Convention]),
    sources: &HashMap<String, String>,
    turns: Vec<TurnRecord>,
) -> Result<BuiltRow, String> {
    let first = turns.first().ok_or("a conversation without turns")?;
    let prompt_id = first.prompt.clone();
    let mut rebuilt = Vec::with_capacity(turns.len());
    for t in &turns {
        let at = || format!("{} (id {})", t.location, t.record.id);
        let response = t
            .record
            .response
            .as_ref()
            .ok_or_else(|| format!("{}: no response body", at()))?;
        let request = read_request(&t.record.request).map_err(|e| format!("{}: {e}", at()))?;
        let completion_info =
            Completion::from_response(response).map_err(|e| format!("{}: {e}", at()))?;
        let (options, conventions) = rebuild_with(&t.record);
        let answer = infer::Answer {
            profile,
            request: &request,
            completion: &completion_info,
            options,
        };
        let (r, _) = infer::rebuild(&answer, conventions).map_err(|e| format!("{}: {e}", at()))?;
        rebuilt.push(Turn {
            prompt: r.prompt_ids,
            completion: r.completion_ids,
            fidelity: r.fidelity,
            server_ids: completion_info.completion_token_ids.is_some(),
            completion_info,
        });
    }
    let last = rebuilt.last().ok_or("a conversation without turns")?;
    let ends = std::iter::once(profile.end_of_turn())
        .chain(profile.family.rules().history_turn_ends().iter().copied());
    let turn_ends: Vec<u32> = ends
        .filter_map(|end| profile.tokenizer.token_to_id(end))
        .collect();
    let (input_ids, loss_mask, rerender_differs) =
        layout(&rebuilt, &turn_ends).map_err(|e| format!("conversation {prompt_id}: {e}"))?;

    let mut fidelity = Fidelity::new(last.fidelity.class);
    for turn in &rebuilt {
        fidelity.at_most(turn.fidelity.class);
        for reason in &turn.fidelity.reasons {
            fidelity.because(*reason);
        }
    }
    if rerender_differs {
        fidelity.because(Reason::HistoryRerenderDiffers);
    }
    let mut row = Row {
        id: prompt_id.clone(),
        input_ids,
        loss_mask,
        prompt_len: 0,
        completion_len: 0,
        source: sources.get(&prompt_id).cloned(),
        provider: turns
            .last()
            .and_then(|t| t.record.provider.clone())
            .or(last.completion_info.provider.clone()),
        finish_reason: last.completion_info.finish_reason.clone(),
        has_tool_calls: rebuilt
            .iter()
            .any(|t| !t.completion_info.tool_calls.is_empty()),
        fidelity_class: fidelity.class,
        fidelity_reasons: fidelity.reasons,
        turns: rebuilt.len() as u32,
    };
    row.recount();
    Ok(BuiltRow {
        row,
        server_ids: rebuilt.iter().all(|t| t.server_ids),
    })
}

/// The ids, the mask, and whether any earlier turn is re-rendered differently from what the model
/// produced. An earlier turn ends at the first of `turn_ends` (the end-of-turn token, and the
/// family's other ends of a turn in history).
fn layout(turns: &[Turn], turn_ends: &[u32]) -> Result<(Vec<u32>, Vec<u8>, bool), String> {
    let last = turns.last().ok_or("no turns")?;
    let history = &last.prompt;
    let mut mask = vec![0u8; history.len()];
    let mut differs = false;
    for (i, turn) in turns[..turns.len() - 1].iter().enumerate() {
        let start = common_prefix(&turn.prompt, history);
        if turn_ends.is_empty() {
            return Err("the profile's end-of-turn token is not in the vocabulary".into());
        }
        let end = history[start..]
            .iter()
            .position(|id| turn_ends.contains(id))
            .map(|p| start + p)
            .ok_or_else(|| format!("turn {} has no end-of-turn token in the history", i + 1))?;
        mask[start..=end].fill(1);
        let as_produced = start == turn.prompt.len()
            && history.get(start..start + turn.completion.len()) == Some(&turn.completion[..]);
        differs |= !as_produced;
    }
    let mut ids = history.clone();
    ids.extend_from_slice(&last.completion);
    mask.resize(ids.len(), 1);
    Ok((ids, mask, differs))
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconstruct::FidelityClass;

    fn turn(prompt: &[u32], completion: &[u32]) -> Turn {
        Turn {
            prompt: prompt.to_vec(),
            completion: completion.to_vec(),
            fidelity: Fidelity::new(FidelityClass::Unique),
            completion_info: Completion::default(),
            server_ids: false,
        }
    }

    #[test]
    fn masks_each_turn_in_the_history() {
        const END: u32 = 9;
        // Turn 1 saw [1, 2, 3(header)] and wrote [7, 8, END]; the history keeps it as written.
        // Turn 2 saw [1, 2, 3, 7, 8, END, 4, 3] and wrote [5, END].
        let turns = [
            turn(&[1, 2, 3], &[7, 8, END]),
            turn(&[1, 2, 3, 7, 8, END, 4, 3], &[5, END]),
        ];
        let (ids, mask, differs) = layout(&turns, &[END]).expect("layout");
        assert_eq!(ids, vec![1, 2, 3, 7, 8, END, 4, 3, 5, END]);
        assert_eq!(mask, vec![0, 0, 0, 1, 1, 1, 0, 0, 1, 1]);
        assert!(!differs);
        // The template drops turn 1's reasoning (token 7): flagged, the layout is the template's.
        let turns = [
            turn(&[1, 2, 3], &[7, 8, END]),
            turn(&[1, 2, 3, 8, END, 4, 3], &[5, END]),
        ];
        let (_, mask, differs) = layout(&turns, &[END]).expect("layout");
        assert_eq!(mask, vec![0, 0, 0, 1, 1, 0, 0, 1, 1]);
        assert!(differs);
    }
}
