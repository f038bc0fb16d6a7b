//! Multi-turn regeneration (`generate --turns all`): every assistant turn of a conversation is
//! regenerated in order, each against the history of the turns regenerated before it.
//!
//! A conversation's *turn points* are its assistant messages (and its end, when it ends on
//! another role). Turn `k` (1-based, of `n`) is the prompt `messages[..point_k]` with every
//! earlier assistant message replaced by the model's regenerated answer, journaled under the id
//! [`turn_id`]`(prompt, k, n)` — so each turn is resumable on its own: a resume regenerates
//! exactly the first unfinished turn of each conversation.
//!
//! The engine runs *rounds*: each round schedules, for every conversation, its first turn without
//! a success (all earlier ones have one), through the ordinary scheduler, under the manifest of
//! the conversations (not of one round's turn prompts). Rounds continue until no conversation has
//! a turn left, a round adds no success (what is left failed), or the run is stopped.
//!
//! History is written back as the family's template expects to read it: `content`,
//! `tool_calls` (arguments as the model wrote them), and the reasoning under `reasoning_content`
//! ([`Completion::assistant_message`]). Whether the
//! history *shows* that reasoning is the template's decision, and each family decides differently:
//! - Kimi K2-Thinking / K2.5: reasoning kept only after the last assistant message without tool
//!   calls; earlier turns are written `<think></think>content` (reasoning dropped);
//! - Qwen3: reasoning kept only for assistant messages after the last user query (a tool-call
//!   chain in progress); earlier turns lose it;
//! - DeepSeek-V3: the template never writes reasoning in history;
//! - Kimi K2 (no reasoning) and templates without reasoning: nothing to drop.
//!
//! `build` flags conversations where this makes the history differ from what the model produced
//! (`history_rerender_differs`). Tool messages of the dataset are kept as they are: when a
//! regenerated turn calls different tools than the dataset's, its tool results no longer answer
//! it (the ids are the regenerated answer's) — such conversations are best generated one turn at a
//! time (`--turns one`).
//!
//! Memory: the answers of every conversation's finished turns are read back from the journal
//! before each round (as history messages), so a round holds the conversations' histories, not
//! the run's responses.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use super::{manifest_for, run_list_as, EngineError, PromptList, RunOptions, RunSummary, Shutdown};
use crate::completion::{Completion, ObjectArguments};
use crate::config::RunConfig;
use crate::dataset::{DatasetError, Prompt};
use crate::journal::record::{parse_turn_id, turn_id};
use crate::journal::{RecordReader, RunDir, Status};

/// Indices of the messages where a turn is generated: every assistant message, and the end when
/// the conversation ends on another role.
pub fn turn_points(messages: &[Value]) -> Vec<usize> {
    let mut points: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .map(|(i, _)| i)
        .collect();
    let ends_on_assistant = messages
        .last()
        .and_then(|m| m.get("role"))
        .and_then(Value::as_str)
        == Some("assistant");
    if !ends_on_assistant {
        points.push(messages.len());
    }
    points
}

/// Read `prompts.jsonl` as full prompts (multi-turn needs the messages as values).
pub fn read_prompts(path: &Path) -> Result<Vec<Prompt>, DatasetError> {
    let file = File::open(path).map_err(|source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut prompts = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| DatasetError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let prompt: Prompt =
            serde_json::from_str(&line).map_err(|e| DatasetError::PromptsFile {
                path: path.to_path_buf(),
                line: index as u64 + 1,
                message: e.to_string(),
            })?;
        prompts.push(prompt);
    }
    Ok(prompts)
}

