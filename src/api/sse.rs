//! Server-sent events decoding, as the WHATWG spec defines it and OpenAI-compatible servers use it:
//! lines end in LF, CRLF or CR (also split across network reads), `data:` lines of one event are
//! joined with `\n` and the event ends at a blank line, lines starting with `:` are comments
//! (OpenRouter's `: OPENROUTER PROCESSING` keep-alives), a leading BOM is dropped.
//!
//! Bytes go in as they arrive ([`SseDecoder::push`]); complete events come out
//! ([`SseDecoder::next_event`]). At the end of the stream [`SseDecoder::finish`] also hands out an
//! event whose closing blank line never came (lenient, so a final `data: [DONE]` without it counts).
//!
//! A decoder made [`SseDecoder::bounded`] holds no line and no event's data longer than its limit:
//! past it, what it holds is dropped and [`SseDecoder::overflowed`] says so.

use std::collections::VecDeque;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// `event:` field, if any (OpenAI-compatible servers rarely send one).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// `id:` field, if any.
    pub id: Option<String>,
}

/// Incremental SSE decoder.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes not yet forming a complete line.
    buf: Vec<u8>,
    /// How much of `buf` was scanned without finding a line end: the next scan starts there,
    /// so a long line arriving in many reads is scanned once, not once per read.
    scanned: usize,
    /// Whether anything was seen yet (for the BOM rule).
    started: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    id: Option<String>,
    ready: VecDeque<SseEvent>,
    comments: u64,
    /// Longest line or event data held, when bounded.
    limit: Option<usize>,
    overflowed: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that holds no line and no event's data longer than `limit` bytes.
    pub fn bounded(limit: usize) -> Self {
        SseDecoder {
            limit: Some(limit),
            ..Self::default()
        }
    }

    /// Whether a line or an event's data went past the limit (what it held is dropped).
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Feed bytes as they arrive.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.overflowed {
            return;
        }
        self.buf.extend_from_slice(bytes);
        if !self.started && self.buf.len() >= 3 {
            self.started = true;
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.drain(..3);
                self.scanned = self.scanned.saturating_sub(3);
            }
        }
        self.drain_lines(false);
        if self.overflowed || self.limit.is_some_and(|limit| self.buf.len() > limit) {
            self.overflow();
        }
    }

    fn overflow(&mut self) {
        self.overflowed = true;
        self.buf = Vec::new();
        self.scanned = 0;
        self.data = String::new();
        self.has_data = false;
    }

    /// The stream ended: decode whatever is left, including an unterminated last event.
    pub fn finish(&mut self) {
        self.started = true;
        self.drain_lines(true);
        if !self.buf.is_empty() {
            self.scanned = 0;
            let line = std::mem::take(&mut self.buf);
            self.line(&line);
        }
        self.dispatch();
    }

    /// The next complete event, if any.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Comment lines seen so far (keep-alives).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    fn drain_lines(&mut self, eof: bool) {
        let buf = std::mem::take(&mut self.buf);
        let mut start = 0;
        let mut i = self.scanned;
        loop {
            let Some(at) = memchr::memchr2(b'\n', b'\r', &buf[i..]) else {
                i = buf.len();
                break;
            };
            i += at;
            if buf[i] == b'\n' {
                self.line(&buf[start..i]);
                start = i + 1;
            } else if i + 1 < buf.len() {
                self.line(&buf[start..i]);
                if buf[i + 1] == b'\n' {
                    i += 1;
                }
                start = i + 1;
            } else if eof {
                self.line(&buf[start..i]);
                start = i + 1;
            } else {
                // A CR at the end of a read: the LF of a CRLF may be in the next read.
                break;
            }
            i += 1;
        }
        self.scanned = i - start;
        self.buf = buf;
        self.buf.drain(..start);
    }

    fn line(&mut self, line: &[u8]) {
        if self.overflowed {
            return;
        }
        if line.is_empty() {
            self.dispatch();
            return;
        }
        if line[0] == b':' {
            self.comments += 1;
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"data" => {
                if self
                    .limit
                    .is_some_and(|limit| self.data.len() + value.len() + 1 > limit)
                {
                    self.overflow();
                    return;
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.into_owned()),
            b"id" => self.id = Some(value.into_owned()),
            // `retry` and unknown fields are ignored, as the spec says.
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        if self.has_data {
            self.ready.push_back(SseEvent {
                event: self.event.take(),
                data: std::mem::take(&mut self.data),
                id: self.id.take(),
            });
            self.has_data = false;
        } else {
            self.event = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Vec<String> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            d.push(chunk);
            while let Some(e) = d.next_event() {
                out.push(e.data);
            }
        }
        d.finish();
        while let Some(e) = d.next_event() {
            out.push(e.data);
        }
        out
    }

    #[test]
    fn events_comments_and_done_with_every_line_ending_and_split() {
        let input = "\u{feff}: OPENROUTER PROCESSING\r\n\r\ndata: {\"a\":1}\r\n\r\n: ping\n\ndata:{\"b\":2}\n\ndata: {\"c\":\r\rdata: [DONE]\n\n";
        for piece in 1..input.len() + 1 {
            assert_eq!(
                decode_in_pieces(input.as_bytes(), piece),
                vec!["{\"a\":1}", "{\"b\":2}", "{\"c\":", "[DONE]"],
                "piece size {piece}"
            );
        }
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        let out = decode_in_pieces(b"data: {\"x\":\ndata:  1}\nid: 7\nevent: chunk\n\n", 5);
        assert_eq!(out, vec!["{\"x\":\n 1}"]);
        let mut d = SseDecoder::new();
        d.push(b"event: e\nid: 9\ndata: x\n\n");
        assert_eq!(
            d.next_event(),
            Some(SseEvent {
                event: Some("e".into()),
                data: "x".into(),
                id: Some("9".into())
            })
        );
    }

    #[test]
    fn unterminated_last_event_is_flushed_at_eof() {
        assert_eq!(decode_in_pieces(b"data: [DONE]", 4), vec!["[DONE]"]);
        assert_eq!(decode_in_pieces(b"data: [DONE]\r", 4), vec!["[DONE]"]);
    }

    #[test]
    fn comments_are_counted_and_blank_events_ignored() {
        let mut d = SseDecoder::new();
        d.push(b": a\n\n: b\n\nevent: x\n\n");
        assert_eq!(d.next_event(), None);
        assert_eq!(d.comments(), 2);
    }

    #[test]
    fn a_bounded_decoder_drops_a_line_or_event_past_its_limit() {
        let mut d = SseDecoder::bounded(16);
        d.push(b"data: short\n\n");
        assert_eq!(d.next_event().map(|e| e.data), Some("short".into()));
        d.push(b"data: 0123456789");
        assert!(!d.overflowed());
        d.push(b"0123456789");
        assert!(d.overflowed());
        let mut d = SseDecoder::bounded(16);
        d.push(b"data: 0123456789\ndata: 0123456789\n");
        assert!(d.overflowed());
        assert_eq!(d.next_event(), None);
    }

    #[test]
    fn utf8_split_across_reads_survives() {
        let input = "data: {\"t\":\"日本語 🎉\"}\n\n".as_bytes();
        assert_eq!(decode_in_pieces(input, 1), vec!["{\"t\":\"日本語 🎉\"}"]);
    }
}
