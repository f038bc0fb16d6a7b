//! Fast parsing of journal lines for the resume index: only the fields resume needs.
//!
//! A resume must be ready in a small multiple of the time `wc -l` takes on the journal, so lines
//! are not deserialized into full [`super::Record`]s, and the big `request` and `response` bodies
//! are not even syntax-checked: [`LineParser`] reads a line's small fields and the response's
//! `usage` counts and skips the bodies by searching, not parsing.
//!
//! The fast path relies on the field order [`super::Record`] is written in (small fields first,
//! then `request`, then `response`) and on the compact form serde_json writes:
//!
//! - The prefix is everything before the first `,"request":`. That text is always a key of an
//!   object, never part of a string: inside a JSON string a `"` is always written `\"`, so the
//!   byte before it would be a backslash, never a `,`. The prefix plus a closing `}` is parsed as
//!   an object (so damage in the small fields is still found). It must hold `started_at` and
//!   `latency_ms`, which every record has and which only come before `request` in the current
//!   order; otherwise the line is older (`request` came third) and gets the full parse.
//! - Token counts come from the last `"usage":{` after the request key, parsed as one object
//!   (the parser stops at its end). It is taken only when it is the last member of the line's last
//!   top-level value (the line ends `}}` right after it) and a `,"response":` key comes before it,
//!   i.e. it is `response.usage`, the last member of the response, which is where
//!   OpenAI-compatible APIs put it. Any other shape gets the full parse of the line. No
//!   `"usage":{` after the request key means the response has no usage object (the same escaping
//!   argument: a key in the body would have to appear in that form).
//!
//! The trade-off: a line whose prefix parses but whose body is corrupt (say, cut short and then
//! followed by a newline) is no longer caught here, except that a line not ending in `}` gets the
//! full parse and is reported. [`super::RecordReader`] (used by `build` and `verify`) parses every
//! line in full and still reports it. A torn last line (no newline) is unaffected: it is found by
//! position, not by parsing. One residual case is misread: a record with no response whose request
//! ends with its own `usage` object after a nested `"response"` key would count that object's
//! token numbers; OpenAI-compatible request bodies have neither.
//!
//! On the full path, [`IndexLine`] borrows `id` from the buffer and lets serde_json skip everything
//! else without building values (skipped parts are still syntax-checked there). `response` may be
//! any JSON (a record of a malformed answer keeps whatever came back), so the usage readers accept
//! any shape and take numbers only where they make sense.

use std::borrow::Cow;
use std::fmt;

use memchr::memmem;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::{ErrorClass, Status};

/// The resume-relevant fields of one journal line.
#[derive(Debug, Deserialize)]
pub(crate) struct IndexLine<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(default)]
    pub attempt: u32,
    pub status: Status,
    #[serde(default)]
    pub error_class: Option<ErrorClass>,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub response: ResponseUsage,
}

/// `response.usage` token counts, if the response is an object with a usage object.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct ResponseUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// Accept any other JSON shape as "nothing here", draining it so the parser stays in sync.
macro_rules! ignore_other_shapes {
    ($value:ty) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E: de::Error>(self) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_none<E: de::Error>(self) -> Result<$value, E> {
            Ok(Default::default())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

/// A map key we either want (by position in a list of names) or skip, read without allocating.
struct KeyOf(&'static [&'static str]);

impl<'de> de::DeserializeSeed<'de> for KeyOf {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for KeyOf {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|k| *k == key))
    }
}

impl<'de> Deserialize<'de> for ResponseUsage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ResponseVisitor;
        impl<'de> Visitor<'de> for ResponseVisitor {
            type Value = ResponseUsage;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            ignore_other_shapes!(ResponseUsage);
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<ResponseUsage, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResponseUsage, A::Error> {
                let mut usage = ResponseUsage::default();
                while let Some(key) = map.next_key_seed(KeyOf(&["usage"]))? {
                    match key {
                        Some(_) => usage = map.next_value::<UsageCounts>()?.0,
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(usage)
            }
        }
        d.deserialize_any(ResponseVisitor)
    }
}

