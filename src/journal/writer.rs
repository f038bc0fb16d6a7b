//! [`Journal`]: the append-only writer of [`Record`]s.
//!
//! Durability rules, in order of what they protect against:
//! - **kill -9**: each record is serialized to one buffer and handed to the OS with a single
//!   `write` of the whole line, newline included, on a file opened with `O_APPEND`; nothing is
//!   buffered in the process. A killed process can therefore only leave a torn *last* line, which
//!   [`super::RunDir`] truncates on open. The newline is the commit marker: a line without one
//!   never counts.
//! - **power loss**: `fsync` is batched — every [`JournalOptions::sync_every_records`] records, when
//!   [`JournalOptions::sync_interval`] has passed (checked on append and by [`Journal::sync_if_due`]),
//!   on segment roll and on [`Journal::close`].
//! - **leaked secrets**: a configured secret found in a serialized line is replaced by
//!   `[REDACTED]` before the write, and counted (defense in depth; the engine never puts the key in
//!   a record to begin with).
//!
//! `append` is synchronous and fast (one `write` syscall, no fsync most of the time); call it from
//! a single writer (see [`super::JournalWriter`] for an async-friendly wrapper).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memchr::memmem;

use super::atomic::sync_dir;
use super::segment::segment_file_name;
use super::{EncodedRecord, JournalError, Record};

/// What replaces a secret found in a journal line.
pub const REDACTED: &str = "[REDACTED]";

/// Tuning of segment size and fsync batching.
#[derive(Debug, Clone)]
pub struct JournalOptions {
    /// Start a new segment once the current one would exceed this many bytes.
    pub segment_max_bytes: u64,
    /// fsync after this many unsynced records.
    pub sync_every_records: u32,
    /// fsync when the oldest unsynced record is older than this.
    pub sync_interval: Duration,
}

impl Default for JournalOptions {
    fn default() -> Self {
        JournalOptions {
            segment_max_bytes: 64 * 1024 * 1024,
            sync_every_records: 256,
            sync_interval: Duration::from_millis(1000),
        }
    }
}

/// Counters a writer keeps about its own session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Records appended by this writer.
    pub appended: u64,
    /// Bytes appended by this writer.
    pub bytes: u64,
    /// Secret occurrences replaced by `[REDACTED]`.
    pub redactions: u64,
    /// fsync calls made.
    pub syncs: u64,
}

/// The append-only writer. Obtain one from [`super::RunDir::create_or_open`].
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    options: JournalOptions,
    segment_number: u32,
    segment_path: PathBuf,
    file: File,
    segment_bytes: u64,
    unsynced: u32,
    oldest_unsynced: Option<Instant>,
    /// Secret byte patterns to redact: each secret raw and JSON-escaped.
    secrets: Vec<Vec<u8>>,
    line: Vec<u8>,
    /// Lines of an [`Journal::append_encoded`] batch not yet written.
    batch: Vec<u8>,
    batch_records: u32,
    stats: JournalStats,
    /// The run's one-writer lock, released with the journal.
    lock: Option<super::RunLock>,
}

impl Journal {
    /// Open segment `segment_number` in `dir` for appending (creating it if needed).
    pub(crate) fn open_segment(
        dir: &Path,
        segment_number: u32,
        options: JournalOptions,
    ) -> Result<Journal, JournalError> {
        let (file, path, bytes) = open_append(dir, segment_number)?;
        Ok(Journal {
            dir: dir.to_path_buf(),
            options,
            segment_number,
            segment_path: path,
            file,
            segment_bytes: bytes,
            unsynced: 0,
            oldest_unsynced: None,
            secrets: Vec::new(),
            line: Vec::with_capacity(4096),
            batch: Vec::new(),
            batch_records: 0,
            stats: JournalStats::default(),
            lock: None,
        })
    }

    /// Keep `lock` for as long as this journal lives.
    pub(crate) fn hold(&mut self, lock: super::RunLock) {
        self.lock = Some(lock);
    }

    /// Never let `secret` reach the journal: any occurrence in a line is replaced by `[REDACTED]`.
    /// Empty secrets are ignored.
    pub fn set_redact(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let raw = secret.as_bytes().to_vec();
        // The same secret as it appears inside a JSON string (quotes, backslashes, controls escaped).
        let quoted = serde_json::to_string(secret).unwrap_or_default();
        let escaped = quoted
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or_default()
            .as_bytes()
            .to_vec();
        for pattern in [raw, escaped] {
            if !pattern.is_empty() && !self.secrets.contains(&pattern) {
                self.secrets.push(pattern);
            }
        }
    }

