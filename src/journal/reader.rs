//! [`RecordReader`]: every record of a journal as a full [`Record`], in journal order — for the
//! stages after `generate` (`build`, `verify`), which need request and response bodies.
//!
//! Reading never modifies the journal: a torn last line (no final newline) is skipped silently,
//! as on open; an invalid complete line is yielded as a [`CorruptLine`] for the caller to report.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::resume::{CorruptLine, LineLocation};
use super::segment::{list_segments, Segment};
use super::{JournalError, Record};

/// Iterator over the records of all segments.
pub struct RecordReader {
    segments: std::vec::IntoIter<Segment>,
    current: Option<(Segment, BufReader<File>, u64)>,
    line: Vec<u8>,
}

impl RecordReader {
    /// Read the segments under `journal_dir` (the `journal/` directory of a run).
    pub fn open(journal_dir: &Path) -> Result<RecordReader, JournalError> {
        Ok(RecordReader {
            segments: list_segments(journal_dir)?.into_iter(),
            current: None,
            line: Vec::with_capacity(8192),
        })
    }
}

impl Iterator for RecordReader {
    type Item = Result<(LineLocation, Result<Record, CorruptLine>), JournalError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                let segment = self.segments.next()?;
                let file = match File::open(&segment.path) {
                    Ok(file) => file,
                    Err(e) => return Some(Err(JournalError::io(&segment.path)(e))),
                };
                self.current = Some((segment, BufReader::with_capacity(1 << 20, file), 0));
            }
            let (segment, reader, line_no) = self.current.as_mut()?;
            self.line.clear();
            match reader.read_until(b'\n', &mut self.line) {
                Err(e) => return Some(Err(JournalError::io(&segment.path)(e))),
                // End of segment, or a torn tail without a newline: never a record.
                Ok(0) => {
                    self.current = None;
                    continue;
                }
                Ok(_) if self.line.last() != Some(&b'\n') => {
                    self.current = None;
                    continue;
                }
                Ok(_) => {
                    *line_no += 1;
                    let location = LineLocation {
                        segment: segment.path.clone(),
                        line: *line_no,
                    };
                    let body = &self.line[..self.line.len() - 1];
                    let record = crate::api::json_limits::parse_line::<Record>(body).map_err(|e| {
                        CorruptLine {
                            location: location.clone(),
                            reason: e.to_string(),
                        }
                    });
                    return Some(Ok((location, record)));
                }
            }
        }
    }
}
