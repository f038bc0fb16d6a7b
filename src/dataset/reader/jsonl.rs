//! JSON Lines: one record per line, read line by line with a cap on line length, so a 10 GB
//! file (or one absurd line) never sits in memory.

use std::io::{self, BufRead};
use std::ops::ControlFlow;

use super::RawRecord;
use crate::dataset::error::{Location, Position};

pub(super) fn read<R: BufRead>(
    mut reader: R,
    shown: &str,
    max_line_bytes: usize,
    sink: &mut dyn FnMut(RawRecord) -> ControlFlow<()>,
) -> io::Result<()> {
    let mut line = Vec::new();
    let mut line_no = 0u64;
    let mut any_record = false;
    loop {
        line.clear();
        let Some(len) = read_line_capped(&mut reader, &mut line, max_line_bytes)? else {
            break;
        };
        line_no += 1;
        let location = Location::new(shown, Position::Line(line_no));
        let record = if len > max_line_bytes {
            RawRecord::bad(
                location,
                format!(
                    "line is {len} bytes, over the {max_line_bytes}-byte limit \
                     (raise --max-line-bytes to read it)"
                ),
            )
        } else {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // A UTF-8 byte order mark (Windows editors) is not part of the first record.
            let body = match line.strip_prefix(b"\xef\xbb\xbf") {
                Some(rest) if line_no == 1 => rest,
                _ => &line[..],
            };
            parse_line(location, body)
        };
        any_record = true;
        if sink(record).is_break() {
            return Ok(());
        }
    }
    if !any_record {
        let _ = sink(RawRecord::bad(
            Location::new(shown, Position::File),
            "file has no records (only blank lines)",
        ));
    }
    Ok(())
}

fn parse_line(location: Location, line: &[u8]) -> RawRecord {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return RawRecord::bad(
                location,
                format!("invalid UTF-8 at byte {} of the line", e.valid_up_to()),
            )
        }
    };
    match serde_json::from_str(text) {
        Ok(value) => RawRecord::ok(location, value),
        Err(e) => {
            // serde_json says "at line 1 column N"; within one line only the column matters.
            let message = e.to_string();
            let what = message.split(" at line ").next().unwrap_or(&message);
            RawRecord::bad(
                location,
                format!("broken JSON: {what} at column {}", e.column()),
            )
        }
    }
}

/// Read one line (without its `\n`) into `line`, keeping at most `max + 1` bytes of it.
/// Returns the line's full length, or `None` at end of input.
fn read_line_capped<R: BufRead>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<usize>> {
    let mut len = 0usize;
    let mut saw_any = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(saw_any.then_some(len));
        }
        saw_any = true;
        let (chunk, found, used) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], true, i + 1),
            None => (buf, false, buf.len()),
        };
        let room = (max + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        len += chunk.len();
        reader.consume(used);
        if found {
            return Ok(Some(len));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], max: usize) -> Vec<RawRecord> {
        let mut out = Vec::new();
        read(input, "t.jsonl", max, &mut |r| {
            out.push(r);
            ControlFlow::Continue(())
        })
        .unwrap();
        out
    }

    #[test]
    fn lines_are_numbered_and_blank_lines_skipped() {
        let records = collect(b"\xef\xbb\xbf{\"a\":1}\r\n\n{\"a\":\n[1]\n", 1 << 20);
        let shown: Vec<String> = records
            .iter()
            .map(|r| match &r.value {
                Ok(v) => format!("{} ok {v}", r.location),
                Err(m) => format!("{m}"),
            })
            .collect();
        assert_eq!(shown[0], "t.jsonl:1 ok {\"a\":1}");
        assert!(
            shown[1].starts_with("t.jsonl:3: broken JSON"),
            "{}",
            shown[1]
        );
        assert_eq!(shown[2], "t.jsonl:4 ok [1]");
    }

    #[test]
    fn long_line_is_reported_not_kept() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\n{}\n");
        let records = collect(&input, 10);
        let err = records[0].value.as_ref().unwrap_err();
        assert!(err.message.contains("100 bytes"), "{err}");
        assert!(records[1].value.is_ok());
    }

    #[test]
    fn invalid_utf8_is_reported() {
        let records = collect(b"{\"a\":\"\xff\"}\n", 1 << 20);
        let err = records[0].value.as_ref().unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.jsonl:1: invalid UTF-8 at byte 6 of the line"
        );
    }
}
