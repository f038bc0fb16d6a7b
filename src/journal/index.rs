//! [`ResumeState`]: what a journal says about every prompt — finished, or to retry — and what the
//! run has cost so far. Built on open by scanning all segments; kept current by the engine with
//! [`ResumeState::record`] as it appends.
//!
//! Scanning memory-maps a window of segments, splits them into newline-aligned chunks parsed in
//! parallel (rayon), numbers the lines and sums the totals in journal order, then partitions the
//! records by a hash of their id into [`SHARDS`] shards, each merged (in journal order, so the
//! latest record of a prompt wins) by one task into its own small hash table. Memory is bounded by
//! one window's parsed records plus the index itself.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, OpenOptions};
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};

use hashbrown::hash_table::{Entry as TableEntry, HashTable};
use rayon::prelude::*;
use rustc_hash::FxBuildHasher;

use super::scan::{IndexLine, LineParser};
use super::segment::{list_segments, Segment};
use super::{JournalError, Record, RecordMeta, Status};
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

/// Where a prompt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Has a success record.
    Succeeded,
    /// Latest record is `skipped`.
    Skipped,
    /// Latest record failed with a permanent class (or none): do not retry.
    FailedPermanently(Option<ErrorClass>),
    /// Latest record failed with a transient class: retry (the engine caps attempts).
    Retry(ErrorClass),
}

impl Disposition {
    /// Whether the prompt needs no more attempts.
    pub fn is_finished(self) -> bool {
        !matches!(self, Disposition::Retry(_))
    }
}

/// Compact position of a line: (segment number, line number). A segment holds far fewer than
/// 2^32 lines, and the index keeps one of these per prompt, so it is kept small.
type Pos = (u32, u32);

/// Everything the journal says about one prompt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PromptState {
    /// Records (attempts) written for this prompt.
    pub attempts: u32,
    /// The highest `attempt` number seen.
    pub last_attempt: u32,
    pub last_status: Status,
    pub last_error_class: Option<ErrorClass>,
    /// The latest record's `not_before_ms` (a `Retry-After` that still holds on resume).
    pub not_before_ms: Option<u64>,
    succeeded: bool,
    /// Where the first success record is, when it was read from the journal.
    success_at: Option<Pos>,
}

impl PromptState {
    pub fn succeeded(&self) -> bool {
        self.succeeded
    }

    pub fn disposition(&self) -> Disposition {
        if self.succeeded() {
            return Disposition::Succeeded;
        }
        match (self.last_status, self.last_error_class) {
            (Status::Success, _) => Disposition::Succeeded,
            (Status::Skipped, _) => Disposition::Skipped,
            (Status::Failed, Some(class)) if class.is_transient() => Disposition::Retry(class),
            (Status::Failed, class) => Disposition::FailedPermanently(class),
        }
    }

    /// The `attempt` number the next try of this prompt should carry.
    pub fn next_attempt(&self) -> u32 {
        self.last_attempt.max(self.attempts) + 1
    }
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

/// Shards of the prompt map (a power of two). Partitioning the ids by hash lets the shards be
/// merged in parallel, and keeps each shard's table small enough to stay in cache while it is
/// built: one table of a million ids costs a cache miss per record.
const SHARDS: usize = 64;

/// One prompt in a shard: its id (a range of the shard's `ids`) and state. The hash is kept so a
/// growing table never rehashes the ids.
#[derive(Debug, Clone)]
struct Slot {
    hash: u64,
    start: usize,
    len: usize,
    state: PromptState,
}

/// Part of the prompt map: ids are stored back to back in one string instead of one allocation
/// each (a million small allocations, and frees, showed up in the resume profile).
#[derive(Debug, Clone, Default)]
struct Shard {
    ids: String,
    table: HashTable<Slot>,
}

impl Shard {
    fn id(&self, slot: &Slot) -> &str {
        &self.ids[slot.start..slot.start + slot.len]
    }

    fn get(&self, id: &str, hash: u64) -> Option<&PromptState> {
        self.table
            .find(hash, |s| s.hash == hash && self.id(s) == id)
            .map(|s| &s.state)
    }

