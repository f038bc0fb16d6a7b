//! Fast parsing of journal lines for the resume index: only the fields resume needs.
//!
//! A resume must be ready in a small multiple of the time `wc -l` takes on the journal, so lines
//! are not deserialized into full [`super::Record`]s, and the big `request` and `response` bodies
//! are not even syntax-checked: [`LineParser`] reads a line's small fields, which hold the usage
//! counts (`prompt_tokens`, `completion_tokens`), and skips the bodies. Lines written before the
//! counts were copied there (or whose response has no usage) have them only in the response; for
//! those the response's `usage` is found by searching, not parsing.
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
//! - Token counts come from the prefix when it has both (`prompt_tokens` and `completion_tokens`,
//!   copies of the response's, which draftgen writes into each record); the bodies are then not
//!   looked at at all. Otherwise, as in older journals:
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

use super::Status;
use crate::api::ErrorClass;

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
    pub not_before_ms: Option<u64>,
    /// The copies of the usage counts among the small fields (absent in older lines).
    #[serde(default)]
    prompt_tokens: Count,
    #[serde(default)]
    completion_tokens: Count,
    /// The usage counts inside the response (not looked for when the prefix has both).
    #[serde(default)]
    pub response: ResponseUsage,
}

impl IndexLine<'_> {
    /// The record's usage counts: the prefix's copies when it has both, else the response's.
    pub fn usage(&self) -> ResponseUsage {
        match (self.prompt_tokens.0, self.completion_tokens.0) {
            (Some(prompt), Some(completion)) => ResponseUsage {
                prompt_tokens: Some(prompt),
                completion_tokens: Some(completion),
            },
            _ => self.response,
        }
    }
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
#[derive(Debug, Default)]
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
    prompt_tokens: Count,
    #[serde(default)]
    completion_tokens: Count,
    #[serde(default)]
    started_at: Present,
    #[serde(default)]
    latency_ms: Present,
    #[serde(default)]
    not_before_ms: Option<u64>,
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
        // The hand-written scanner reads lines as this program writes them; serde_json reads
        // the rest (older or hand-edited lines, escaped ids) and reports damage.
        let small = match scan_prefix(&line[..at]) {
            Some(small) => small,
            None => self.parse_prefix(line, at)?,
        };
        // The counts are in the prefix (lines written since they were copied there): the bodies
        // need no look at all.
        let response = match small.usage {
            (Some(_), Some(_)) => ResponseUsage::default(),
            _ => self.response_usage(line, at + REQUEST_KEY.len())?,
        };
        Some(IndexLine {
            id: small.id,
            attempt: small.attempt,
            status: small.status,
            error_class: small.error_class,
            cost_usd: small.cost_usd,
            not_before_ms: small.not_before_ms,
            prompt_tokens: Count(small.usage.0),
            completion_tokens: Count(small.usage.1),
            response,
        })
    }

    /// The prefix `line[..at]` read by serde_json, as an object (`prefix + "}"`).
    fn parse_prefix<'a>(&mut self, line: &'a [u8], at: usize) -> Option<Small<'a>> {
        self.prefix.clear();
        self.prefix.extend_from_slice(&line[..at]);
        self.prefix.push(b'}');
        let prefix: Prefix<'_> = serde_json::from_slice(&self.prefix).ok()?;
        if !(prefix.started_at.0 && prefix.latency_ms.0) {
            return None; // the older order: these came after `request`
        }
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
        Some(Small {
            id,
            attempt: prefix.attempt,
            status: prefix.status,
            error_class: prefix.error_class,
            cost_usd: prefix.cost_usd,
            not_before_ms: prefix.not_before_ms,
            usage: (prefix.prompt_tokens.0, prefix.completion_tokens.0),
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
        let (usage, after) = match scan_usage(object) {
            Some(found) => found,
            None => {
                let mut stream =
                    serde_json::Deserializer::from_slice(object).into_iter::<UsageCounts>();
                let usage = stream.next()?.ok()?.0;
                (usage, &object[stream.byte_offset()..])
            }
        };
        // It is the last member of the line's last top-level value...
        if after != b"}}" {
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

/// The small fields of a line, however they were read.
struct Small<'a> {
    id: Cow<'a, str>,
    attempt: u32,
    status: Status,
    error_class: Option<ErrorClass>,
    cost_usd: Option<f64>,
    not_before_ms: Option<u64>,
    /// `prompt_tokens` and `completion_tokens` from the prefix.
    usage: (Option<u64>, Option<u64>),
}

/// `ErrorClass` names as serde writes them (`rename_all = "snake_case"`); a test checks each
/// against serde so a new or renamed class cannot silently fall off the table.
const ERROR_CLASSES: [(&[u8], ErrorClass); 15] = [
    (b"timeout", ErrorClass::Timeout),
    (b"rate_limited", ErrorClass::RateLimited),
    (b"server_error", ErrorClass::ServerError),
    (b"network", ErrorClass::Network),
    (b"mid_stream", ErrorClass::MidStream),
    (b"error_in200", ErrorClass::ErrorIn200),
    (b"empty_answer", ErrorClass::EmptyAnswer),
    (b"malformed", ErrorClass::Malformed),
    (b"over_limit", ErrorClass::OverLimit),
    (b"bad_request", ErrorClass::BadRequest),
    (b"unauthorized", ErrorClass::Unauthorized),
    (b"payment_required", ErrorClass::PaymentRequired),
    (b"forbidden", ErrorClass::Forbidden),
    (b"client_error", ErrorClass::ClientError),
    (b"proxy_auth", ErrorClass::ProxyAuth),
];

/// Deepest nesting [`Cursor::skip_value`] follows inside a usage object before giving up (and
/// leaving the line to serde_json); real usage objects nest two levels.
const MAX_SKIP_DEPTH: u32 = 16;

/// A strict reader over bytes written by serde_json in compact form. Every method returns `None`
/// on anything it does not expect (whitespace, `\u` escapes, leading zeros, other keys or key
/// order): the caller then falls back to serde_json, which either reads the line or reports it.
/// So this never accepts what serde_json would reject in the parts it reads, nor reads a value
/// differently; it only declines more.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, at: 0 }
    }

    fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Consume `text` if the input continues with it.
    fn eat(&mut self, text: &[u8]) -> bool {
        let found = self.rest().starts_with(text);
        if found {
            self.at += text.len();
        }
        found
    }

    fn expect(&mut self, text: &[u8]) -> Option<()> {
        self.eat(text).then_some(())
    }

    /// A string's contents after its opening quote; consumes the closing quote. Returns the raw
    /// contents and whether they hold escapes. `\u` escapes are declined (serde writes them only
    /// for rare control characters, and their surrogate rules are serde's to check), as are raw
    /// control characters, which JSON forbids.
    fn string(&mut self) -> Option<(&'a [u8], bool)> {
        let start = self.at;
        let mut escaped = false;
        loop {
            let i = self.at + memchr::memchr2(b'"', b'\\', &self.bytes[self.at..])?;
            if self.bytes[self.at..i].iter().any(|&b| b < 0x20) {
                return None;
            }
            if self.bytes[i] == b'"' {
                self.at = i + 1;
                return Some((&self.bytes[start..i], escaped));
            }
            escaped = true;
            match self.bytes.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at = i + 2,
                _ => return None,
            }
        }
    }

    /// An unsigned integer as serde writes it: digits, no sign, no leading zero; `None` on
    /// overflow or when a fraction or exponent follows (those are serde's to judge).
    fn uint(&mut self) -> Option<u64> {
        let digits = self
            .rest()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let text = &self.rest()[..digits];
        if digits == 0 || (digits > 1 && text[0] == b'0') {
            return None;
        }
        let mut value = 0u64;
        for &d in text {
            value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        self.at += digits;
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(value)
    }

    /// A JSON number (strict grammar), returned as text.
    fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.eat(b"-");
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b".") {
            self.require_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.require_digits()?;
        }
        Some(&self.bytes[start..self.at])
    }

    fn digits(&mut self) {
        self.at += self
            .rest()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
    }

    fn require_digits(&mut self) -> Option<()> {
        let before = self.at;
        self.digits();
        (self.at > before).then_some(())
    }

    /// Skip one JSON value (syntax-checked, compact form only).
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.string().map(|_| ())
            }
            b'{' | b'[' if depth >= MAX_SKIP_DEPTH => None,
            b'{' => {
                self.at += 1;
                if self.eat(b"}") {
                    return Some(());
                }
                loop {
                    self.expect(b"\"")?;
                    self.string()?;
                    self.expect(b":")?;
                    self.skip_value(depth + 1)?;
                    if self.eat(b"}") {
                        return Some(());
                    }
                    self.expect(b",")?;
                }
            }
            b'[' => {
                self.at += 1;
                if self.eat(b"]") {
                    return Some(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    if self.eat(b"]") {
                        return Some(());
                    }
                    self.expect(b",")?;
                }
            }
            b't' => self.expect(b"true"),
            b'f' => self.expect(b"false"),
            b'n' => self.expect(b"null"),
            _ => self.number().map(|_| ()),
        }
    }
}

