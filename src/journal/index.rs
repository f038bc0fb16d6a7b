//! [`ResumeState`]: what a journal says about every prompt — finished, or to retry — and what the
//! run has cost so far. Built on open by scanning all segments; kept current by the engine with
//! [`ResumeState::record`] as it appends.
//!
//! Scanning reads one segment at a time, splits it into newline-aligned chunks parsed in parallel
//! (rayon), then merges in journal order, so the latest record of a prompt wins. Memory is bounded
//! by one segment plus the index itself.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::scan::{IndexLine, LineParser};
use super::segment::{list_segments, Segment};
use super::{ErrorClass, JournalError, Record, RecordMeta, Status};

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
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The resume index of a run.
#[derive(Debug, Clone, Default)]
pub struct ResumeState {
    prompts: FxHashMap<String, PromptState>,
    /// Totals over every record, loaded and appended since.
    pub totals: RecordTotals,
    /// Records that were in the journal when it was opened.
    pub loaded_records: u64,
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
}

impl<'a> From<&'a IndexLine<'a>> for Entry<'a> {
    fn from(line: &'a IndexLine<'a>) -> Entry<'a> {
        Entry {
            id: &line.id,
            attempt: line.attempt,
            status: line.status,
            error_class: line.error_class,
            cost_usd: line.cost_usd,
            prompt_tokens: line.response.prompt_tokens,
            completion_tokens: line.response.completion_tokens,
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
        self.prompts.iter().map(|(id, state)| (id.as_str(), state))
    }

    /// Prompts whose latest record is a transient failure.
    pub fn to_retry(&self) -> impl Iterator<Item = &str> {
        self.prompts
            .iter()
            .filter(|(_, p)| !p.disposition().is_finished())
            .map(|(id, _)| id.as_str())
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
        let (prompt_tokens, completion_tokens) = response_usage(record.response.as_ref());
        self.ingest(
            Entry {
                id: &record.id,
                attempt: record.attempt,
                status: record.status,
                error_class: record.error_class,
                cost_usd: record.cost_usd,
                prompt_tokens,
                completion_tokens,
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
            },
            None,
        );
    }

    fn ingest(&mut self, entry: Entry<'_>, pos: Option<Pos>) {
        let totals = &mut self.totals;
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
        }
        totals.prompt_tokens += entry.prompt_tokens.unwrap_or(0);
        totals.completion_tokens += entry.completion_tokens.unwrap_or(0);

        let is_success = entry.status == Status::Success;
        let state = match self.prompts.get_mut(entry.id) {
            Some(state) => state,
            None => self
                .prompts
                .entry(entry.id.to_owned())
                .or_insert(PromptState {
                    attempts: 0,
                    last_attempt: 0,
                    last_status: entry.status,
                    last_error_class: entry.error_class,
                    succeeded: false,
                    success_at: None,
                }),
        };
        state.attempts += 1;
        state.last_attempt = state.last_attempt.max(entry.attempt);
        if state.succeeded {
            // Finished already: a later line changes the totals but not the outcome.
            if is_success {
                let first = state.success_at;
                let duplicate = DuplicateSuccess {
                    id: entry.id.to_owned(),
                    first: first.and_then(|p| self.location(p)),
                    duplicate: pos.and_then(|p| self.location(p)),
                };
                self.report.duplicate_successes.push(duplicate);
            }
            return;
        }
        state.last_status = entry.status;
        state.last_error_class = entry.error_class;
        if is_success {
            state.succeeded = true;
            state.success_at = pos;
        }
    }

    fn location(&self, (segment, line): Pos) -> Option<LineLocation> {
        self.segment_paths.get(&segment).map(|path| LineLocation {
            segment: path.clone(),
            line: u64::from(line),
        })
    }
}

/// `response.usage` token counts of a full record.
fn response_usage(response: Option<&serde_json::Value>) -> (Option<u64>, Option<u64>) {
    let usage = response.and_then(|r| r.get("usage"));
    let count = |key: &str| usage.and_then(|u| u.get(key)).and_then(|v| v.as_u64());
    (count("prompt_tokens"), count("completion_tokens"))
}

/// Segments read into memory at once (at least one segment).
const WINDOW_BYTES: u64 = 256 * 1024 * 1024;