    /// Append one record as one line. On return the line is in the OS page cache (survives the
    /// process being killed); it is on disk after the next sync.
    pub fn append(&mut self, record: &Record) -> Result<(), JournalError> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record).map_err(|source| {
            JournalError::Serialize {
                path: self.segment_path.clone(),
                id: record.id.clone(),
                source,
            }
        })?;
        self.redact_line();
        self.line.push(b'\n');

        let len = self.line.len() as u64;
        if self.segment_bytes > 0 && self.segment_bytes + len > self.options.segment_max_bytes {
            self.roll()?;
        }
        // One write of the whole line: a kill can tear only this line, never interleave two.
        if let Err(e) = self.file.write_all(&self.line) {
            // A partial line (disk full, I/O error) must not be glued to the next record: cut the
            // segment back to its last complete line before reporting the error.
            let _ = self.file.set_len(self.segment_bytes);
            return Err(JournalError::io(&self.segment_path)(e));
        }
        self.segment_bytes += len;
        self.stats.appended += 1;
        self.stats.bytes += len;
        self.unsynced += 1;
        self.oldest_unsynced.get_or_insert_with(Instant::now);
        if self.unsynced >= self.options.sync_every_records {
            self.sync()?;
        } else {
            self.sync_if_due()?;
        }
        Ok(())
    }

    /// Append records already serialized by [`super::RecordRef::encode`] (redacted like
    /// [`Journal::append`]). The lines go to the OS in as few `write`s as the segment size allows,
    /// rather than one per record: at thousands of records a second the syscalls add up, and the
    /// crash guarantee is unchanged — a write of several whole lines torn by a kill still leaves
    /// complete lines and at most one torn last line.
    pub fn append_encoded(&mut self, records: &[EncodedRecord]) -> Result<(), JournalError> {
        self.batch.clear();
        self.batch_records = 0;
        for record in records {
            // Copied (to be redacted) only when a secret is in it, which the engine never lets
            // happen: the common line goes straight into the batch.
            let clean = !self
                .secrets
                .iter()
                .any(|secret| memmem::find(record.line(), secret).is_some());
            if !clean {
                self.line.clear();
                self.line.extend_from_slice(record.line());
                self.redact_line();
            }
            let line = if clean { record.line() } else { &self.line };
            let len = line.len() as u64;
            let pending = self.segment_bytes + self.batch.len() as u64;
            if pending > 0 && pending + len > self.options.segment_max_bytes {
                self.write_batch()?;
                if self.segment_bytes > 0 {
                    self.roll()?;
                }
            }
            let line = if clean { record.line() } else { &self.line };
            self.batch.extend_from_slice(line);
            self.batch_records += 1;
        }
        self.write_batch()
    }

    fn write_batch(&mut self) -> Result<(), JournalError> {
        if self.batch_records == 0 {
            return Ok(());
        }
        self.file
            .write_all(&self.batch)
            .map_err(JournalError::io(&self.segment_path))?;
        let len = self.batch.len() as u64;
        self.segment_bytes += len;
        self.stats.appended += u64::from(self.batch_records);
        self.stats.bytes += len;
        self.unsynced += self.batch_records;
        self.batch.clear();
        self.batch_records = 0;
        self.oldest_unsynced.get_or_insert_with(Instant::now);
        if self.unsynced >= self.options.sync_every_records {
            self.sync()
        } else {
            self.sync_if_due()
        }
    }

    /// fsync if the oldest unsynced record is older than the configured interval. A writer loop
    /// calls this on a timer so an idle journal does not keep records only in the page cache.
    pub fn sync_if_due(&mut self) -> Result<(), JournalError> {
        match self.oldest_unsynced {
            Some(t) if t.elapsed() >= self.options.sync_interval => self.sync(),
            _ => Ok(()),
        }
    }

    /// fsync the current segment now.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        if self.unsynced == 0 {
            return Ok(());
        }
        self.file
            .sync_data()
            .map_err(JournalError::io(&self.segment_path))?;
        self.unsynced = 0;
        self.oldest_unsynced = None;
        self.stats.syncs += 1;
        Ok(())
    }

    /// Sync and close, returning this session's counters.
    pub fn close(mut self) -> Result<JournalStats, JournalError> {
        self.sync()?;
        Ok(self.stats)
    }

    /// This session's counters so far.
    pub fn stats(&self) -> JournalStats {
        self.stats
    }

    /// Segment size and fsync batching in effect.
    pub fn options(&self) -> &JournalOptions {
        &self.options
    }

    /// The segment currently appended to.
    pub fn current_segment(&self) -> &Path {
        &self.segment_path
    }

    fn roll(&mut self) -> Result<(), JournalError> {
        self.sync()?;
        let next = self.segment_number + 1;
        let (file, path, bytes) = open_append(&self.dir, next)?;
        sync_dir(&self.dir)?;
        self.file = file;
        self.segment_path = path;
        self.segment_number = next;
        self.segment_bytes = bytes;
        Ok(())
    }

    fn redact_line(&mut self) {
        for secret in &self.secrets {
            let finder = memmem::Finder::new(secret);
            let hits = finder.find_iter(&self.line).count();
            if hits == 0 {
                continue;
            }
            let mut out = Vec::with_capacity(self.line.len());
            let mut last = 0;
            for at in finder.find_iter(&self.line) {
                out.extend_from_slice(&self.line[last..at]);
                out.extend_from_slice(REDACTED.as_bytes());
                last = at + secret.len();
            }
            out.extend_from_slice(&self.line[last..]);
            self.line = out;
            self.stats.redactions += hits as u64;
            tracing::warn!(
                segment = %self.segment_path.display(),
                occurrences = hits,
                "a configured secret was found in a journal record and replaced by [REDACTED]"
            );
        }
    }
}

