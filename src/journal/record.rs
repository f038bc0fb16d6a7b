//! [`Record`]: one finished attempt, as written to the journal (never the API key).

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Success,
    Failed,
    Skipped,
}

use crate::api::ErrorClass;

/// One finished attempt. Serialized in field order, small fields first, `request` and `response` last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The prompt id.
    pub id: String,
    /// 1-based attempt number for this prompt within the run.
    pub attempt: u32,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Endpoint name or base URL (never a key).
    pub endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// `response.usage.prompt_tokens`, copied among the small fields so that the resume scan
    /// reads the line's prefix only (see `scan.rs`); absent when unknown and in journals written
    /// before draftgen copied it, where only the response has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// `response.usage.completion_tokens`, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// RFC 3339 start time.
    pub started_at: String,
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<u64>,
    /// A failed attempt the server asked to wait after (`Retry-After`): the next attempt of this
    /// prompt must not start before this time (Unix milliseconds), in this session or a resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before_ms: Option<u64>,
    /// The prompt's dataset (`Prompt::source`), so `verify` needs only the run directory for
    /// per-dataset figures. Absent in journals written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    // The big bodies come last: serde writes fields in declaration order, and the resume index
    // reads only the line's prefix up to `,"request":` (see `scan.rs`). Keep new small fields
    // above this point.
    /// The request body as sent (never a key).
    pub request: Value,
    /// The raw chat.completion JSON (assembled from the stream when streaming).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
}

/// The journal id of turn `turn` (1-based) of `of` of conversation `prompt` (`generate --turns
/// all` journals each regenerated turn under its own id, so each resumes on its own).
pub fn turn_id(prompt: &str, turn: usize, of: usize) -> String {
    format!("{prompt}:turn{turn}/{of}")
}

/// `(prompt, turn, of)` of a turn id; `None` for an ordinary prompt id.
pub fn parse_turn_id(id: &str) -> Option<(&str, usize, usize)> {
    let (prompt, rest) = id.rsplit_once(":turn")?;
    let (turn, of) = rest.split_once('/')?;
    let turn: usize = turn.parse().ok()?;
    let of: usize = of.parse().ok()?;
    (turn >= 1 && turn <= of && !prompt.is_empty()).then_some((prompt, turn, of))
}

/// A [`Record`] whose request body is already serialized, for the engine's hot path: the body is
/// serialized once and the same bytes are sent over HTTP and embedded in the journal line, instead
/// of being held as a `Value` tree and serialized twice. Field order and skip rules are those of
/// [`Record`], so the line is byte-for-byte what serializing the equivalent `Record` gives.
#[derive(Debug, Serialize)]
pub struct RecordRef<'a> {
    pub id: &'a str,
    pub attempt: u32,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
    pub endpoint: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// `response.usage.prompt_tokens` (as [`Record::prompt_tokens`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// `response.usage.completion_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    pub started_at: &'a str,
    pub latency_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_before_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'a str>,
    // Bodies last, as in `Record`: the resume index's fast path reads only the line before
    // `,"request":` and needs every small field there (see `scan.rs`).
    pub request: &'a RawValue,
    /// The answer as compact, valid JSON text (one line; whoever builds the record has checked
    /// it). Written by [`RecordRef::encode`] after the serialized fields, where `Record` has it:
    /// last. Not passed through serde, which would want to parse it again as a `RawValue`.
    #[serde(skip)]
    pub response: Option<&'a str>,
}

impl RecordRef<'_> {
    /// Serialize to one journal line (newline included) plus what the resume state needs, so the
    /// request and response can be dropped by the task that finished the attempt — queued records
    /// then cost their line's bytes.
    pub fn encode(&self) -> Result<EncodedRecord, serde_json::Error> {
        let bodies = self.request.get().len() + self.response.map_or(0, str::len);
        let mut line = Vec::with_capacity(bodies + 512);
        serde_json::to_writer(&mut line, self)?;
        if let Some(response) = self.response {
            // `…}` becomes `…,"response":{…}}`: the same bytes serde writes for a last field.
            line.pop();
            line.extend_from_slice(b",\"response\":");
            line.extend_from_slice(response.as_bytes());
            line.push(b'}');
        }
        line.push(b'\n');
        Ok(EncodedRecord {
            meta: RecordMeta {
                id: self.id.to_string(),
                attempt: self.attempt,
                status: self.status,
                error_class: self.error_class,
                cost_usd: self.cost_usd,
                prompt_tokens: self.prompt_tokens,
                completion_tokens: self.completion_tokens,
                not_before_ms: self.not_before_ms,
            },
            line,
        })
    }
}