    /// The state of `id`, inserted as `new` if absent.
    fn upsert(&mut self, id: &str, hash: u64, new: PromptState) -> &mut PromptState {
        let ids = &self.ids;
        let entry = self.table.entry(
            hash,
            |s| s.hash == hash && &ids[s.start..s.start + s.len] == id,
            |s| s.hash,
        );
        match entry {
            TableEntry::Occupied(slot) => &mut slot.into_mut().state,
            TableEntry::Vacant(slot) => {
                let start = self.ids.len();
                self.ids.push_str(id);
                let slot = slot.insert(Slot {
                    hash,
                    start,
                    len: id.len(),
                    state: new,
                });
                &mut slot.into_mut().state
            }
        }
    }
}

/// Prompt id → state, sharded by id hash (see [`SHARDS`]).
#[derive(Debug, Clone)]
struct PromptMap {
    shards: Vec<Shard>,
}

impl Default for PromptMap {
    fn default() -> Self {
        PromptMap {
            shards: vec![Shard::default(); SHARDS],
        }
    }
}

fn id_hash(id: &str) -> u64 {
    FxBuildHasher.hash_one(id)
}

/// The shard of a hash: bits the tables do not use (they index with the low bits and tag with
/// the top seven), so ids within a shard still spread over its table.
fn shard_of(hash: u64) -> usize {
    (hash >> 32) as usize & (SHARDS - 1)
}

impl PromptMap {
    fn get(&self, id: &str) -> Option<&PromptState> {
        let hash = id_hash(id);
        self.shards[shard_of(hash)].get(id, hash)
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &PromptState)> {
        self.shards
            .iter()
            .flat_map(|shard| shard.table.iter().map(move |s| (shard.id(s), &s.state)))
    }

    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.table.len()).sum()
    }

    /// Room for `additional` more ids, spread over the shards (with some slack for unevenness).
    fn reserve(&mut self, additional: usize) {
        let per_shard = additional / SHARDS + additional / SHARDS / 8;
        for shard in &mut self.shards {
            shard.table.reserve(per_shard, |s| s.hash);
        }
    }
}

/// What one record changes in its prompt's state.
struct Update {
    attempt: u32,
    status: Status,
    error_class: Option<ErrorClass>,
    not_before_ms: Option<u64>,
    pos: Option<Pos>,
}

impl Update {
    /// The state of a prompt before its first record.
    fn initial(&self) -> PromptState {
        PromptState {
            attempts: 0,
            last_attempt: 0,
            last_status: self.status,
            last_error_class: self.error_class,
            not_before_ms: None,
            succeeded: false,
            success_at: None,
        }
    }

    /// Apply to `state`. Returns where the first success is (if known) when this record is a
    /// second success, which is reported and otherwise ignored.
    fn apply(&self, state: &mut PromptState) -> Option<Option<Pos>> {
        state.attempts += 1;
        state.last_attempt = state.last_attempt.max(self.attempt);
        let is_success = self.status == Status::Success;
        if state.succeeded {
            // Finished already: a later line changes the totals but not the outcome.
            return is_success.then_some(state.success_at);
        }
        state.last_status = self.status;
        state.last_error_class = self.error_class;
        state.not_before_ms = self.not_before_ms;
        if is_success {
            state.succeeded = true;
            state.success_at = self.pos;
        }
        None
    }
}

/// A record read from the journal, waiting in its shard's partition to be merged.
struct Pending<'a> {
    id: Cow<'a, str>,
    hash: u64,
    update: Update,
}

/// A second success found while merging a shard: id, first success, this one.
type FoundDuplicate<'a> = (Cow<'a, str>, Option<Pos>, Option<Pos>);

/// Merge one shard's pending records, in journal order.
fn merge_shard<'a>(shard: &mut Shard, pending: &mut Vec<Pending<'a>>) -> Vec<FoundDuplicate<'a>> {
    let mut duplicates = Vec::new();
    for p in pending.drain(..) {
        let state = shard.upsert(&p.id, p.hash, p.update.initial());
        if let Some(first) = p.update.apply(state) {
            duplicates.push((p.id, first, p.update.pos));
        }
    }
    duplicates
}