/// `generate --turns all`: rounds of turn prompts until every conversation is done or stuck.
/// Returns the last round's summary (its `summary` covers the whole run).
pub async fn run_turns(
    config: &RunConfig,
    prompts: Vec<Prompt>,
    run_dir: &Path,
    shutdown: Shutdown,
    options: RunOptions,
) -> Result<RunSummary, EngineError> {
    let mut seen = std::collections::HashSet::new();
    let conversations: Vec<Prompt> = prompts
        .into_iter()
        .filter(|p| seen.insert(p.id.clone()))
        .collect();
    let mut manifest = manifest_for(config, conversations.iter().map(|p| p.id.as_str()));
    if let Value::Object(options) = &mut manifest.request_options {
        options.insert("turns".into(), Value::from("all"));
    }
    manifest.seal();

    // Every round runs under the conversations' manifest.
    let run_round = |round: PromptList| {
        run_list_as(
            config,
            round,
            run_dir,
            shutdown.clone(),
            options.clone(),
            Some(manifest.clone()),
        )
    };
    let mut last: Option<RunSummary> = None;
    let mut successes_before = usize::MAX;
    loop {
        let answers = finished_turns(run_dir)?;
        if answers.len() == successes_before || shutdown.is_stopping() {
            break;
        }
        successes_before = answers.len();
        let mut round = PromptList::new();
        for conversation in &conversations {
            if let Some(prompt) = next_turn(conversation, &answers) {
                round
                    .push(prompt)
                    .map_err(|e| EngineError::Runtime(format!("cannot serialize a prompt: {e}")))?;
            }
        }
        if round.is_empty() {
            break;
        }
        last = Some(run_round(round).await?);
    }
    match last {
        Some(summary) => Ok(summary),
        // Nothing left to run: one empty round reports the run as it stands.
        None => run_round(PromptList::new()).await,
    }
}

/// The first turn of `conversation` without a success, as a prompt with the regenerated history.
fn next_turn(conversation: &Prompt, answers: &HashMap<String, Value>) -> Option<Prompt> {
    let points = turn_points(&conversation.messages);
    let n = points.len();
    let (k, _) = points
        .iter()
        .enumerate()
        .find(|(k, _)| !answers.contains_key(&turn_id(&conversation.id, k + 1, n)))?;
    let mut messages: Vec<Value> = conversation.messages[..points[k]].to_vec();
    for (j, &point) in points[..k].iter().enumerate() {
        let answer = answers.get(&turn_id(&conversation.id, j + 1, n))?;
        messages[point] = answer.clone();
    }
    Some(Prompt {
        id: turn_id(&conversation.id, k + 1, n),
        source: conversation.source.clone(),
        messages,
        tools: conversation.tools.clone(),
        meta: Value::Null,
        system_with_tools: conversation.system_with_tools.clone(),
        request_options: conversation.request_options.clone(),
    })
}

/// Every turn id with a success in the journal → its answer as a history message (the first
/// success of a turn, as `build` takes it).
fn finished_turns(run_dir: &Path) -> Result<HashMap<String, Value>, EngineError> {
    let mut answers = HashMap::new();
    let journal = RunDir::new(run_dir).journal_dir();
    if !journal.is_dir() {
        return Ok(answers);
    }
    for item in RecordReader::open(&journal)? {
        let (_, record) = item?;
        let Ok(record) = record else { continue };
        if record.status != Status::Success || parse_turn_id(&record.id).is_none() {
            continue;
        }
        if answers.contains_key(&record.id) {
            continue;
        }
        let Some(completion) = record
            .response
            .as_ref()
            .and_then(|r| Completion::from_response(r).ok())
        else {
            continue;
        };
        answers.insert(
            record.id,
            completion.assistant_message(ObjectArguments::Kept),
        );
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn turns_regenerate_in_order_with_the_regenerated_history() {
        let conversation = Prompt {
            id: "c".into(),
            source: "s".into(),
            messages: vec![
                json!({"role": "user", "content": "q1"}),
                json!({"role": "assistant", "content": "old a1"}),
                json!({"role": "user", "content": "q2"}),
            ],
            tools: None,
            meta: Value::Null,
            ..Prompt::default()
        };
        assert_eq!(turn_points(&conversation.messages), vec![1, 3]);
        let mut answers = HashMap::new();
        let first = next_turn(&conversation, &answers).expect("turn 1");
        assert_eq!(first.id, "c:turn1/2");
        assert_eq!(first.messages.len(), 1);
        let new_a1 = json!({"role": "assistant", "content": "new a1", "reasoning_content": "r"});
        answers.insert("c:turn1/2".to_string(), new_a1.clone());
        let second = next_turn(&conversation, &answers).expect("turn 2");
        assert_eq!(second.id, "c:turn2/2");
        assert_eq!(second.messages[1], new_a1);
        assert_eq!(second.messages.len(), 3);
        answers.insert("c:turn2/2".to_string(), json!({}));
        assert!(next_turn(&conversation, &answers).is_none());
    }
}
