//! [`ResumeState`]: what a journal says about every prompt — finished, or to retry — and what the
//! run has cost so far, and what opening it found beyond the records ([`OpenReport`]). Built on
//! open by the scan in src/journal/index.rs; kept current by the engine with
//! [`ResumeState::record`] as it appends.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::prompt_map::{id_hash, shard_of, PromptMap, Update};
use super::prompt_map::{Pos, PromptState};
use super::scan::IndexLine;
use super::{Record, RecordMeta, Status};
use crate::api::ErrorClass;

/// A line of the journal: segment file and 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineLocation {
    pub segment: PathBuf,
    pub line: u64,
}

impl fmt::Display for LineLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.segment.display(), self.line)
    }
}

/// A line that is not a valid record. Skipped (its prompt is treated as if the line did not exist).
#[derive(Debug, Clone, PartialEq)]
pub struct CorruptLine {
    pub location: LineLocation,
    pub reason: String,
}

/// Bytes cut from the end of the last segment on open: a torn final write (no newline) and any
/// invalid lines right before it.
#[derive(Debug, Clone, PartialEq)]
pub struct TornTail {
    pub segment: PathBuf,
    /// The segment's length after truncation.
    pub kept_bytes: u64,
    pub removed_bytes: u64,
    /// What was removed, for the report (at most a short preview).
    pub reason: String,
}

/// A second success record for a prompt. The engine never writes one; if found, the first wins.
#[derive(Debug, Clone, PartialEq)]
pub struct DuplicateSuccess {
    pub id: String,
    pub first: Option<LineLocation>,
    pub duplicate: Option<LineLocation>,
}

/// What opening the journal found beyond the records themselves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenReport {
    pub segments: usize,
    pub bytes: u64,
    pub torn_tail: Option<TornTail>,
    pub corrupt_lines: Vec<CorruptLine>,
    pub duplicate_successes: Vec<DuplicateSuccess>,
}

/// Counts over records (attempts), not prompts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordTotals {
    pub records: u64,
    pub success: u64,
    pub failed: u64,
    pub skipped: u64,
    pub by_error_class: BTreeMap<ErrorClass, u64>,
    pub cost_usd: f64,
    /// Records with a `cost_usd` (the budget's cost per request over all sessions).
    pub costed_records: u64,
    /// The largest `cost_usd` of one record.
    pub max_record_cost_usd: f64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The resume index of a run.
#[derive(Debug, Clone, Default)]
pub struct ResumeState {
    pub(super) prompts: PromptMap,
    /// Totals over every record, loaded and appended since.
    pub totals: RecordTotals,
    /// Records that were in the journal when it was opened.
    pub loaded_records: u64,
    /// [`ResumeState::totals`] when the journal was opened: `totals` minus these is this session.
    pub loaded_totals: RecordTotals,
    pub report: OpenReport,
    pub(super) segment_paths: BTreeMap<u32, PathBuf>,
}

/// The fields of a record that the index keeps, whether parsed from a line or taken from a `Record`.
pub(super) struct Entry<'a> {
    id: &'a str,
    attempt: u32,
    status: Status,
    error_class: Option<ErrorClass>,
    cost_usd: Option<f64>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    not_before_ms: Option<u64>,
}

impl<'a> From<&'a IndexLine<'a>> for Entry<'a> {
    fn from(line: &'a IndexLine<'a>) -> Entry<'a> {
        let usage = line.usage();
        Entry {
            id: &line.id,
            attempt: line.attempt,
            status: line.status,
            error_class: line.error_class,
            cost_usd: line.cost_usd,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            not_before_ms: line.not_before_ms,
        }
    }
}

impl ResumeState {
    /// The state of one prompt, if the journal has any record of it.
    pub fn get(&self, id: &str) -> Option<&PromptState> {
        self.prompts.get(id)
    }

    /// Whether `id` needs no more attempts (succeeded, skipped, or failed permanently).
    pub fn is_finished(&self, id: &str) -> bool {
        self.prompts
            .get(id)
            .is_some_and(|p| p.disposition().is_finished())
    }

    /// Records written so far for `id`.
    pub fn attempts(&self, id: &str) -> u32 {
        self.prompts.get(id).map_or(0, |p| p.attempts)
    }

    /// The `attempt` number for the next try of `id` (1 for a new prompt).
    pub fn next_attempt(&self, id: &str) -> u32 {
        self.prompts.get(id).map_or(1, PromptState::next_attempt)
    }