/// The resume index of a run.
#[derive(Debug, Clone, Default)]
pub struct ResumeState {
    prompts: PromptMap,
    /// Totals over every record, loaded and appended since.
    pub totals: RecordTotals,
    /// Records that were in the journal when it was opened.
    pub loaded_records: u64,
    /// [`ResumeState::totals`] when the journal was opened: `totals` minus these is this session.
    pub loaded_totals: RecordTotals,
    pub report: OpenReport,
    segment_paths: BTreeMap<u32, PathBuf>,
}

/// The fields of a record that the index keeps, whether parsed from a line or taken from a `Record`.
struct Entry<'a> {
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

    fn ingest(&mut self, entry: Entry<'_>, pos: Option<Pos>) {
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

    fn push_duplicate(&mut self, id: String, first: Option<Pos>, duplicate: Option<Pos>) {
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
fn add_to_totals(totals: &mut RecordTotals, entry: &Entry<'_>) {
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

/// Segments mapped and parsed at once (at least one segment): bounds the parsed records held.
const WINDOW_BYTES: u64 = 256 * 1024 * 1024;

/// Target size of a chunk parsed by one rayon task.
const CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// A problem line within a segment: byte offset of its start, reason.
struct BadLine {
    offset: usize,
    reason: String,
}

/// Scan every segment under `journal_dir` into a [`ResumeState`]. With `repair`, a torn tail of the
/// last segment (bytes after its last newline, and invalid lines right before them) is truncated
/// so the next append starts on a clean line; without it, the tail is only reported.
pub fn build_index(journal_dir: &Path, repair: bool) -> Result<ResumeState, JournalError> {
    let segments = list_segments(journal_dir)?;
    let mut state = ResumeState::default();
    state.report.segments = segments.len();
    for segment in &segments {
        state
            .segment_paths
            .insert(segment.number, segment.path.clone());
    }
    let last = segments.last().map(|s| s.number);
    let sizes: Vec<u64> = segments
        .iter()
        .map(|s| fs::metadata(&s.path).map_or(0, |m| m.len()))
        .collect();
    let total_bytes: u64 = sizes.iter().sum();
    let mut reserved = false;
    // Where to cut the last segment's torn tail; done after its mapping is gone.
    let mut cut_at = None;
    // Segments are mapped and parsed a window at a time: parses run in parallel across the
    // window, memory stays bounded by the window, and the merge is in journal order.
    let mut first = 0;
    while first < segments.len() {
        let mut end = first;
        let mut bytes = 0u64;
        while end < segments.len() && (end == first || bytes < WINDOW_BYTES) {
            bytes += sizes[end];
            end += 1;
        }
        let window = &segments[first..end];
        first = end;
        let maps: Vec<Option<memmap2::Mmap>> = window
            .par_iter()
            .map(|segment| map_segment(&segment.path))
            .collect::<Result<_, _>>()?;
        let buffers: Vec<&[u8]> = maps.iter().map(|m| m.as_deref().unwrap_or(&[])).collect();
        // Complete lines end at the last newline; anything after it is a torn write.
        let tasks: Vec<(usize, usize, usize)> = buffers
            .iter()
            .enumerate()
            .flat_map(|(b, bytes)| {
                let complete = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);
                split_chunks(&bytes[..complete])
                    .into_iter()
                    .map(move |(start, end)| (b, start, end))
            })
            .collect();
        let mut parsed: Vec<(usize, ParsedChunk<'_>)> = tasks
            .par_iter()
            .map(|&(b, start, end)| (b, parse_chunk(buffers[b], start, end)))
            .collect();
        // Chunks are in segment order: peel each segment's chunks off the end.
        let mut per_segment: Vec<Vec<ParsedChunk<'_>>> = Vec::with_capacity(window.len());
        for b in (0..window.len()).rev() {
            let split = parsed.partition_point(|(owner, _)| *owner < b);
            per_segment.push(
                parsed
                    .split_off(split)
                    .into_iter()
                    .map(|(_, c)| c)
                    .collect(),
            );
        }
        per_segment.reverse();
        let mut parts: Vec<Vec<Pending<'_>>> = (0..SHARDS).map(|_| Vec::new()).collect();
        for ((segment, bytes), chunks) in window.iter().zip(&buffers).zip(per_segment) {
            let is_last = Some(segment.number) == last;
            if let Some(keep) = finish_segment(
                segment, bytes, chunks, is_last, repair, &mut state, &mut parts,
            ) {
                cut_at = Some((segment.path.clone(), keep));
            }
        }
        // Size the index once from the first window's bytes per record: growing tables of a
        // million ids step by step rehashes and touches about twice the memory.
        if !reserved && state.report.bytes > 0 {
            reserved = true;
            let per_record = state.report.bytes / state.totals.records.max(1);
            let expected = total_bytes / per_record.max(1);
            state.prompts.reserve(expected.min(1 << 26) as usize);
        }
        merge_window(&mut state, &mut parts);
    }
    if let (Some((path, keep)), true) = (cut_at, repair) {
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(JournalError::io(&path))?;
        file.set_len(keep as u64).map_err(JournalError::io(&path))?;
        file.sync_all().map_err(JournalError::io(&path))?;
    }
    state.loaded_records = state.totals.records;
    state.loaded_totals = state.totals.clone();
    Ok(state)
}

/// Map the segment at `path` read-only, as long as it is now (`None` when empty: there is nothing
/// to map). Mapping instead of reading saves copying the whole journal out of the page cache,
/// which cost as much CPU as `wc -l` spends in total.
fn map_segment(path: &Path) -> Result<Option<memmap2::Mmap>, JournalError> {
    let file = fs::File::open(path).map_err(JournalError::io(path))?;
    let len = file.metadata().map_err(JournalError::io(path))?.len();
    if len == 0 {
        return Ok(None);
    }
    let len = usize::try_from(len)
        .map_err(|_| JournalError::io(path)(std::io::Error::other("segment too large to map")))?;
    // SAFETY: the mapping must not change while its bytes are borrowed. Segments are append-only:
    // the journal writer only ever appends past the end, and the map covers only the length the
    // file has now, so appends do not touch it. The one change to existing bytes, cutting a torn
    // tail, is made by `build_index` after the mappings are dropped. Two processes writing the
    // same run at once is not supported (their lines would interleave), so no one else truncates.
    let map = unsafe {
        memmap2::MmapOptions::new()
            .len(len)
            // Fault the pages in with the mapping (one call) rather than one fault per 4 KiB.
            .populate()
            .map(&file)
    }
    .map_err(JournalError::io(path))?;
    Ok(Some(map))
}

/// Merge a window's pending records into the prompt map, one task per shard, and report second
/// successes in journal order (as a sequential merge would).
fn merge_window<'a>(state: &mut ResumeState, parts: &mut [Vec<Pending<'a>>]) {
    let found: Vec<Vec<FoundDuplicate<'a>>> = state
        .prompts
        .shards
        .par_iter_mut()
        .zip(parts.par_iter_mut())
        .map(|(shard, pending)| merge_shard(shard, pending))
        .collect();
    let mut found: Vec<FoundDuplicate<'a>> = found.into_iter().flatten().collect();
    found.sort_by_key(|(_, _, at)| *at);
    for (id, first, at) in found {
        state.push_duplicate(id.into_owned(), first, at);
    }
}

/// The results of one chunk's lines, in order (records with their id's hash), and how many lines
/// it had.
type ParsedChunk<'a> = (Vec<Result<(u64, IndexLine<'a>), BadLine>>, u64);

