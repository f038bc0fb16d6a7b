//! The journal's lines as raw bytes, in journal order, read in batches.
//!
//! [`RecordReader`](crate::journal::RecordReader) parses each line on the reading thread; `build`
//! wants the parse on the worker threads with the reconstruction, so it reads lines only (as do
//! the SpecForge conversation export, which keeps only where a line is, and verify's tool-call
//! audit, which parses successes only). The rules are the journal's: segments `NNNNNN.jsonl` in
//! number order, a torn last line (no final newline) is never a record.
//!
//! [`map_segment`] and [`line_chunks`] serve a pass that reads only a prefix of most lines (the
//! provider scan in `providers.rs`): the segment is mapped rather than copied out of the page
//! cache line by line, and cut into newline-aligned chunks that are scanned on all cores.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// One journal line (without its newline) and where it is.
pub struct RawLine {
    pub segment: usize,
    pub line: u64,
    /// Byte offset of the line in its segment (to read it again later, see `export`).
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// Batches of raw lines from every segment of a journal directory.
pub struct JournalLines {
    segments: Vec<PathBuf>,
    next_segment: usize,
    /// The open segment: its index, reader, lines read and bytes read.
    current: Option<(usize, BufReader<File>, u64, u64)>,
}

impl JournalLines {
    pub fn open(journal_dir: &Path) -> std::io::Result<JournalLines> {
        let mut segments: Vec<(u32, PathBuf)> = Vec::new();
        let entries = match std::fs::read_dir(journal_dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(JournalLines {
                    segments: Vec::new(),
                    next_segment: 0,
                    current: None,
                })
            }
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if let Ok(number) = stem.parse::<u32>() {
                segments.push((number, entry.path()));
            }
        }
        segments.sort();
        Ok(JournalLines {
            segments: segments.into_iter().map(|(_, p)| p).collect(),
            next_segment: 0,
            current: None,
        })
    }

    /// Every segment's path, in journal order.
    pub fn segment_paths(&self) -> &[PathBuf] {
        &self.segments
    }

    /// The path of segment `index` (for locations in messages).
    pub fn segment_path(&self, index: usize) -> &Path {
        &self.segments[index]
    }

    /// Up to `max` further lines; empty at the end of the journal.
    pub fn next_batch(&mut self, max: usize) -> std::io::Result<Vec<RawLine>> {
        let mut batch = Vec::with_capacity(max);
        while batch.len() < max {
            if self.current.is_none() {
                let Some(path) = self.segments.get(self.next_segment) else {
                    break;
                };
                let file = File::open(path)?;
                self.current = Some((
                    self.next_segment,
                    BufReader::with_capacity(1 << 20, file),
                    0,
                    0,
                ));
                self.next_segment += 1;
            }
            let Some((segment, reader, line_no, read)) = self.current.as_mut() else {
                break;
            };
            let mut bytes = Vec::new();
            let n = reader.read_until(b'\n', &mut bytes)?;
            let offset = *read;
            *read += n as u64;
            if n == 0 || bytes.last() != Some(&b'\n') {
                // End of the segment, or a torn tail.
                self.current = None;
                continue;
            }
            *line_no += 1;
            bytes.pop();
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            batch.push(RawLine {
                segment: *segment,
                line: *line_no,
                offset,
                bytes,
            });
        }
        Ok(batch)
    }
}

/// A segment read in blocks of whole lines, up to the length it had when opened (a run still
/// being written appends after it). Blocks, not a mapping of the whole file: a mapped segment's
/// pages stay in the process's resident memory once read (a 100,000-answer journal is 1.3 GB),
/// and a build's memory is bounded by its batch.
pub struct SegmentBlocks {
    file: File,
    /// Bytes of the segment not read yet.
    left: u64,
    /// Bytes read and not handed out yet (a partial line).
    buf: Vec<u8>,
    block: usize,
}

impl SegmentBlocks {
    pub fn open(path: &Path, block: usize) -> std::io::Result<SegmentBlocks> {
        let file = File::open(path)?;
        let left = file.metadata()?.len();
        Ok(SegmentBlocks {
            file,
            left,
            buf: Vec::new(),
            block: block.max(1),
        })
    }

