//! The door: what an answer may be for `generate` to journal it as a success, and the parse every
//! reader of the journal (`build`, `verify`, `export`, resume) uses — one set of limits at both ends.
//!
//! Readers parse journal lines with serde_json ([`parse_line`]), whose recursion limit refuses
//! nesting deeper than [`MAX_LINE_DEPTH`]. An answer sits one level down in its record, so the
//! door ([`admit`]) refuses answers nested deeper than [`MAX_ANSWER_DEPTH`], larger than the run's
//! maximum answer size, or that serde_json would not read as a value (a number out of range, a
//! lone surrogate escape) — the borrowed view in `facts.rs` skips such parts unread. It checks with
//! the readers' own parser, so what it admits they read.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::{ApiError, ErrorClass};

/// Deepest nesting of arrays and objects serde_json parses: its recursion limit (128) counts down
/// once per level and refuses when it reaches zero. Every journal reader parses with it.
pub const MAX_LINE_DEPTH: usize = 127;

/// Deepest nesting of an answer: it is the value of the `response` field of its journal line.
pub const MAX_ANSWER_DEPTH: usize = MAX_LINE_DEPTH - 1;

/// Default largest answer, in bytes: a non-streamed body, a single SSE line or event, an answer
/// assembled from a stream. Far above any real completion; bounds memory per request in flight.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 32 << 20;

/// How many times the maximum answer size a parsed tree (`serde_json::Value`) may take in
/// memory. A tree takes about its text's size when strings dominate, as in real answers; a body
/// of small numbers takes thirty-six times its size, so trees are measured before they are built.
pub const TREE_FACTOR: usize = 2;

/// Parse one journal line (or any JSON text a reader reads) with the readers' limits. The line
/// is checked as UTF-8 once (SIMD) and parsed as `&str`: `from_slice` validates every string on
/// its own, slower on long non-ASCII answers. A line that is not UTF-8 goes through `from_slice`
/// for serde_json's usual error message.
pub fn parse_line<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// Why [`check`] refused a JSON text.
#[derive(Debug)]
pub enum Refused {
    /// Larger than the maximum (its size, the maximum).
    TooLarge(usize, usize),
    /// Nested deeper than [`MAX_ANSWER_DEPTH`].
    TooDeep,
    /// Not a value serde_json reads.
    NotJson(serde_json::Error),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::TooLarge(size, max) => {
                write!(
                    f,
                    "answer of {size} bytes exceeds the maximum of {max} bytes"
                )
            }
            Refused::TooDeep => write!(
                f,
                "answer nests deeper than {MAX_ANSWER_DEPTH} levels (journal readers stop at \
                 {MAX_LINE_DEPTH})"
            ),
            Refused::NotJson(e) => write!(f, "answer is not JSON the readers parse ({e})"),
        }
    }
}

/// An answer [`check`] admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// About the memory its parsed tree would take ([`tree_size`]'s measure).
    pub tree_bytes: usize,
}

impl Checked {
    /// Whether its tree may be built under the limit `max_bytes` ([`TREE_FACTOR`]).
    pub fn tree_fits(&self, max_bytes: usize) -> bool {
        self.tree_bytes <= max_bytes.saturating_mul(TREE_FACTOR)
    }
}

