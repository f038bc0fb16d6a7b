//! `streams.zst`: the raw SSE chunks of each streamed answer, kept with `generate --keep-stream`
//! so chunk-level problems (empty deltas, ids changing mid-stream, a call's `index`) can be
//! audited after the run; the journal keeps the assembled answer as always.
//!
//! A side file, not a journal field: the chunks are several times the size of the answer, and
//! the resume scan and `build` read every journal line; keeping them out of the journal keeps
//! both as fast as without `--keep-stream`, and leaves the record layout alone. Each entry is
//! `{"id","attempt","chunks":[…]}` (the chunks as the server sent them, JSON kept verbatim),
//! compressed as one zstd frame and appended; concatenated frames are one valid zstd stream, so
//! `zstd -dc streams.zst` gives JSON lines. Entries are keyed by prompt id and attempt, the
//! journal record's own key. Written before the record is journaled and not fsynced (the
//! journal is the run's truth): a crash can lose the last entries or leave a torn last frame,
//! which [`read`] reports and skips.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The side file's name inside the run directory.
pub const STREAMS_FILE: &str = "streams.zst";

/// zstd's default level: chunks repeat their `id`, `model` and keys, so it compresses ~10x.
const LEVEL: i32 = 3;

/// One streamed answer's chunks.
#[derive(Debug, Serialize, Deserialize)]
pub struct StreamEntry {
    pub id: String,
    pub attempt: u32,
    /// Each SSE `data` payload, in order (`[DONE]` excluded).
    pub chunks: Vec<Box<RawValue>>,
}

/// Appends entries to a run's `streams.zst` (shared by every request task).
#[derive(Debug)]
pub struct StreamLog {
    file: Mutex<File>,
}

impl StreamLog {
    pub fn open(run_dir: &Path) -> std::io::Result<StreamLog> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(run_dir.join(STREAMS_FILE))?;
        Ok(StreamLog {
            file: Mutex::new(file),
        })
    }

    /// Append one answer's chunks (each must be JSON text, as the client checked it).
    pub fn append(&self, id: &str, attempt: u32, chunks: &[String]) -> std::io::Result<()> {
        let chunks = chunks
            .iter()
            .map(|c| RawValue::from_string(c.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(std::io::Error::other)?;
        let entry = StreamEntry {
            id: id.to_string(),
            attempt,
            chunks,
        };
        let mut line = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // Compressed outside the lock: only the append is serialized.
        let frame = zstd::bulk::compress(&line, LEVEL)?;
        let mut file = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("stream log lock poisoned"))?;
        file.write_all(&frame)
    }
}

/// What [`read`] found.
#[derive(Debug, Default)]
pub struct Streams {
    pub entries: Vec<StreamEntry>,
    /// Set when the file ends in a torn frame or a line that is not an entry (an interrupted
    /// run): what it says, the entries before it are all kept.
    pub torn: Option<String>,
}

/// Read every entry of `run_dir`'s `streams.zst` (none if the file does not exist).
pub fn read(run_dir: &Path) -> std::io::Result<Streams> {
    let path = run_dir.join(STREAMS_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Streams::default()),
        Err(e) => return Err(e),
    };
    let mut streams = Streams::default();
    let mut lines = BufReader::new(zstd::stream::read::Decoder::new(file)?).lines();
    loop {
        match lines.next() {
            None => break,
            Some(Err(e)) => {
                streams.torn = Some(format!("{}: {e}", path.display()));
                break;
            }
            Some(Ok(line)) => match serde_json::from_str::<StreamEntry>(&line) {
                Ok(entry) => streams.entries.push(entry),
                Err(e) => {
                    streams.torn = Some(format!("{}: not a stream entry: {e}", path.display()));
                    break;
                }
            },
        }
    }
    Ok(streams)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_verbatim_and_a_torn_tail_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let log = StreamLog::open(dir.path()).unwrap();
        let chunks = vec![
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#.to_string(),
            r#"{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}"#.to_string(),
        ];
        log.append("p1", 1, &chunks).unwrap();
        log.append("p2", 3, &chunks[..1]).unwrap();
        drop(log);
        let read_back = read(dir.path()).unwrap();
        assert!(read_back.torn.is_none());
        assert_eq!(read_back.entries.len(), 2);
        let got: Vec<&str> = read_back.entries[0]
            .chunks
            .iter()
            .map(|c| c.get())
            .collect();
        assert_eq!(got, chunks);
        assert_eq!(
            (
                read_back.entries[1].id.as_str(),
                read_back.entries[1].attempt
            ),
            ("p2", 3)
        );
        // A crash in the middle of a frame.
        let path = dir.path().join(STREAMS_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let whole = bytes.len();
        let log = StreamLog::open(dir.path()).unwrap();
        log.append("p3", 1, &chunks).unwrap();
        drop(log);
        bytes = std::fs::read(&path).unwrap();
        bytes.truncate(whole + (bytes.len() - whole) / 2);
        std::fs::write(&path, bytes).unwrap();
        let read_back = read(dir.path()).unwrap();
        assert_eq!(read_back.entries.len(), 2);
        assert!(read_back.torn.is_some());
    }
}
