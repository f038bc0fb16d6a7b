//! Tool calls written as text in datasets: `{"name": "f", "arguments": ...}` envelopes, parsed
//! leniently because real data is not JSON (glaive writes `'arguments': '{...}'` in single
//! quotes, uses `Infinity`, says `parameters` instead of `arguments`, and gets truncated), and
//! the neutral `call_N` ids that pair calls with their results.
//!
//! The arguments string is kept exactly as the dataset wrote it: an object is cut out of the
//! source text byte for byte, so no re-serialization changes its spacing or number formatting.

use std::collections::VecDeque;

use serde_json::{json, Value};

/// A tool call read from text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCall {
    pub name: String,
    /// The arguments as the dataset wrote them (a JSON object text, normally).
    pub arguments: String,
}

/// Why a call envelope could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The text ends before the envelope does.
    Truncated,
    Invalid(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated => f.write_str("function call is truncated"),
            Self::Invalid(why) => write!(f, "function call cannot be read: {why}"),
        }
    }
}

/// Parse `{"name": ..., "arguments"|"parameters": <object | 'single-quoted' | "json string">}`.
pub fn parse_call(text: &str) -> Result<ParsedCall, CallError> {
    let mut s = Scanner::new(text.trim());
    s.expect(b'{')?;
    let mut name = None;
    let mut arguments = None;
    loop {
        s.skip_ws();
        match s.peek() {
            None => return Err(CallError::Truncated),
            Some(b'}') => break,
            Some(b',') => {
                s.pos += 1;
                continue;
            }
            _ => {}
        }
        let key = s.json_string()?;
        s.skip_ws();
        s.expect(b':')?;
        s.skip_ws();
        let raw = s.value()?;
        match key.as_str() {
            "name" => {
                name = Some(match serde_json::from_str::<Value>(raw) {
                    Ok(Value::String(n)) => n,
                    _ => return Err(CallError::Invalid(format!("name is not a string: {raw}"))),
                })
            }
            "arguments" | "parameters" => arguments = Some(argument_text(raw)?),
            _ => {}
        }
    }
    let name = name.ok_or_else(|| CallError::Invalid("no \"name\"".into()))?;
    Ok(ParsedCall {
        name,
        arguments: arguments.unwrap_or_else(|| "{}".into()),
    })
}

/// One call envelope, or a JSON-ish list of them (parallel calls, as LLaMA-Factory writes them).
pub fn parse_calls(text: &str) -> Result<Vec<ParsedCall>, CallError> {
    let text = text.trim();
    if !text.starts_with('[') {
        return parse_call(text).map(|call| vec![call]);
    }
    let mut s = Scanner::new(text);
    s.pos = 1;
    let mut calls = Vec::new();
    loop {
        s.skip_ws();
        match s.peek() {
            None => return Err(CallError::Truncated),
            Some(b']') => return Ok(calls),
            Some(b',') => s.pos += 1,
            Some(_) => calls.push(parse_call(s.value()?)?),
        }
    }
}

/// The arguments text from the raw value: unquote `'...'`, decode a JSON string, else keep.
fn argument_text(raw: &str) -> Result<String, CallError> {
    if let Some(inner) = raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        return Ok(inner.to_string());
    }
    if raw.starts_with('"') {
        return match serde_json::from_str::<Value>(raw) {
            Ok(Value::String(s)) => Ok(s),
            _ => Err(CallError::Invalid(format!("bad arguments string {raw}"))),
        };
    }
    Ok(raw.to_string())
}