/// Number one segment's parsed lines, count them in the totals and queue each record in its
/// shard's partition (in journal order), and handle the segment's tail. Returns where to cut the
/// last segment when it has a torn tail.
fn finish_segment<'a>(
    segment: &Segment,
    bytes: &[u8],
    parsed: Vec<ParsedChunk<'a>>,
    is_last: bool,
    repair: bool,
    state: &mut ResumeState,
    parts: &mut [Vec<Pending<'a>>],
) -> Option<usize> {
    state.report.bytes += bytes.len() as u64;
    let complete_len = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);
    let lines: u64 = parsed.iter().map(|(_, count)| count).sum();

    // Trailing invalid lines of the last segment belong to the torn tail: lines from `tail_from`
    // (0-based) on.
    let mut tail_from = lines;
    if is_last {
        for result in parsed.iter().rev().flat_map(|(r, _)| r.iter().rev()) {
            if result.is_ok() {
                break;
            }
            tail_from -= 1;
        }
    }
    let mut keep_len = complete_len;
    let mut tail_reasons = Vec::new();

    let mut index = 0u64;
    for (results, _) in parsed {
        for result in results {
            let line_no = index + 1;
            match result {
                Ok((hash, line)) => {
                    add_to_totals(&mut state.totals, &Entry::from(&line));
                    let pos = u32::try_from(line_no).ok().map(|l| (segment.number, l));
                    parts[shard_of(hash)].push(Pending {
                        update: Update {
                            attempt: line.attempt,
                            status: line.status,
                            error_class: line.error_class,
                            not_before_ms: line.not_before_ms,
                            pos,
                        },
                        id: line.id,
                        hash,
                    });
                }
                Err(bad) if index >= tail_from => {
                    keep_len = keep_len.min(bad.offset);
                    tail_reasons.push(format!("invalid line {line_no}: {}", bad.reason));
                }
                Err(bad) => state.report.corrupt_lines.push(CorruptLine {
                    location: LineLocation {
                        segment: segment.path.clone(),
                        line: line_no,
                    },
                    reason: bad.reason,
                }),
            }
            index += 1;
        }
    }
    if complete_len < bytes.len() {
        tail_reasons.push(format!(
            "{} bytes without a final newline",
            bytes.len() - complete_len
        ));
    }

    let mut cut = None;
    if keep_len < bytes.len() {
        if is_last {
            let removed = (bytes.len() - keep_len) as u64;
            tracing::warn!(
                segment = %segment.path.display(),
                removed_bytes = removed,
                repaired = repair,
                "torn tail at the end of the journal (an interrupted write): {}",
                tail_reasons.join("; ")
            );
            state.report.torn_tail = Some(TornTail {
                segment: segment.path.clone(),
                kept_bytes: keep_len as u64,
                removed_bytes: removed,
                reason: tail_reasons.join("; "),
            });
            cut = Some(keep_len);
        } else {
            // Only the last segment is ever written to; a partial line here is damage, not a torn write.
            state.report.corrupt_lines.push(CorruptLine {
                location: LineLocation {
                    segment: segment.path.clone(),
                    line: lines + 1,
                },
                reason: format!(
                    "{} bytes without a final newline at the end of a sealed segment",
                    bytes.len() - complete_len
                ),
            });
        }
    }
    for corrupt in &state.report.corrupt_lines {
        if corrupt.location.segment == segment.path {
            tracing::warn!(
                "corrupt journal line {}: {} (skipped)",
                corrupt.location,
                corrupt.reason
            );
        }
    }
    cut
}