/// Read a line's prefix (everything before `,"request":`) in exactly the shape serde_json gives a
/// [`super::Record`]: keys in declaration order, optional ones possibly absent, compact. Anything
/// else is `None` (then serde_json reads the prefix). Much cheaper than serde_json, which checks
/// and matches every key and string byte by byte through its generic machinery.
fn scan_prefix(prefix: &[u8]) -> Option<Small<'_>> {
    let mut c = Cursor::new(prefix);
    c.expect(br#"{"id":""#)?;
    let (id, escaped) = c.string()?;
    if escaped {
        return None; // serde unescapes it into an owned string; rare, leave it to serde
    }
    let id = std::str::from_utf8(id).ok()?;
    c.expect(br#","attempt":"#)?;
    let attempt = u32::try_from(c.uint()?).ok()?;
    c.expect(br#","status":""#)?;
    let status = if c.eat(b"success\"") {
        Status::Success
    } else if c.eat(b"failed\"") {
        Status::Failed
    } else if c.eat(b"skipped\"") {
        Status::Skipped
    } else {
        return None;
    };
    let mut error_class = None;
    if c.eat(br#","error_class":""#) {
        let (name, _) = c.string()?;
        error_class = Some(ERROR_CLASSES.iter().find(|(n, _)| *n == name)?.1);
    }
    if c.eat(br#","error":""#) {
        c.string()?;
    }
    c.expect(br#","endpoint":""#)?;
    c.string()?;
    if c.eat(br#","http_status":"#) {
        u16::try_from(c.uint()?).ok()?;
    }
    if c.eat(br#","provider":""#) {
        c.string()?;
    }
    let mut cost_usd = None;
    if c.eat(br#","cost_usd":"#) {
        // Correctly rounded, as serde_json's `float_roundtrip` parse is.
        let text = std::str::from_utf8(c.number()?).ok()?;
        cost_usd = Some(text.parse::<f64>().ok()?);
    }
    let mut usage = (None, None);
    if c.eat(br#","prompt_tokens":"#) {
        usage.0 = Some(c.uint()?);
    }
    if c.eat(br#","completion_tokens":"#) {
        usage.1 = Some(c.uint()?);
    }
    c.expect(br#","started_at":""#)?;
    c.string()?;
    c.expect(br#","latency_ms":"#)?;
    c.uint()?;
    if c.eat(br#","first_byte_ms":"#) {
        c.uint()?;
    }
    let mut not_before_ms = None;
    if c.eat(br#","not_before_ms":"#) {
        not_before_ms = Some(c.uint()?);
    }
    if c.eat(br#","source":""#) {
        c.string()?;
    }
    if c.at != prefix.len() {
        return None;
    }
    Some(Small {
        id: Cow::Borrowed(id),
        attempt,
        status,
        error_class,
        cost_usd,
        not_before_ms,
        usage,
    })
}

/// Read a usage object (from its `{`) and what follows it. Token counts are taken only as plain
/// unsigned integers; any other value for them, or anything unexpected, is `None` (serde_json's
/// [`UsageCounts`] then decides). Later duplicate keys win, as with serde.
fn scan_usage(object: &[u8]) -> Option<(ResponseUsage, &[u8])> {
    let mut c = Cursor::new(object);
    c.expect(b"{")?;
    let mut usage = ResponseUsage::default();
    if !c.eat(b"}") {
        loop {
            c.expect(b"\"")?;
            let (key, escaped) = c.string()?;
            if escaped {
                return None;
            }
            c.expect(b":")?;
            match key {
                b"prompt_tokens" => usage.prompt_tokens = Some(c.uint()?),
                b"completion_tokens" => usage.completion_tokens = Some(c.uint()?),
                _ => c.skip_value(1)?,
            }
            if c.eat(b"}") {
                break;
            }
            c.expect(b",")?;
        }
    }
    Some((usage, c.rest()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
            // The older layout (counts only in the response): these tests are about finding them there.
            prompt_tokens: None,
            completion_tokens: None,
            started_at: "t".into(),
            latency_ms: 9,
            first_byte_ms: Some(4),
            not_before_ms: Some(1_767_225_600_123),
            source: None,
            origin: Default::default(),
            usage_flag: None,
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
        assert_eq!(parsed.not_before_ms, full.not_before_ms);
        assert_eq!(parsed.usage(), full.usage());
        Some(parsed)
    }

    fn usage(prompt: u64, completion: u64) -> ResponseUsage {
        ResponseUsage {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
        }
    }

    #[test]
    fn counts_in_the_prefix_spare_the_search_of_the_bodies() {
        // The response's usage is not its last member: the search declines the line (full
        // parse), but with the counts in the prefix the fast path needs no search.
        let response = r#"{"usage":{"prompt_tokens":3,"completion_tokens":4},"choices":[]}"#;
        let old = format!(
            r#"{{"id":"p","attempt":1,"status":"success","endpoint":"e","started_at":"t","latency_ms":1,"request":{{}},"response":{response}}}"#
        );
        assert!(LineParser::new().parse_fast(old.as_bytes()).is_none());
        assert_eq!(parse_line(old.as_bytes()).unwrap().usage(), usage(3, 4));
        let new = old.replace(
            r#","started_at""#,
            r#","prompt_tokens":3,"completion_tokens":4,"started_at""#,
        );
        assert_eq!(
            fast(new.as_bytes()).expect("fast path").usage(),
            usage(3, 4)
        );
        // Only one count in the prefix: the response decides, as in older lines.
        let half = old.replace(r#","started_at""#, r#","prompt_tokens":3,"started_at""#);
        assert!(LineParser::new().parse_fast(half.as_bytes()).is_none());
        assert_eq!(parse_line(half.as_bytes()).unwrap().usage(), usage(3, 4));
    }

    #[test]
    fn a_source_in_the_prefix_keeps_the_fast_path() {
        let line = r#"{"id":"p","attempt":1,"status":"success","endpoint":"e","prompt_tokens":3,"completion_tokens":4,"started_at":"t","latency_ms":1,"source":"glaive \"v2\"","request":{},"response":{}}"#;
        assert_eq!(
            fast(line.as_bytes()).expect("fast path").usage(),
            usage(3, 4)
        );
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

    #[test]
    fn error_class_names_are_serdes() {
        for (name, class) in ERROR_CLASSES {
            let written = serde_json::to_vec(&class).unwrap();
            assert_eq!(&written[1..written.len() - 1], name);
        }
    }

    #[test]
    fn the_scanner_reads_lines_as_written_and_declines_the_rest() {
        let response = serde_json::json!({"usage": {"prompt_tokens": 1, "completion_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": 0}, "cost": 1.5e-7, "x": [true, null, "s"]}});
        let line = serde_json::to_vec(&record(serde_json::json!({}), Some(response))).unwrap();
        let at = memmem::find(&line, REQUEST_KEY).unwrap();
        let small = scan_prefix(&line[..at]).expect("scanned");
        assert_eq!(
            (small.id.as_ref(), small.cost_usd),
            ("p\u{e9}1", Some(0.25))
        );
        let object = &line[memmem::rfind(&line, USAGE_KEY).unwrap() + USAGE_KEY.len() - 1..];
        assert_eq!(scan_usage(object), Some((usage(1, 2), &b"}}"[..])));
        assert_eq!(fast(&line).expect("fast path").response, usage(1, 2));
        // Whitespace, reordered keys, escaped ids, odd numbers: left to serde_json.
        for prefix in [
            r#"{"id": "p","attempt":1,"status":"success","endpoint":"e","started_at":"t","latency_ms":1"#,
            r#"{"attempt":1,"id":"p","status":"success","endpoint":"e","started_at":"t","latency_ms":1"#,
            r#"{"id":"p\"","attempt":1,"status":"success","endpoint":"e","started_at":"t","latency_ms":1"#,
            r#"{"id":"p","attempt":01,"status":"success","endpoint":"e","started_at":"t","latency_ms":1"#,
            r#"{"id":"p","attempt":1.0,"status":"success","endpoint":"e","started_at":"t","latency_ms":1"#,
            r#"{"id":"p","attempt":1,"status":"success","endpoint":"e\u0001","started_at":"t","latency_ms":1"#,
            r#"{"id":"p","attempt":1,"status":"success","endpoint":"e","cost_usd":1.,"started_at":"t","latency_ms":1"#,
            r#"{"id":"p","attempt":1,"status":"success","endpoint":"e","started_at":"t","latency_ms":1,"x":1"#,
        ] {
            assert!(scan_prefix(prefix.as_bytes()).is_none(), "{prefix}");
        }
        for object in [
            r#"{"prompt_tokens":-1}}}"#,
            r#"{"prompt_tokens":1.0}}}"#,
            r#"{"prompt_tokens": 1}}}"#,
            r#"{"prompt_tokens":null}}}"#,
            r#"{"x":01}}}"#,
            r#"{"x":[1,]}}}"#,
        ] {
            assert!(scan_usage(object.as_bytes()).is_none(), "{object}");
        }
    }

    fn count() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            4 => any::<u64>().prop_map(serde_json::Value::from),
            1 => any::<i64>().prop_map(serde_json::Value::from),
            1 => (0.0f64..1e20).prop_map(serde_json::Value::from),
            1 => Just(serde_json::Value::Null),
            1 => "[a-z]{0,3}".prop_map(serde_json::Value::from),
        ]
    }

    fn a_record() -> impl Strategy<Value = super::super::Record> {
        let class = proptest::sample::select(ERROR_CLASSES.map(|(_, c)| c).to_vec());
        let status =
            proptest::sample::select(vec![Status::Success, Status::Failed, Status::Skipped]);
        let usage = (
            count(),
            count(),
            proptest::option::of(any::<f64>()),
            "\\PC{0,4}",
        )
            .prop_map(|(p, c, cost, s)| {
                serde_json::json!({"prompt_tokens": p, "completion_tokens": c,
                "details": {"cost": cost, "s": s, "a": [1, true, null, {}]}})
            });
        let response = proptest::option::of((usage, "\\PC{0,8}").prop_map(|(usage, text)| {
            serde_json::json!({"choices": [{"message": {"content": text}}], "usage": usage})
        }));
        let text = || "(\\PC|[\"\\\\\u{1}\n]){0,12}";
        (
            (text(), any::<u32>(), status, proptest::option::of(class)),
            (proptest::option::of(text()), text(), proptest::option::of(any::<u16>())),
            (proptest::option::of(text()), proptest::option::of(-1e9f64..1e9), text()),
            (any::<u64>(), proptest::option::of(any::<u64>()), response, text()),
            (
                proptest::option::of(any::<u64>()),
                proptest::option::of(any::<u64>()),
                proptest::option::of(any::<u64>()),
            ),
        )
            .prop_map(|((id, attempt, status, error_class), (error, endpoint, http_status),
                        (provider, cost_usd, started_at), (latency_ms, first_byte_ms, response, content),
                        (not_before_ms, prompt_tokens, completion_tokens))| {
                super::super::Record {
                    id, attempt, status, error_class, error, endpoint, http_status, provider,
                    cost_usd, prompt_tokens, completion_tokens, started_at, latency_ms,
                    first_byte_ms, not_before_ms, source: None, origin: Default::default(), usage_flag: None,
                    request: serde_json::json!({"messages": [{"role": "user", "content": content}]}),
                    response,
                }
            })
    }

    proptest! {
        /// Whatever the scanner accepts it reads as serde_json does; and it accepts every record
        /// whose strings need no `\u` escape and whose id needs none at all.
        #[test]
        fn scanner_agrees_with_serde(record in a_record()) {
            let line = serde_json::to_vec(&record).unwrap();
            let parsed = fast(&line).expect("fast path");
            prop_assert_eq!(parsed.id.as_ref(), record.id.as_str());
            let at = memmem::find(&line, REQUEST_KEY).unwrap();
            let plain = |s: &str| !s.bytes().any(|b| b < 0x20 && !b"\x08\x0c\n\r\t".contains(&b));
            let strings = [Some(&record.endpoint), record.error.as_ref(), record.provider.as_ref(),
                Some(&record.started_at)];
            if !record.id.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\')
                && strings.iter().flatten().all(|s| plain(s))
            {
                prop_assert!(scan_prefix(&line[..at]).is_some());
            }
        }
    }
}