/// A cursor over envelope text that knows JSON strings, single-quoted strings and nesting.
struct Scanner<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Scanner<'t> {
    fn new(text: &'t str) -> Self {
        Self { text, pos: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, want: u8) -> Result<(), CallError> {
        match self.peek() {
            Some(b) if b == want => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(CallError::Invalid(format!(
                "expected '{}' at byte {}, found '{}'",
                want as char, self.pos, b as char
            ))),
            None => Err(CallError::Truncated),
        }
    }

    /// End (exclusive) of the quoted string starting at `self.pos`.
    fn quoted_end(&self, quote: u8) -> Result<usize, CallError> {
        let bytes = self.text.as_bytes();
        let mut i = self.pos + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' if quote == b'"' => i += 2,
                b'"' if quote == b'\'' => {
                    // Inside '...', a JSON string may hold an apostrophe: skip it whole.
                    let mut inner = Scanner {
                        text: self.text,
                        pos: i,
                    };
                    inner.pos = inner.quoted_end(b'"')?;
                    i = inner.pos;
                }
                b if b == quote => return Ok(i + 1),
                _ => i += 1,
            }
        }
        Err(CallError::Truncated)
    }

    fn json_string(&mut self) -> Result<String, CallError> {
        if self.peek() != Some(b'"') {
            return Err(match self.peek() {
                None => CallError::Truncated,
                Some(b) => CallError::Invalid(format!(
                    "expected a key at byte {}, found '{}'",
                    self.pos, b as char
                )),
            });
        }
        let end = self.quoted_end(b'"')?;
        let raw = &self.text[self.pos..end];
        self.pos = end;
        serde_json::from_str(raw).map_err(|e| CallError::Invalid(format!("bad key {raw}: {e}")))
    }

    /// The raw text of one value: a quoted string, a bracketed structure, or a bare token.
    fn value(&mut self) -> Result<&'t str, CallError> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        match self.peek() {
            None => return Err(CallError::Truncated),
            Some(q @ (b'"' | b'\'')) => self.pos = self.quoted_end(q)?,
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                loop {
                    match self.peek() {
                        None => return Err(CallError::Truncated),
                        Some(b'"') => {
                            self.pos = self.quoted_end(b'"')?;
                            continue;
                        }
                        Some(b'{' | b'[') => depth += 1,
                        Some(b'}' | b']') => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            Some(_) => {
                while self.pos < bytes.len() && !matches!(bytes[self.pos], b',' | b'}') {
                    self.pos += 1;
                }
                if self.pos == bytes.len() {
                    return Err(CallError::Truncated);
                }
                return Ok(self.text[start..self.pos].trim_end());
            }
        }
        Ok(&self.text[start..self.pos])
    }
}

/// Hands out neutral `call_N` ids (N counted over the whole conversation) and pairs each tool
/// result with the oldest call still waiting for one.
#[derive(Debug, Default)]
pub struct CallIds {
    issued: usize,
    pending: VecDeque<String>,
    last: Option<String>,
}

impl CallIds {
    /// A new call's OpenAI `tool_calls` entry; it now waits for a result.
    pub fn call(&mut self, call: &ParsedCall) -> Value {
        let id = format!("call_{}", self.issued);
        self.issued += 1;
        self.pending.push_back(id.clone());
        self.last = Some(id.clone());
        json!({
            "id": id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        })
    }

    /// How many calls still wait for a result.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The id a tool result answers: the oldest waiting call, else the latest call.
    pub fn answer(&mut self) -> Option<String> {
        self.pending.pop_front().or_else(|| self.last.clone())
    }

    /// A new assistant turn starts: unanswered calls stay unanswered.
    pub fn new_turn(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> (String, String) {
        let c = parse_call(text).unwrap();
        (c.name, c.arguments)
    }

    #[test]
    fn glaive_single_quoted_arguments() {
        assert_eq!(
            ok(r#"{"name": "book", "arguments": '{"city": "Rome", "note": "it's ok"}'}"#),
            (
                "book".into(),
                r#"{"city": "Rome", "note": "it's ok"}"#.into()
            )
        );
    }

    #[test]
    fn object_arguments_kept_byte_for_byte() {
        assert_eq!(
            ok(r#"{"name": "f", "arguments": {"a": [1, 2.50], "b": "}"}}"#),
            ("f".into(), r#"{"a": [1, 2.50], "b": "}"}"#.into())
        );
    }

    #[test]
    fn parameters_infinity_and_string_arguments() {
        assert_eq!(
            ok(r#"{"name": "f", "parameters": {"x": Infinity}}"#),
            ("f".into(), r#"{"x": Infinity}"#.into())
        );
        assert_eq!(
            ok(r#"{"name": "f", "arguments": "{\"a\": 1}"}"#),
            ("f".into(), r#"{"a": 1}"#.into())
        );
        assert_eq!(ok(r#"{"name": "f"}"#), ("f".into(), "{}".into()));
    }

    #[test]
    fn truncated_calls_are_recognised() {
        for text in [
            r#"{"name": "f", "arguments": '{"a": 1"#,
            r#"{"name": "f", "arguments": {"a": "#,
            r#"{"name": "f", "#,
            r#"{"na"#,
        ] {
            assert_eq!(parse_call(text), Err(CallError::Truncated), "{text}");
        }
    }
}
