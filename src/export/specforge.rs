//! SpecForge (sgl-project/SpecForge @a6b6b02) training data.
//!
//! * `specforge.jsonl` — tokenized rows `{"id", "input_ids", "loss_mask"}` for `specforge train`'s
//!   `data.prompts_path` (`config/schema.py`): `data/prompt_builder.py::prepare_prompt_tasks`
//!   sees `input_ids` and `loss_mask` in the first record and takes the standard-library path
//!   (`_prompt_from_record`: same lengths, non-empty, mask values 0/1, cut at
//!   `data.max_length`, rows with fewer than `min_loss_tokens` masked tokens skipped); other keys
//!   are ignored. These are the exact ids the target produced — no re-rendering.
//! * `conversations.jsonl` (with a run directory) — `{"id", "conversations": [{"role",
//!   "content", "reasoning_content"?, "tool_calls"?}], "tools"}` rows (`tools: []` when the
//!   request had none) that SpecForge's own preprocessing
//!   (`data/preprocessing.py::preprocess_conversations`, a `TEMPLATE_REGISTRY` chat template)
//!   reads, for users of its templates. SpecForge re-renders these itself, so
//!   the ids it trains on can differ from what the model produced (README, "Why exact ids
//!   matter").

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use rayon::prelude::*;

use super::ExportError;
use crate::build::lines::JournalLines;
use crate::build::BuildDir;
use crate::journal::record::parse_turn_id;
use crate::journal::{Record, Status, JOURNAL_DIR};

/// One `{"id"?, "input_ids", "loss_mask"}` line, written without building a JSON tree.
pub(crate) fn write_token_line(
    out: &mut impl Write,
    id: Option<&str>,
    input_ids: &[u32],
    loss_mask: &[u8],
) -> std::io::Result<()> {
    let mut line = String::with_capacity(16 + input_ids.len() * 9);
    line.push('{');
    if let Some(id) = id {
        line.push_str("\"id\":");
        line.push_str(&serde_json::to_string(id).map_err(std::io::Error::other)?);
        line.push(',');
    }
    line.push_str("\"input_ids\":[");
    push_numbers(&mut line, input_ids.iter().map(|&v| v as u64));
    line.push_str("],\"loss_mask\":[");
    push_numbers(&mut line, loss_mask.iter().map(|&v| v as u64));
    line.push_str("]}\n");
    out.write_all(line.as_bytes())
}

fn push_numbers(line: &mut String, values: impl Iterator<Item = u64>) {
    use std::fmt::Write as _;
    for (i, v) in values.enumerate() {
        if i > 0 {
            line.push(',');
        }
        let _ = write!(line, "{v}");
    }
}

/// What [`export_tokens`] wrote.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    pub rows: u64,
    pub loss_tokens: u64,
    /// Rows without any loss-masked token (`specforge train` skips them at min_loss_tokens ≥ 1).
    pub unsupervised: u64,
    pub conversations: Option<u64>,
}

/// Write `specforge.jsonl` into `out`.
pub fn export_tokens(build: &BuildDir, out: &Path) -> Result<Summary, ExportError> {
    std::fs::create_dir_all(out).map_err(|e| ExportError::io(out, e))?;
    let path = out.join("specforge.jsonl");
    let file = std::fs::File::create(&path).map_err(|e| ExportError::io(&path, e))?;
    let mut w = std::io::BufWriter::new(file);
    let mut summary = Summary::default();
    build.for_each::<_, ExportError>(|row| {
        write_token_line(&mut w, Some(row.id), row.input_ids, row.loss_mask)
            .map_err(|e| ExportError::io(&path, e))?;
        let masked = row.loss_mask.iter().filter(|&&m| m == 1).count() as u64;
        summary.rows += 1;
        summary.loss_tokens += masked;
        summary.unsupervised += (masked == 0) as u64;
        Ok(())
    })?;
    w.flush().map_err(|e| ExportError::io(&path, e))?;
    Ok(summary)
}

/// What [`export_conversations`] wrote.
#[derive(Debug, Clone, Default)]
pub struct ConversationSummary {
    pub written: u64,
    /// Samples the run has no successful record for.
    pub missing: u64,
    /// The first [`MAX_LISTED`] of them.
    pub missing_ids: Vec<String>,
    /// Samples whose record is not a chat request and answer (warned about on stderr).
    pub skipped: u64,
}

/// Missing sample ids listed by name; the rest are counted.
pub const MAX_LISTED: usize = 100;