    /// The next block of complete lines (newline-terminated, about `block` bytes; longer when
    /// one line is); `None` at the end. A torn tail (no final newline) is never handed out. The
    /// block is the caller's, so the next one can be read while it is scanned.
    pub fn next_block(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        use std::io::Read;
        let (mut searched, mut end) = (0, None);
        loop {
            let want = self.block.saturating_sub(self.buf.len());
            let take = want.max(self.block / 2).max(1).min(self.left as usize);
            if take > 0 {
                // Into the vector's spare room: no zero fill before the read.
                self.buf.reserve(take);
                let got = (&mut self.file)
                    .take(take as u64)
                    .read_to_end(&mut self.buf)?;
                if got < take {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                self.left -= take as u64;
            }
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[searched..]) {
                end = Some(searched + i + 1);
            }
            searched = self.buf.len();
            match end {
                Some(end) if self.buf.len() >= self.block || self.left == 0 => {
                    let rest = self.buf[end..].to_vec();
                    let mut block = std::mem::replace(&mut self.buf, rest);
                    block.truncate(end);
                    return Ok(Some(block));
                }
                None if self.left == 0 => return Ok(None),
                _ => {}
            }
        }
    }
}

/// The complete lines of a block of a segment (everything up to its last newline; a torn tail is
/// never a line) cut into chunks of about `bytes`, each ending on a newline.
pub fn line_chunks(segment: &[u8], bytes: usize) -> Vec<&[u8]> {
    let complete = memchr::memrchr(b'\n', segment).map_or(0, |i| i + 1);
    let mut rest = &segment[..complete];
    let mut chunks = Vec::new();
    while !rest.is_empty() {
        let cut = match rest.get(bytes.max(1)..) {
            Some(after) => {
                memchr::memchr(b'\n', after).map_or(rest.len(), |i| bytes.max(1) + i + 1)
            }
            None => rest.len(),
        };
        let (chunk, after) = rest.split_at(cut);
        chunks.push(chunk);
        rest = after;
    }
    chunks
}

/// The lines of a chunk from [`line_chunks`], without their newlines.
pub fn lines_of(chunk: &[u8]) -> impl Iterator<Item = &[u8]> {
    // memchr, not `split`: a closure split steps byte by byte through each 12 KB answer.
    let mut rest = Some(chunk.strip_suffix(b"\n").unwrap_or(chunk));
    std::iter::from_fn(move || {
        let text = rest?;
        match memchr::memchr(b'\n', text) {
            Some(i) => {
                rest = Some(&text[i + 1..]);
                Some(&text[..i])
            }
            None => {
                rest = None;
                Some(text)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_end_on_newlines_and_drop_a_torn_tail() {
        let segment = b"aaaa\nbb\n\ncccccc\ntorn";
        for size in [1, 3, 5, 100] {
            let chunks = line_chunks(segment, size);
            assert!(chunks.iter().all(|c| c.ends_with(b"\n")), "size {size}");
            let lines: Vec<&[u8]> = chunks.iter().flat_map(|c| lines_of(c)).collect();
            assert_eq!(lines, [&b"aaaa"[..], b"bb", b"", b"cccccc"], "size {size}");
        }
        assert!(line_chunks(b"no newline", 4).is_empty());
    }

    #[test]
    fn blocks_hold_whole_lines_and_never_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.jsonl");
        let long = "x".repeat(50);
        std::fs::write(&path, format!("aaaa\nbb\n{long}\n\ncccccc\ntorn")).unwrap();
        for block in [1, 3, 7, 16, 1000] {
            let mut blocks = SegmentBlocks::open(&path, block).unwrap();
            let mut lines: Vec<Vec<u8>> = Vec::new();
            while let Some(b) = blocks.next_block().unwrap() {
                assert!(b.ends_with(b"\n"), "block {block}");
                lines.extend(lines_of(&b).map(<[u8]>::to_vec));
            }
            let want: Vec<&[u8]> = vec![b"aaaa", b"bb", long.as_bytes(), b"", b"cccccc"];
            assert_eq!(lines, want, "block {block}");
        }
    }
}