    /// Every prompt with a record, and its state (in no particular order).
    pub fn prompts(&self) -> impl Iterator<Item = (&str, &PromptState)> {
        self.prompts.iter()
    }

    /// Prompts whose latest record is a transient failure.
    pub fn to_retry(&self) -> impl Iterator<Item = &str> {
        self.prompts
            .iter()
            .filter(|(_, p)| !p.disposition().is_finished())
            .map(|(id, _)| id)
    }

    /// Number of prompts with at least one record.
    pub fn prompt_count(&self) -> usize {
        self.prompts.len()
    }

    /// Records appended since the journal was opened (this session).
    pub fn session_records(&self) -> u64 {
        self.totals.records - self.loaded_records
    }

    /// Keep the index current with a record the engine has just appended.
    pub fn record(&mut self, record: &Record) {
        let (prompt_tokens, completion_tokens) =
            match (record.prompt_tokens, record.completion_tokens) {
                (Some(prompt), Some(completion)) => (Some(prompt), Some(completion)),
                _ => response_usage(record.response.as_ref()),
            };
        self.ingest(
            Entry {
                id: &record.id,
                attempt: record.attempt,
                status: record.status,
                error_class: record.error_class,
                cost_usd: record.cost_usd,
                prompt_tokens,
                completion_tokens,
                not_before_ms: record.not_before_ms,
            },
            None,
        );
    }

    /// [`ResumeState::record`] for a record the engine has already serialized.
    pub fn record_meta(&mut self, meta: &RecordMeta) {
        self.ingest(
            Entry {
                id: &meta.id,
                attempt: meta.attempt,
                status: meta.status,
                error_class: meta.error_class,
                cost_usd: meta.cost_usd,
                prompt_tokens: meta.prompt_tokens,
                completion_tokens: meta.completion_tokens,
                not_before_ms: meta.not_before_ms,
            },
            None,
        );
    }

    pub(super) fn ingest(&mut self, entry: Entry<'_>, pos: Option<Pos>) {
        add_to_totals(&mut self.totals, &entry);
        let update = Update {
            attempt: entry.attempt,
            status: entry.status,
            error_class: entry.error_class,
            not_before_ms: entry.not_before_ms,
            pos,
        };
        let hash = id_hash(entry.id);
        let shard = &mut self.prompts.shards[shard_of(hash)];
        let state = shard.upsert(entry.id, hash, update.initial());
        if let Some(first) = update.apply(state) {
            self.push_duplicate(entry.id.to_owned(), first, pos);
        }
    }

    pub(super) fn push_duplicate(
        &mut self,
        id: String,
        first: Option<Pos>,
        duplicate: Option<Pos>,
    ) {
        let duplicate = DuplicateSuccess {
            id,
            first: first.and_then(|p| self.location(p)),
            duplicate: duplicate.and_then(|p| self.location(p)),
        };
        self.report.duplicate_successes.push(duplicate);
    }

    fn location(&self, (segment, line): Pos) -> Option<LineLocation> {
        self.segment_paths.get(&segment).map(|path| LineLocation {
            segment: path.clone(),
            line: u64::from(line),
        })
    }
}

/// Count one record in the totals.
pub(super) fn add_to_totals(totals: &mut RecordTotals, entry: &Entry<'_>) {
    totals.records += 1;
    match entry.status {
        Status::Success => totals.success += 1,
        Status::Failed => totals.failed += 1,
        Status::Skipped => totals.skipped += 1,
    }
    if let Some(class) = entry.error_class {
        *totals.by_error_class.entry(class).or_default() += 1;
    }
    if let Some(cost) = entry.cost_usd.filter(|c| c.is_finite()) {
        totals.cost_usd += cost;
        totals.costed_records += 1;
        totals.max_record_cost_usd = totals.max_record_cost_usd.max(cost);
    }
    totals.prompt_tokens += entry.prompt_tokens.unwrap_or(0);
    totals.completion_tokens += entry.completion_tokens.unwrap_or(0);
}

/// `response.usage` token counts of a full record.
fn response_usage(response: Option<&serde_json::Value>) -> (Option<u64>, Option<u64>) {
    let usage = response.and_then(|r| r.get("usage"));
    let count = |key: &str| usage.and_then(|u| u.get(key)).and_then(|v| v.as_u64());
    (count("prompt_tokens"), count("completion_tokens"))
}