/// Split `bytes` (ending in a newline, or empty) into newline-aligned ranges of about [`CHUNK_BYTES`].
fn split_chunks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let target = (start + CHUNK_BYTES).min(bytes.len());
        let end = if target >= bytes.len() {
            bytes.len()
        } else {
            memchr::memchr(b'\n', &bytes[target - 1..]).map_or(bytes.len(), |i| target - 1 + i + 1)
        };
        chunks.push((start, end));
        start = end;
    }
    chunks
}

/// Parse the lines of `bytes[start..end]` (each ending in a newline).
fn parse_chunk(bytes: &[u8], start: usize, end: usize) -> ParsedChunk<'_> {
    let mut out = Vec::new();
    let mut parser = LineParser::new();
    let mut line_start = start;
    for nl in memchr::memchr_iter(b'\n', &bytes[start..end]) {
        let line_end = start + nl;
        let line = &bytes[line_start..line_end];
        let result = if line.iter().all(u8::is_ascii_whitespace) {
            Err(BadLine {
                offset: line_start,
                reason: "empty line".to_string(),
            })
        } else {
            match parser.parse(line) {
                // Hashed here, in parallel, rather than in the sequential partitioning.
                Ok(parsed) => Ok((id_hash(&parsed.id), parsed)),
                Err(e) => Err(BadLine {
                    offset: line_start,
                    reason: e.to_string(),
                }),
            }
        };
        out.push(result);
        line_start = line_end + 1;
    }
    let count = out.len() as u64;
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_everything_on_line_boundaries() {
        let mut bytes = Vec::new();
        for i in 0..200_000 {
            bytes.extend_from_slice(format!("line {i} {}\n", "x".repeat(i % 97)).as_bytes());
        }
        let chunks = split_chunks(&bytes);
        assert!(chunks.len() > 1);
        assert_eq!(chunks[0].0, 0);
        assert_eq!(chunks.last().unwrap().1, bytes.len());
        for pair in chunks.windows(2) {
            assert_eq!(pair[0].1, pair[1].0);
            assert_eq!(bytes[pair[0].1 - 1], b'\n');
        }
        assert!(split_chunks(b"").is_empty());
    }

    fn state_of(lines: &[&str]) -> ResumeState {
        use super::super::scan::parse_line;
        let mut state = ResumeState::default();
        for line in lines {
            let parsed = parse_line(line.as_bytes()).unwrap();
            state.ingest(Entry::from(&parsed), None);
        }
        state
    }

    #[test]
    fn latest_record_wins_until_success() {
        let state = state_of(&[
            r#"{"id":"a","attempt":1,"status":"failed","error_class":"rate_limited"}"#,
            r#"{"id":"a","attempt":2,"status":"success","cost_usd":0.5}"#,
            r#"{"id":"a","attempt":3,"status":"failed","error_class":"server_error"}"#,
            r#"{"id":"b","attempt":1,"status":"failed","error_class":"timeout"}"#,
            r#"{"id":"c","attempt":1,"status":"failed","error_class":"bad_request"}"#,
            r#"{"id":"d","attempt":1,"status":"skipped"}"#,
            r#"{"id":"e","attempt":1,"status":"failed","error_class":"forbidden"}"#,
            r#"{"id":"e","attempt":2,"status":"failed","error_class":"network"}"#,
        ]);
        let d = |id| state.get(id).unwrap().disposition();
        assert_eq!(d("a"), Disposition::Succeeded);
        assert_eq!(d("b"), Disposition::Retry(ErrorClass::Timeout));
        assert_eq!(
            d("c"),
            Disposition::FailedPermanently(Some(ErrorClass::BadRequest))
        );
        assert_eq!(d("d"), Disposition::Skipped);
        assert_eq!(d("e"), Disposition::Retry(ErrorClass::Network));
        assert_eq!(state.attempts("a"), 3);
        assert_eq!(state.next_attempt("a"), 4);
        assert_eq!(state.next_attempt("new"), 1);
        let mut retry: Vec<_> = state.to_retry().collect();
        retry.sort();
        assert_eq!(retry, vec!["b", "e"]);
        assert_eq!(state.totals.records, 8);
        assert_eq!(state.totals.cost_usd, 0.5);
    }

    #[test]
    fn duplicate_success_is_reported_and_the_first_kept() {
        let state = state_of(&[
            r#"{"id":"a","attempt":1,"status":"success"}"#,
            r#"{"id":"a","attempt":2,"status":"success"}"#,
        ]);
        assert_eq!(state.report.duplicate_successes.len(), 1);
        assert_eq!(state.report.duplicate_successes[0].id, "a");
        assert_eq!(
            state.get("a").unwrap().disposition(),
            Disposition::Succeeded
        );
    }
}