/// Where, in the journal, the record a sample's conversation is made from is.
#[derive(Debug, Clone, Copy)]
struct Chosen {
    segment: usize,
    offset: u64,
    len: usize,
    /// The record's turn number (0 for a single-turn record).
    turn: usize,
}

/// A sample id as the lookups here key it (the build keeps the same 64-bit hash per sample).
fn id_key(id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut hasher);
    hasher.finish()
}

/// Write `conversations.jsonl`: for every sample of the build, in build order, the request's
/// messages followed by the answer as an assistant message, and the request's tools.
///
/// A sample's record is the one its ids were built from: its prompt id's first successful
/// record; for a multi-turn conversation the first successful record of its last turn (whose
/// request holds the earlier regenerated turns as history).
///
/// Streamed, so memory does not grow with the conversations: one pass over the build collects a
/// 64-bit key per sample, one pass over the journal (parsed a batch at a time on all cores)
/// notes where each sample's record is, and a second pass over the build reads each record back
/// from its place and writes its row — about 40 bytes per sample are held, no conversation.
pub fn export_conversations(
    build: &BuildDir,
    run: &Path,
    out: &Path,
) -> Result<ConversationSummary, ExportError> {
    let mut chosen: HashMap<u64, Option<Chosen>> = HashMap::new();
    build.for_each::<_, ExportError>(|row| {
        chosen.insert(id_key(row.id), None);
        Ok(())
    })?;
    let journal_dir = run.join(JOURNAL_DIR);
    if !journal_dir.is_dir() {
        return Err(ExportError::format(
            run,
            "no journal/ directory: is this a `draftgen generate` run directory?",
        ));
    }
    let mut lines =
        JournalLines::open(&journal_dir).map_err(|e| ExportError::io(&journal_dir, e))?;
    locate_records(&mut lines, &journal_dir, &mut chosen)?;
    write_conversations(build, &lines, &chosen, &out.join("conversations.jsonl"))
}

/// One pass over the journal: where each sample's record is (see [`export_conversations`]).
fn locate_records(
    lines: &mut JournalLines,
    journal_dir: &Path,
    chosen: &mut HashMap<u64, Option<Chosen>>,
) -> Result<(), ExportError> {
    // The id and status of every line; the bodies are skipped, not kept.
    #[derive(serde::Deserialize)]
    struct Head {
        id: String,
        status: Status,
    }
    loop {
        let batch = lines
            .next_batch(4096)
            .map_err(|e| ExportError::io(journal_dir, e))?;
        if batch.is_empty() {
            return Ok(());
        }
        let heads: Vec<Option<Head>> = batch
            .par_iter()
            .map(|raw| serde_json::from_slice::<Head>(&raw.bytes).ok())
            .collect();
        for (raw, head) in batch.iter().zip(heads) {
            let Some(head) = head else {
                eprintln!(
                    "warning: {}:{}: unreadable journal line skipped",
                    lines.segment_path(raw.segment).display(),
                    raw.line
                );
                continue;
            };
            if head.status != Status::Success {
                continue;
            }
            let (prompt, turn) = match parse_turn_id(&head.id) {
                Some((prompt, turn, _)) => (prompt, turn),
                None => (head.id.as_str(), 0),
            };
            let Some(slot) = chosen.get_mut(&id_key(prompt)) else {
                continue;
            };
            // First success wins (as in `build`); a later turn replaces an earlier one.
            if slot.is_none_or(|c| turn > c.turn) {
                *slot = Some(Chosen {
                    segment: raw.segment,
                    offset: raw.offset,
                    len: raw.bytes.len(),
                    turn,
                });
            }
        }
    }
}