/// The token counts inside a `usage` object.
#[derive(Default)]
struct UsageCounts(ResponseUsage);

impl<'de> Deserialize<'de> for UsageCounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct UsageVisitor;
        impl<'de> Visitor<'de> for UsageVisitor {
            type Value = UsageCounts;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            ignore_other_shapes!(UsageCounts);
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UsageCounts, A::Error> {
                let mut usage = ResponseUsage::default();
                let keys = &["prompt_tokens", "completion_tokens"];
                while let Some(key) = map.next_key_seed(KeyOf(keys))? {
                    match key {
                        Some(0) => usage.prompt_tokens = map.next_value::<Count>()?.0,
                        Some(_) => usage.completion_tokens = map.next_value::<Count>()?.0,
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(UsageCounts(usage))
            }
        }
        d.deserialize_any(UsageVisitor)
    }
}

/// A token count: a non-negative integer (or an integral float); anything else is "unknown".
#[derive(Default)]
struct Count(Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token count")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                Ok(Count(u64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Count, E> {
                let integral = v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1e18;
                Ok(Count(integral.then_some(v as u64)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Count(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count(None))
            }
        }
        d.deserialize_any(CountVisitor)
    }
}

/// Parse one line (without its newline) with a one-off [`LineParser`].
#[cfg(test)]
pub(crate) fn parse_line(line: &[u8]) -> Result<IndexLine<'_>, serde_json::Error> {
    LineParser::new().parse(line)
}

/// Parses journal lines, fast path first (see the module doc); keeps a scratch buffer so that
/// parsing a line allocates nothing unless its id has escapes.
pub(crate) struct LineParser {
    request_key: memmem::Finder<'static>,
    usage_key: memmem::FinderRev<'static>,
    usage_key_fwd: memmem::Finder<'static>,
    response_key: memmem::Finder<'static>,
    prefix: Vec<u8>,
}

const REQUEST_KEY: &[u8] = b",\"request\":";
const USAGE_KEY: &[u8] = b"\"usage\":{";
const RESPONSE_KEY: &[u8] = b",\"response\":";
/// How far from the end of a line the response's usage is looked for first.
const USAGE_WINDOW: usize = 512;

/// The small fields before `request`, parsed from `prefix + "}"`.
#[derive(Deserialize)]
struct Prefix<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(default)]
    attempt: u32,
    status: Status,
    #[serde(default)]
    error_class: Option<ErrorClass>,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    started_at: Present,
    #[serde(default)]
    latency_ms: Present,
}

/// Whether a key was there (its value, whatever it is, is skipped).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

impl Default for LineParser {
    fn default() -> Self {
        Self::new()
    }
}

impl LineParser {
    pub(crate) fn new() -> LineParser {
        LineParser {
            request_key: memmem::Finder::new(REQUEST_KEY),
            usage_key: memmem::FinderRev::new(USAGE_KEY),
            usage_key_fwd: memmem::Finder::new(USAGE_KEY),
            response_key: memmem::Finder::new(RESPONSE_KEY),
            prefix: Vec::with_capacity(1024),
        }
    }