/// Check an answer's JSON text against the limits: at most `max_bytes`, nesting at most
/// [`MAX_ANSWER_DEPTH`], and a value serde_json parses (checked without building it).
pub fn check(text: &str, max_bytes: usize) -> Result<Checked, Refused> {
    if text.len() > max_bytes {
        return Err(Refused::TooLarge(text.len(), max_bytes));
    }
    let too_deep = Cell::new(false);
    let tree = Cell::new(0usize);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = Valid {
        depth: 0,
        too_deep: &too_deep,
        tree: &tree,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    match parsed {
        Ok(()) => Ok(Checked {
            tree_bytes: tree.get(),
        }),
        Err(_) if too_deep.get() => Err(Refused::TooDeep),
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => Err(Refused::TooDeep),
        Err(e) => Err(Refused::NotJson(e)),
    }
}

/// [`check`] as the client's error: over a limit is [`ErrorClass::OverLimit`], not JSON the
/// readers parse is [`ErrorClass::Malformed`].
pub fn admit(text: &str, max_bytes: usize) -> Result<Checked, ApiError> {
    check(text, max_bytes).map_err(refusal)
}

/// The client's error for a refused answer.
pub fn refusal(refused: Refused) -> ApiError {
    let class = match refused {
        Refused::TooLarge(..) | Refused::TooDeep => ErrorClass::OverLimit,
        Refused::NotJson(_) => ErrorClass::Malformed,
    };
    ApiError::new(class, refused.to_string())
}

/// About the memory a parsed tree takes: a `Value` per value and per key, plus string bytes.
pub fn tree_size(value: &Value) -> usize {
    const NODE: usize = std::mem::size_of::<Value>();
    match value {
        Value::String(s) => NODE + s.len(),
        Value::Array(items) => NODE + items.iter().map(tree_size).sum::<usize>(),
        Value::Object(map) => {
            NODE + map
                .iter()
                .map(|(k, v)| NODE + k.len() + tree_size(v))
                .sum::<usize>()
        }
        _ => NODE,
    }
}

/// The error of an answer whose parsed tree would take more than the limit allows.
pub fn tree_too_large(what: &str, tree_bytes: usize, max_bytes: usize) -> ApiError {
    ApiError::new(
        ErrorClass::OverLimit,
        format!(
            "{what} would take about {tree_bytes} bytes parsed, over {TREE_FACTOR} times the \
             maximum answer size of {max_bytes} bytes (--max-answer-mb)"
        ),
    )
}

/// Whether a parsed value nests at most [`MAX_ANSWER_DEPTH`] deep (so a journal line holding it
/// parses). Values from serde_json nest at most [`MAX_LINE_DEPTH`]: the recursion is bounded.
pub fn fits(value: &Value) -> bool {
    fn depth_within(value: &Value, left: usize) -> bool {
        match value {
            Value::Array(items) => left > 0 && items.iter().all(|v| depth_within(v, left - 1)),
            Value::Object(map) => left > 0 && map.values().all(|v| depth_within(v, left - 1)),
            _ => true,
        }
    }
    depth_within(value, MAX_ANSWER_DEPTH)
}

/// The error of an answer over the size limit while it is still being read.
pub fn too_large(what: &str, max_bytes: usize) -> ApiError {
    ApiError::new(
        ErrorClass::OverLimit,
        format!("{what} exceeds the maximum answer size of {max_bytes} bytes (--max-answer-mb)"),
    )
}

/// A JSON value, visited as serde_json parses it into a `Value` (numbers in range, strings
/// decoded) without keeping it, its depth counted.
struct Valid<'c> {
    depth: usize,
    too_deep: &'c Cell<bool>,
    /// [`tree_size`] of what was visited so far.
    tree: &'c Cell<usize>,
}

impl Valid<'_> {
    fn nested(&self) -> Result<Valid<'_>, ()> {
        if self.depth >= MAX_ANSWER_DEPTH {
            self.too_deep.set(true);
            return Err(());
        }
        Ok(Valid {
            depth: self.depth + 1,
            too_deep: self.too_deep,
            tree: self.tree,
        })
    }
}

impl<'de> DeserializeSeed<'de> for Valid<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.tree
            .set(self.tree.get() + std::mem::size_of::<Value>());
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Valid<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        self.tree.set(self.tree.get() + s.len());
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self
            .nested()
            .map_err(|()| serde::de::Error::custom("too deep"))?;
        while seq
            .next_element_seed(Valid {
                depth: inner.depth,
                too_deep: inner.too_deep,
                tree: inner.tree,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self
            .nested()
            .map_err(|()| serde::de::Error::custom("too deep"))?;
        while let Some(Key(len)) = map.next_key::<Key>()? {
            inner
                .tree
                .set(inner.tree.get() + std::mem::size_of::<Value>() + len);
            map.next_value_seed(Valid {
                depth: inner.depth,
                too_deep: inner.too_deep,
                tree: inner.tree,
            })?;
        }
        Ok(())
    }
}