/// The fields of a record that the resume state and the summary read.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordMeta {
    pub id: String,
    pub attempt: u32,
    pub status: Status,
    pub error_class: Option<ErrorClass>,
    pub cost_usd: Option<f64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub not_before_ms: Option<u64>,
}

/// A record already serialized as its journal line (JSON and the newline), with its [`RecordMeta`].
#[derive(Debug, Clone)]
pub struct EncodedRecord {
    pub meta: RecordMeta,
    line: Vec<u8>,
}

impl EncodedRecord {
    /// The journal line, newline included.
    pub fn line(&self) -> &[u8] {
        &self.line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(response: Option<Value>, error: Option<&str>) -> Record {
        let count = |key: &str| response.as_ref().and_then(|v| v["usage"][key].as_u64());
        let (prompt_tokens, completion_tokens) =
            (count("prompt_tokens"), count("completion_tokens"));
        Record {
            id: "abc".into(),
            attempt: 2,
            status: if error.is_some() {
                Status::Failed
            } else {
                Status::Success
            },
            error_class: error.map(|_| ErrorClass::ServerError),
            error: error.map(str::to_string),
            endpoint: "main".into(),
            request: serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hé \"q\""}], "max_tokens": 7}),
            response,
            http_status: Some(200),
            provider: Some("P".into()),
            cost_usd: Some(0.0000721),
            prompt_tokens,
            completion_tokens,
            started_at: "2026-01-01T00:00:00+00:00".into(),
            latency_ms: 12,
            first_byte_ms: None,
            not_before_ms: error.map(|_| 1_767_225_600_000),
            source: Some("glaive".into()),
        }
    }

    fn encode(r: &Record) -> EncodedRecord {
        let request = serde_json::value::to_raw_value(&r.request).expect("raw request");
        let response = r
            .response
            .as_ref()
            .map(|v| serde_json::to_string(v).expect("response text"));
        RecordRef {
            id: &r.id,
            attempt: r.attempt,
            status: r.status,
            error_class: r.error_class,
            error: r.error.as_deref(),
            endpoint: &r.endpoint,
            request: &request,
            response: response.as_deref(),
            prompt_tokens: r.prompt_tokens,
            completion_tokens: r.completion_tokens,
            http_status: r.http_status,
            provider: r.provider.as_deref(),
            cost_usd: r.cost_usd,
            started_at: &r.started_at,
            latency_ms: r.latency_ms,
            first_byte_ms: r.first_byte_ms,
            not_before_ms: r.not_before_ms,
            source: r.source.as_deref(),
        }
        .encode()
        .expect("encode")
    }

    #[test]
    fn turn_ids_round_trip() {
        let id = turn_id("abc123", 2, 3);
        assert_eq!(id, "abc123:turn2/3");
        assert_eq!(parse_turn_id(&id), Some(("abc123", 2, 3)));
        assert_eq!(parse_turn_id("abc123"), None);
        assert_eq!(parse_turn_id("abc:turn4/3"), None);
        assert_eq!(parse_turn_id("abc:turn0/3"), None);
    }

    #[test]
    fn encoded_line_is_the_records_own_serialization() {
        let response = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5}, "z": 1, "a": 1.5e-7});
        for r in [record(Some(response), None), record(None, Some("boom"))] {
            let encoded = encode(&r);
            let mut expected = serde_json::to_vec(&r).expect("serialize");
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8_lossy(encoded.line()),
                String::from_utf8_lossy(&expected)
            );
            let back: Record = serde_json::from_slice(encoded.line()).expect("parse back");
            assert_eq!(back, r);
        }
    }

    #[test]
    fn meta_carries_usage_and_outcome() {
        let r = record(
            Some(serde_json::json!({"usage": {"prompt_tokens": 3, "completion_tokens": 5}})),
            None,
        );
        let meta = encode(&r).meta;
        assert_eq!(meta.prompt_tokens, Some(3));
        assert_eq!(meta.completion_tokens, Some(5));
        assert_eq!(meta.status, Status::Success);
        assert_eq!((meta.id.as_str(), meta.attempt), ("abc", 2));
    }
}