/// Target size of a chunk parsed by one rayon task.
const CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// A problem line within a segment: byte offset of its start, 1-based line number, reason.
struct BadLine {
    offset: usize,
    line: u64,
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
    // Segments are read and parsed a window at a time: reads and parses run in parallel across
    // the window, memory stays bounded by the window, and the merge is in journal order.
    let mut rest = &segments[..];
    let total_bytes: u64 = segments
        .iter()
        .map(|s| fs::metadata(&s.path).map_or(0, |m| m.len()))
        .sum();
    let mut reserved = false;
    // Buffers are reused across windows: fresh 64 MB allocations would page-fault on every read.
    let mut buffers: Vec<Vec<u8>> = Vec::new();
    while !rest.is_empty() {
        let mut take = 0;
        let mut bytes = 0u64;
        while take < rest.len() && (take == 0 || bytes < WINDOW_BYTES) {
            bytes += fs::metadata(&rest[take].path).map_or(0, |m| m.len());
            take += 1;
        }
        let (window, tail) = rest.split_at(take);
        rest = tail;
        if buffers.len() < window.len() {
            buffers.resize_with(window.len(), Vec::new);
        }
        buffers[..window.len()]
            .par_iter_mut()
            .zip(window)
            .try_for_each(|(buffer, segment)| read_into(&segment.path, buffer))?;
        let buffers = &buffers[..window.len()];
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
            .map(|&(b, start, end)| (b, parse_chunk(&buffers[b], start, end)))
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
        for ((segment, bytes), chunks) in window.iter().zip(buffers).zip(per_segment) {
            let is_last = Some(segment.number) == last;
            finish_segment(segment, bytes, chunks, is_last, repair, &mut state)?;
        }
        // Size the index once from the first window's bytes per record: growing a table of a
        // million ids step by step rehashes and touches about twice the memory.
        if !reserved && !rest.is_empty() && state.report.bytes > 0 {
            reserved = true;
            let per_record = state.report.bytes / state.totals.records.max(1);
            let expected = total_bytes / per_record.max(1);
            let more = expected.saturating_sub(state.prompts.len() as u64);
            state.prompts.reserve(more.min(1 << 26) as usize);
        }
    }
    state.loaded_records = state.totals.records;
    Ok(state)
}

/// Replace `buffer`'s contents with the file at `path`, keeping its allocation.
fn read_into(path: &Path, buffer: &mut Vec<u8>) -> Result<(), JournalError> {
    use std::io::Read;
    buffer.clear();
    let mut file = fs::File::open(path).map_err(JournalError::io(path))?;
    let len = file.metadata().map_or(0, |m| m.len()) as usize;
    buffer.reserve(len);
    file.read_to_end(buffer).map_err(JournalError::io(path))?;
    Ok(())
}

/// The results of one chunk's lines, in order, and how many lines it had.
type ParsedChunk<'a> = (Vec<Result<IndexLine<'a>, BadLine>>, u64);

/// Merge one segment's parsed chunks into `state`, in order, and handle its tail.
fn finish_segment(
    segment: &Segment,
    bytes: &[u8],
    parsed: Vec<ParsedChunk<'_>>,
    is_last: bool,
    repair: bool,
    state: &mut ResumeState,
) -> Result<(), JournalError> {
    state.report.bytes += bytes.len() as u64;
    let complete_len = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);

    // Line numbers: prefix sums of per-chunk line counts.
    let mut results: Vec<(u64, Result<IndexLine<'_>, BadLine>)> = Vec::new();
    let mut base = 0u64;
    for (lines, count) in parsed {
        for (i, result) in lines.into_iter().enumerate() {
            let line_no = base + i as u64 + 1;
            let result = result.map_err(|mut bad| {
                bad.line = line_no;
                bad
            });
            results.push((line_no, result));
        }
        base += count;
    }

    // Trailing invalid lines of the last segment belong to the torn tail.
    let mut keep_len = complete_len;
    let mut tail_reasons = Vec::new();
    if complete_len < bytes.len() {
        tail_reasons.push(format!(
            "{} bytes without a final newline",
            bytes.len() - complete_len
        ));
    }
    if is_last {
        while let Some((_, Err(bad))) = results.last() {
            keep_len = bad.offset;
            tail_reasons.push(format!("invalid line {}: {}", bad.line, bad.reason));
            results.pop();
        }
    }

    for (line_no, result) in results {
        match result {
            Ok(line) => {
                let pos = u32::try_from(line_no).ok().map(|l| (segment.number, l));
                state.ingest(Entry::from(&line), pos)
            }
            Err(bad) => state.report.corrupt_lines.push(CorruptLine {
                location: LineLocation {
                    segment: segment.path.clone(),
                    line: bad.line,
                },
                reason: bad.reason,
            }),
        }
    }

    if keep_len < bytes.len() {
        if is_last && repair {
            let file = OpenOptions::new()
                .write(true)
                .open(&segment.path)
                .map_err(JournalError::io(&segment.path))?;
            file.set_len(keep_len as u64)
                .map_err(JournalError::io(&segment.path))?;
            file.sync_all().map_err(JournalError::io(&segment.path))?;
        }
        if is_last {
            tail_reasons.reverse();
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
        } else {
            // Only the last segment is ever written to; a partial line here is damage, not a torn write.
            state.report.corrupt_lines.push(CorruptLine {
                location: LineLocation {
                    segment: segment.path.clone(),
                    line: base + 1,
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
    Ok(())
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
                line: 0,
                reason: "empty line".to_string(),
            })
        } else {
            parser.parse(line).map_err(|e| BadLine {
                offset: line_start,
                line: 0,
                reason: e.to_string(),
            })
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
