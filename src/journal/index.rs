//! The scan that builds a [`ResumeState`] from a journal's segments on open.
//!
//! Scanning memory-maps a window of segments, splits them into newline-aligned chunks parsed in
//! parallel (rayon), numbers the lines and sums the totals in journal order, then partitions the
//! records by a hash of their id into the shards of src/journal/prompt_map.rs, each merged (in
//! journal order, so the latest record of a prompt wins) by one task into its own small hash
//! table. Memory is bounded by one window's parsed records plus the index itself.

use std::fs::{self, OpenOptions};
use std::path::Path;

use rayon::prelude::*;

use super::prompt_map::{id_hash, merge_shard, shard_of, FoundDuplicate, Pending, Update, SHARDS};
use super::resume::{add_to_totals, CorruptLine, Entry, LineLocation, ResumeState, TornTail};
use super::scan::{IndexLine, LineParser};
use super::segment::{list_segments, Segment};
use super::JournalError;

/// Segments mapped and parsed at once (at least one segment): bounds the parsed records held,
/// and the mapped pages resident at once (a 64 MiB segment, as `generate` cuts them, is a window
/// of its own; 256 MiB held 200 MB more for 100,000 answers and scanned them 0.03 s faster).
const WINDOW_BYTES: u64 = 64 * 1024 * 1024;

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
        let end = window_end(&sizes, first);
        let window = &segments[first..end];
        first = end;
        let maps: Vec<Option<memmap2::Mmap>> = window
            .par_iter()
            .map(|segment| map_segment(&segment.path))
            .collect::<Result<_, _>>()?;
        let buffers: Vec<&[u8]> = maps.iter().map(|m| m.as_deref().unwrap_or(&[])).collect();
        let per_segment = parse_window(&buffers);
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
        cut_torn_tail(&path, keep)?;
    }
    state.loaded_records = state.totals.records;
    state.loaded_totals = state.totals.clone();
    Ok(state)
}

/// The end (exclusive) of the window of segments starting at `first`: at least one segment, then
/// more while the window holds less than [`WINDOW_BYTES`].
fn window_end(sizes: &[u64], first: usize) -> usize {
    let mut end = first;
    let mut bytes = 0u64;
    while end < sizes.len() && (end == first || bytes < WINDOW_BYTES) {
        bytes += sizes[end];
        end += 1;
    }
    end
}

/// Parse a window's segments (their bytes, in order) in newline-aligned chunks, in parallel;
/// each segment's chunks, in order.
fn parse_window<'a>(buffers: &[&'a [u8]]) -> Vec<Vec<ParsedChunk<'a>>> {
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
    let mut parsed: Vec<(usize, ParsedChunk<'a>)> = tasks
        .par_iter()
        .map(|&(b, start, end)| (b, parse_chunk(buffers[b], start, end)))
        .collect();
    // Chunks are in segment order: peel each segment's chunks off the end.
    let mut per_segment: Vec<Vec<ParsedChunk<'a>>> = Vec::with_capacity(buffers.len());
    for b in (0..buffers.len()).rev() {
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
    per_segment
}

/// Cut the last segment at `keep` bytes (its torn tail), durably.
fn cut_torn_tail(path: &Path, keep: usize) -> Result<(), JournalError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(JournalError::io(path))?;
    file.set_len(keep as u64).map_err(JournalError::io(path))?;
    file.sync_all().map_err(JournalError::io(path))
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
    let tail_from = if is_last {
        torn_tail_start(&parsed, lines)
    } else {
        lines
    };
    let (keep_len, mut reasons) =
        queue_lines(segment, parsed, tail_from, complete_len, state, parts);
    if complete_len < bytes.len() {
        reasons.push(format!(
            "{} bytes without a final newline",
            bytes.len() - complete_len
        ));
    }
    let end = SegmentEnd {
        len: bytes.len(),
        complete_len,
        keep_len,
        lines,
        reasons,
    };
    let cut = end_of_segment(segment, end, is_last, repair, state);
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

/// The 0-based line from which the last segment's lines are all invalid (`lines` if its last
/// line is valid).
fn torn_tail_start(parsed: &[ParsedChunk<'_>], lines: u64) -> u64 {
    let mut tail_from = lines;
    for result in parsed.iter().rev().flat_map(|(r, _)| r.iter().rev()) {
        if result.is_ok() {
            break;
        }
        tail_from -= 1;
    }
    tail_from
}

/// Number the segment's parsed lines: each record is counted in the totals and queued in its
/// shard's partition, each invalid line before `tail_from` reported as corrupt. Returns how much
/// of the segment to keep (the start of the first invalid line of the tail) and why the tail goes.
fn queue_lines<'a>(
    segment: &Segment,
    parsed: Vec<ParsedChunk<'a>>,
    tail_from: u64,
    complete_len: usize,
    state: &mut ResumeState,
    parts: &mut [Vec<Pending<'a>>],
) -> (usize, Vec<String>) {
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
    (keep_len, tail_reasons)
}

/// How a segment ends: its length, up to its last newline, what to keep of it, its line count,
/// and why its tail goes.
struct SegmentEnd {
    len: usize,
    complete_len: usize,
    keep_len: usize,
    lines: u64,
    reasons: Vec<String>,
}

/// Report a segment's bad end: on the last segment a torn tail (returned: where to cut it), on a
/// sealed one a corrupt line.
fn end_of_segment(
    segment: &Segment,
    end: SegmentEnd,
    is_last: bool,
    repair: bool,
    state: &mut ResumeState,
) -> Option<usize> {
    if end.keep_len >= end.len {
        return None;
    }
    if !is_last {
        // Only the last segment is ever written to; a partial line here is damage, not a torn write.
        state.report.corrupt_lines.push(CorruptLine {
            location: LineLocation {
                segment: segment.path.clone(),
                line: end.lines + 1,
            },
            reason: format!(
                "{} bytes without a final newline at the end of a sealed segment",
                end.len - end.complete_len
            ),
        });
        return None;
    }
    let removed = (end.len - end.keep_len) as u64;
    tracing::warn!(
        segment = %segment.path.display(),
        removed_bytes = removed,
        repaired = repair,
        "torn tail at the end of the journal (an interrupted write): {}",
        end.reasons.join("; ")
    );
    state.report.torn_tail = Some(TornTail {
        segment: segment.path.clone(),
        kept_bytes: end.keep_len as u64,
        removed_bytes: removed,
        reason: end.reasons.join("; "),
    });
    Some(end.keep_len)
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
    use crate::api::ErrorClass;
    use crate::journal::Disposition;

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