fn open_append(dir: &Path, number: u32) -> Result<(File, PathBuf, u64), JournalError> {
    let path = dir.join(segment_file_name(number));
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(JournalError::io(&path))?;
    let bytes = file.metadata().map_err(JournalError::io(&path))?.len();
    Ok((file, path, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{RecordRef, Status};

    fn encoded(id: &str, text: &str) -> EncodedRecord {
        let request = serde_json::value::to_raw_value(&serde_json::json!({"messages": text}))
            .expect("raw request");
        RecordRef {
            id,
            attempt: 1,
            status: Status::Success,
            error_class: None,
            error: None,
            endpoint: "e",
            request: &request,
            response: None,
            prompt_tokens: None,
            completion_tokens: None,
            http_status: Some(200),
            provider: None,
            cost_usd: None,
            started_at: "t",
            not_before_ms: None,
            latency_ms: 1,
            first_byte_ms: None,
            source: None,
            usage_flag: None,
        }
        .encode()
        .expect("encode")
    }

    #[test]
    fn encoded_batches_keep_order_redact_and_roll_segments() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = JournalOptions {
            segment_max_bytes: 300,
            ..JournalOptions::default()
        };
        let mut journal = Journal::open_segment(dir.path(), 1, options).expect("open");
        journal.set_redact("sk-secret");
        let records: Vec<EncodedRecord> = (0..6)
            .map(|i| encoded(&format!("p{i}"), "key sk-secret here"))
            .collect();
        journal.append_encoded(&records).expect("append");
        let stats = journal.close().expect("close");
        assert_eq!(stats.appended, 6);
        assert_eq!(stats.redactions, 6);

        let mut lines = Vec::new();
        for n in 1.. {
            let path = dir.path().join(segment_file_name(n));
            let Ok(text) = std::fs::read_to_string(&path) else {
                break;
            };
            assert!(
                text.len() <= 300 || text.lines().count() == 1,
                "segment {n} too big"
            );
            lines.extend(text.lines().map(str::to_string));
        }
        assert!(dir.path().join(segment_file_name(2)).exists(), "no roll");
        let ids: Vec<String> = lines
            .iter()
            .map(|l| {
                let r: Record = serde_json::from_str(l).expect("whole line");
                assert_eq!(r.request["messages"], "key [REDACTED] here");
                r.id
            })
            .collect();
        assert_eq!(ids, ["p0", "p1", "p2", "p3", "p4", "p5"]);
    }
}