/// The second pass over the build: each sample's record read back from its place, one
/// conversation row each, to `path`.
fn write_conversations(
    build: &BuildDir,
    lines: &JournalLines,
    chosen: &HashMap<u64, Option<Chosen>>,
    path: &Path,
) -> Result<ConversationSummary, ExportError> {
    let file = std::fs::File::create(path).map_err(|e| ExportError::io(path, e))?;
    let mut w = std::io::BufWriter::new(file);
    let mut segments: HashMap<usize, std::fs::File> = HashMap::new();
    let mut summary = ConversationSummary::default();
    let mut line = Vec::new();
    build.for_each::<_, ExportError>(|row| {
        let Some(at) = chosen.get(&id_key(row.id)).copied().flatten() else {
            summary.missing += 1;
            if summary.missing_ids.len() < MAX_LISTED {
                summary.missing_ids.push(row.id.to_string());
            }
            return Ok(());
        };
        let segment_path = lines.segment_path(at.segment);
        let file = match segments.entry(at.segment) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(
                std::fs::File::open(segment_path).map_err(|e| ExportError::io(segment_path, e))?,
            ),
        };
        line.resize(at.len, 0);
        read_at(file, &mut line, at.offset).map_err(|e| ExportError::io(segment_path, e))?;
        let location = || format!("{} at byte {}", segment_path.display(), at.offset);
        let record: Record = serde_json::from_slice(&line)
            .map_err(|e| ExportError::format(segment_path, format!("{}: {e}", location())))?;
        let prompt = parse_turn_id(&record.id).map_or(record.id.as_str(), |(p, _, _)| p);
        if prompt != row.id {
            return Err(ExportError::Invalid(format!(
                "{}: record {} read back for sample {} (the journal changed during the export?)",
                location(),
                record.id,
                row.id
            )));
        }
        let converted = match record.response.as_ref() {
            Some(response) => to_conversation(row.id, &record.request, response),
            None => Err("no response body".to_string()),
        };
        let conversation = match converted {
            Ok(conversation) => conversation,
            Err(message) => {
                eprintln!(
                    "warning: {}: record {}: {message}; skipped",
                    location(),
                    record.id
                );
                summary.skipped += 1;
                return Ok(());
            }
        };
        serde_json::to_writer(&mut w, &conversation)
            .map_err(|e| ExportError::io(path, e.into()))?;
        w.write_all(b"\n").map_err(|e| ExportError::io(path, e))?;
        summary.written += 1;
        Ok(())
    })?;
    w.flush().map_err(|e| ExportError::io(path, e))?;
    Ok(summary)
}

/// Fill `buf` from `file` at `offset`.
fn read_at(file: &mut std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// One SpecForge conversation row from a request and the server's answer.
fn to_conversation(
    id: &str,
    request: &serde_json::Value,
    response: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    use crate::completion::{Completion, ObjectArguments};
    use serde_json::{json, Map, Value};

    let messages = request["messages"]
        .as_array()
        .ok_or("the request has no messages array")?;
    let mut conversation: Vec<Value> = Vec::with_capacity(messages.len() + 1);
    for message in messages {
        let mut m = Map::new();
        m.insert("role".into(), message["role"].clone());
        m.insert(
            "content".into(),
            Value::String(text_of(&message["content"])),
        );
        let reasoning = message
            .get("reasoning_content")
            .or_else(|| message.get("reasoning"));
        if let Some(r) = reasoning.filter(|r| r.is_string()) {
            m.insert("reasoning_content".into(), r.clone());
        }
        for key in ["tool_calls", "tool_call_id", "name"] {
            if let Some(v) = message.get(key).filter(|v| !v.is_null()) {
                m.insert(key.into(), v.clone());
            }
        }
        conversation.push(Value::Object(m));
    }
    let completion = Completion::from_response(response).map_err(|e| e.to_string())?;
    conversation.push(completion.assistant_message(ObjectArguments::AsText));
    let mut row = Map::new();
    row.insert("id".into(), json!(id));
    row.insert("conversations".into(), Value::Array(conversation));
    // Every row carries `tools` (`[]` without): SpecForge's `safe_conversations_generator`
    // yields the column only for rows that have the key, and `datasets` then fails on a file
    // that mixes both (KeyError 'tools' — found on the demo's run, tests/export.rs).
    let tools = request
        .get("tools")
        .filter(|t| t.is_array())
        .cloned()
        .unwrap_or_else(|| json!([]));
    row.insert("tools".into(), tools);
    Ok(Value::Object(row))
}

/// A message's content as text: a string, or the text parts of a content array joined.
fn text_of(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .concat(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_conversation_row_keeps_reasoning_tool_calls_and_tools() {
        let request = json!({
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather?"}]}],
            "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        });
        let response = json!({"choices": [{"finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null, "reasoning": "Call it.",
            "tool_calls": [{"id": "functions.get_weather:0", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\":\"SF\"}"}}]}}]});
        let row = super::to_conversation("p1", &request, &response).unwrap();
        assert_eq!(
            row,
            json!({"id": "p1", "conversations": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "", "reasoning_content": "Call it.",
                 "tool_calls": [{"id": "functions.get_weather:0", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"SF\"}"}}]}],
                "tools": [{"type": "function", "function": {"name": "get_weather"}}]})
        );
    }
}