/// An object key, decoded as a `Value`'s keys are (escapes checked), not kept: its length.
struct Key(usize);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E>(self, s: &str) -> Result<Key, E> {
                Ok(Key(s.len()))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// The limit is serde_json's own: a line nested `MAX_LINE_DEPTH` deep parses, one more not.
    #[test]
    fn line_depth_is_serde_json_recursion_limit() {
        assert!(parse_line::<Value>(nested(MAX_LINE_DEPTH).as_bytes()).is_ok());
        let err = parse_line::<Value>(nested(MAX_LINE_DEPTH + 1).as_bytes()).unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");
    }

    /// What the door admits, a journal line holding it parses; one level more is refused.
    #[test]
    fn admitted_answers_parse_inside_their_record() {
        let deepest = format!(
            r#"{{"choices":[{{"message":{{"content":"x","a":{}}}}}]}}"#,
            nested(MAX_ANSWER_DEPTH - 4)
        );
        check(&deepest, usize::MAX).unwrap();
        let line = format!(r#"{{"id":"p","response":{deepest}}}"#);
        assert!(serde_json::from_str::<Value>(&line).is_ok());
        let deeper = deepest.replacen("[1]", "[[1]]", 1);
        assert!(matches!(check(&deeper, usize::MAX), Err(Refused::TooDeep)));
        let line = format!(r#"{{"id":"p","response":{deeper}}}"#);
        assert!(serde_json::from_str::<Value>(&line).is_err());
        let value: Value = serde_json::from_str(&deepest).unwrap();
        assert!(fits(&value));
        let value: Value = serde_json::from_str(&deeper).unwrap();
        assert!(!fits(&value));
        let very = nested(100_000);
        assert!(matches!(check(&very, usize::MAX), Err(Refused::TooDeep)));
        assert_eq!(
            admit(&very, usize::MAX).unwrap_err().class,
            ErrorClass::OverLimit
        );
    }

    /// Parts the borrowed view skips unread are checked as a `Value` parse would.
    #[test]
    fn refuses_what_a_value_parse_refuses() {
        for text in [
            r#"{"a":1e400}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"\ud800":1}"#,
            r#"{"a":1} x"#,
            r#"{"a":"#,
        ] {
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
            let refused = check(text, usize::MAX);
            assert!(matches!(refused, Err(Refused::NotJson(_))), "{text}");
            assert_eq!(
                admit(text, usize::MAX).unwrap_err().class,
                ErrorClass::Malformed
            );
        }
        let text = r#"{"a":1e300,"b":"\ud83d\ude00","c":[null,true,-1,18446744073709551616]}"#;
        assert!(serde_json::from_str::<Value>(text).is_ok());
        check(text, usize::MAX).unwrap();
    }

    /// The tree measure while checking is the measure of the tree built.
    #[test]
    fn the_checked_tree_size_is_the_built_trees() {
        for text in [
            r#"{"a":[1,2,{"b":"héllo","c":null}],"d":"x\ny"}"#,
            "[0,0,0,0]",
            r#""s""#,
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                check(text, usize::MAX).unwrap().tree_bytes,
                tree_size(&value),
                "{text}"
            );
        }
        let numbers = format!("[{}0]", "0,".repeat(1000));
        let checked = check(&numbers, numbers.len()).unwrap();
        assert!(!checked.tree_fits(numbers.len()));
    }

    #[test]
    fn refuses_answers_over_the_size() {
        let text = r#"{"a":"0123456789"}"#;
        check(text, text.len()).unwrap();
        assert!(matches!(
            check(text, text.len() - 1),
            Err(Refused::TooLarge(18, 17))
        ));
    }
}