    /// Parse one line (without its newline): the fast path, or the full parse when it does not
    /// apply (older field order, unusual response shape, damage in the prefix).
    pub(crate) fn parse<'a>(&mut self, line: &'a [u8]) -> Result<IndexLine<'a>, serde_json::Error> {
        match self.parse_fast(line) {
            Some(parsed) => Ok(parsed),
            None => serde_json::from_slice(line),
        }
    }

    fn parse_fast<'a>(&mut self, line: &'a [u8]) -> Option<IndexLine<'a>> {
        // A line cut short inside a body (then followed by a newline) rarely still ends in `}`;
        // send it to the full parse, which reports it.
        if line.last() != Some(&b'}') {
            return None;
        }
        // Not inside a string: there a `"` is written `\"`, and here it follows a `,`.
        let at = self.request_key.find(line)?;
        self.prefix.clear();
        self.prefix.extend_from_slice(&line[..at]);
        self.prefix.push(b'}');
        let prefix: Prefix<'_> = serde_json::from_slice(&self.prefix).ok()?;
        if !(prefix.started_at.0 && prefix.latency_ms.0) {
            return None; // the older order: these came after `request`
        }
        let response = self.response_usage(line, at + REQUEST_KEY.len())?;
        // `prefix` is a copy of `line[..at]`, so a borrowed id is at the same offset in `line`.
        let id = match prefix.id {
            Cow::Borrowed(id) => {
                let offset = id.as_ptr() as usize - self.prefix.as_ptr() as usize;
                match std::str::from_utf8(&line[offset..offset + id.len()]) {
                    Ok(id) => Cow::Borrowed(id),
                    Err(_) => Cow::Owned(id.to_owned()),
                }
            }
            Cow::Owned(id) => Cow::Owned(id),
        };
        Some(IndexLine {
            id,
            attempt: prefix.attempt,
            status: prefix.status,
            error_class: prefix.error_class,
            cost_usd: prefix.cost_usd,
            response,
        })
    }

    /// `response.usage` from the part of `line` after the request key, or `None` when the fast
    /// path cannot tell for sure.
    fn response_usage(&self, line: &[u8], body: usize) -> Option<ResponseUsage> {
        let rest = &line[body..];
        // The reverse search has no SIMD prefilter, so look near the end first (where the
        // response's usage is), and scan the bodies forward only if it is not there.
        let near = rest.len().saturating_sub(USAGE_WINDOW);
        let key = match self.usage_key.rfind(&rest[near..]) {
            Some(key) => near + key,
            None => {
                if self.usage_key_fwd.find(rest).is_none() {
                    // No usage object anywhere in the bodies, so none in the response.
                    return Some(ResponseUsage::default());
                }
                self.usage_key.rfind(rest)?
            }
        };
        // `"usage"` must be a key, not the end of a longer one (`"x\"usage":`): after `,` or `{`.
        if key == 0 || !matches!(rest[key - 1], b',' | b'{') {
            return None;
        }
        let object = &rest[key + USAGE_KEY.len() - 1..];
        let mut stream = serde_json::Deserializer::from_slice(object).into_iter::<UsageCounts>();
        let usage = stream.next()?.ok()?.0;
        // It is the last member of the line's last top-level value...
        if &object[stream.byte_offset()..] != b"}}" {
            return None;
        }
        // ...which is the response if a response key comes before it, else the request (a record
        // without a response).
        Some(match self.response_key.find(&rest[..key]) {
            Some(_) => usage,
            None => ResponseUsage::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_usage_and_skips_the_rest() {
        let line = br#"{"id":"p1","attempt":2,"status":"success","endpoint":"e","request":{"messages":[{"role":"user","content":"hi \"there\""}]},"response":{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":12,"completion_tokens":34,"cost":0.01,"completion_tokens_details":{"reasoning_tokens":3}}},"cost_usd":0.01,"started_at":"t","latency_ms":5}"#;
        let parsed = parse_line(line).unwrap();
        assert_eq!(parsed.id, "p1");
        assert!(matches!(parsed.id, Cow::Borrowed(_)));
        assert_eq!(parsed.attempt, 2);
        assert_eq!(parsed.status, Status::Success);
        assert_eq!(parsed.cost_usd, Some(0.01));
        assert_eq!(parsed.response.prompt_tokens, Some(12));
        assert_eq!(parsed.response.completion_tokens, Some(34));
    }

    #[test]
    fn any_response_shape_is_accepted() {
        for response in [
            r#""<html>bad gateway</html>""#,
            "null",
            "[1,2,{}]",
            "7",
            r#"{"usage":null}"#,
            r#"{"usage":{"prompt_tokens":"many","completion_tokens":-1}}"#,
            r#"{"usage":[1]}"#,
        ] {
            let line = format!(
                r#"{{"id":"p","attempt":1,"status":"failed","error_class":"malformed","response":{response}}}"#
            );
            let parsed = parse_line(line.as_bytes()).unwrap();
            assert_eq!(parsed.response, ResponseUsage::default(), "{response}");
            assert_eq!(parsed.error_class, Some(ErrorClass::Malformed));
        }
    }

    fn record(
        request: serde_json::Value,
        response: Option<serde_json::Value>,
    ) -> super::super::Record {
        super::super::Record {
            id: "p\u{e9}1".into(),
            attempt: 3,
            status: Status::Failed,
            error_class: Some(ErrorClass::EmptyAnswer),
            error: Some(r#"no answer ,"request":{"usage":{"prompt_tokens":1}}"#.into()),
            endpoint: "e".into(),
            http_status: Some(200),
            provider: Some("P".into()),
            cost_usd: Some(0.25),
            started_at: "t".into(),
            latency_ms: 9,
            first_byte_ms: Some(4),
            request,
            response,
        }
    }

    /// The fast path's answer, checked against the full parse of the same line.
    fn fast(line: &[u8]) -> Option<IndexLine<'_>> {
        let parsed = LineParser::new().parse_fast(line)?;
        let full: IndexLine<'_> = serde_json::from_slice(line).unwrap();
        assert_eq!(parsed.id, full.id);
        assert_eq!(parsed.attempt, full.attempt);
        assert_eq!(parsed.status, full.status);
        assert_eq!(parsed.error_class, full.error_class);
        assert_eq!(parsed.cost_usd, full.cost_usd);
        assert_eq!(parsed.response, full.response);
        Some(parsed)
    }

    fn usage(prompt: u64, completion: u64) -> ResponseUsage {
        ResponseUsage {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
        }
    }

    #[test]
    fn fast_path_reads_the_prefix_and_the_response_usage() {
        let request =
            serde_json::json!({"messages": [{"role": "user", "content": "a \"b\" \\ c\n"}]});
        let response = serde_json::json!({"choices": [{"message": {"content": "x"}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 34,
                      "completion_tokens_details": {"reasoning_tokens": 3}}});
        let line = serde_json::to_vec(&record(request, Some(response))).unwrap();
        assert!(line.starts_with(br#"{"id":"#), "small fields first");
        let parsed = fast(&line).expect("fast path");
        assert_eq!(parsed.id, "p\u{e9}1");
        assert!(
            matches!(parsed.id, Cow::Borrowed(_)),
            "the id borrows from the line"
        );
        assert_eq!(parsed.attempt, 3);
        assert_eq!(parsed.status, Status::Failed);
        assert_eq!(parsed.error_class, Some(ErrorClass::EmptyAnswer));
        assert_eq!(parsed.cost_usd, Some(0.25));
        assert_eq!(parsed.response, usage(12, 34));

        // An id with escapes is unescaped into an owned string.
        let mut escaped = record(serde_json::json!({}), None);
        escaped.id = "a\"b".into();
        let line = serde_json::to_vec(&escaped).unwrap();
        assert_eq!(fast(&line).expect("fast path").id, "a\"b");
    }

    #[test]
    fn key_text_inside_strings_is_not_mistaken_for_keys() {
        // `,"request":` and `"usage":{` inside the error message, the request and the response
        // content are written with `\"`, so they never match.
        let request = serde_json::json!({"messages": [{"role": "user",
            "content": r#"x,"request":{"id":"fake","status":"success"},"usage":{"prompt_tokens":7}}"#}]});
        let response = serde_json::json!({"choices": [{"message": {"content": r#","usage":{"prompt_tokens":8}}}"#}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2}});
        let line = serde_json::to_vec(&record(request.clone(), Some(response))).unwrap();
        let parsed = fast(&line).expect("fast path");
        assert_eq!(parsed.id, "p\u{e9}1");
        assert_eq!(parsed.response, usage(1, 2));

        let response = serde_json::json!({"content": r#"","usage":{"prompt_tokens":8}}"#});
        let line = serde_json::to_vec(&record(request, Some(response))).unwrap();
        assert_eq!(
            fast(&line).expect("fast path").response,
            ResponseUsage::default()
        );
    }

    #[test]
    fn usage_in_the_request_is_not_the_responses() {
        let request =
            serde_json::json!({"model": "m", "usage": {"include": true, "prompt_tokens": 5}});
        // Response with usage: the last usage object is the response's.
        let with = serde_json::json!({"usage": {"prompt_tokens": 1, "completion_tokens": 2}});
        let line = serde_json::to_vec(&record(request.clone(), Some(with))).unwrap();
        assert_eq!(fast(&line).expect("fast path").response, usage(1, 2));
        // No response: the request's usage is the last top-level value's, but not a response's.
        let line = serde_json::to_vec(&record(request.clone(), None)).unwrap();
        assert_eq!(
            fast(&line).expect("fast path").response,
            ResponseUsage::default()
        );
        // A response without usage: the request's is found but is not at the end; full parse.
        let without = serde_json::json!({"error": {"message": "boom"}});
        let line = serde_json::to_vec(&record(request, Some(without))).unwrap();
        assert!(LineParser::new().parse_fast(&line).is_none());
        assert_eq!(
            parse_line(&line).unwrap().response,
            ResponseUsage::default()
        );
    }

    #[test]
    fn other_shapes_fall_back_to_the_full_parse() {
        let parse = |line: &[u8]| {
            let mut parser = LineParser::new();
            (
                parser.parse_fast(line).is_some(),
                parser.parse(line).unwrap().response,
            )
        };
        // Usage not the response's last member, or nested deeper.
        let request = serde_json::json!({"model": "m"});
        let response =
            serde_json::json!({"usage": {"prompt_tokens": 1, "completion_tokens": 2}, "id": "g"});
        let line = serde_json::to_vec(&record(request.clone(), Some(response))).unwrap();
        assert_eq!(parse(&line), (false, usage(1, 2)));
        let response = serde_json::json!({"x": {"usage": {"prompt_tokens": 1}}});
        let line = serde_json::to_vec(&record(request.clone(), Some(response))).unwrap();
        assert_eq!(parse(&line), (false, ResponseUsage::default()));
        // A later non-object usage wins over an earlier object one (full parse, last key wins).
        let line = br#"{"id":"p","attempt":1,"status":"success","endpoint":"e","started_at":"t","latency_ms":1,"request":{},"response":{"usage":{"prompt_tokens":1},"usage":null}}"#;
        assert_eq!(parse(line), (false, ResponseUsage::default()));

        // The older field order (`request` third, `cost_usd` after it) is read in full.
        let old = br#"{"id":"p1","attempt":2,"status":"success","endpoint":"e","request":{"messages":[]},"response":{"usage":{"prompt_tokens":12,"completion_tokens":34}},"cost_usd":0.01,"started_at":"t","latency_ms":5}"#;
        assert!(LineParser::new().parse_fast(old).is_none());
        let parsed = parse_line(old).unwrap();
        assert_eq!((parsed.id.as_ref(), parsed.cost_usd), ("p1", Some(0.01)));
        assert_eq!(parsed.response, usage(12, 34));
        // No `request` key at all.
        let bare = br#"{"id":"p","status":"skipped","started_at":"t","latency_ms":1}"#;
        assert!(LineParser::new().parse_fast(bare).is_none());
        assert_eq!(parse_line(bare).unwrap().status, Status::Skipped);
    }

    #[test]
    fn damage_in_the_prefix_or_a_cut_line_is_caught() {
        let line = serde_json::to_vec(&record(serde_json::json!({"a": 1}), None)).unwrap();
        // Prefix damage: the prefix fails, and so does the full parse.
        let mut bad = line.clone();
        bad[2] = b'#';
        assert!(parse_line(&bad).is_err());
        // Cut short inside the body (no closing brace): the full parse reports it.
        assert!(parse_line(&line[..line.len() - 3]).is_err());
        // Known trade-off: damage inside a body that keeps the line's last `}` is not seen here.
        let mut body = line.clone();
        let at = body.len() - 4;
        body[at] = b'[';
        assert!(serde_json::from_slice::<IndexLine<'_>>(&body).is_err());
        assert!(parse_line(&body).is_ok());
    }

    #[test]
    fn syntax_errors_in_skipped_parts_are_caught() {
        let line = br#"{"id":"p","status":"success","request":{"messages":[}],"response":null}"#;
        assert!(parse_line(line).is_err());
        let torn = br#"{"id":"p","status":"success","request":{"mess"#;
        assert!(parse_line(torn).is_err());
    }
}
