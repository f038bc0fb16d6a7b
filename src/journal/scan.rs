//! Fast parsing of journal lines for the resume index: only the fields resume needs.
//!
//! A resume must be ready in a small multiple of the time `wc -l` takes on the journal, so lines
//! are not deserialized into full [`super::Record`]s. [`IndexLine`] borrows `id` from the buffer,
//! reads `status`, `error_class`, `attempt`, `cost_usd` and `response.usage` token counts, and lets
//! serde_json skip everything else (the request and the response body) without building values.
//! Skipped parts are still syntax-checked, so a corrupt line is detected wherever the damage is.
//! `response` may be any JSON (a record of a malformed answer keeps whatever came back), so the
//! usage readers accept any shape and take numbers only where they make sense.

use std::borrow::Cow;
use std::fmt;

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

/// Parse one line (without its newline).
pub(crate) fn parse_line(line: &[u8]) -> Result<IndexLine<'_>, serde_json::Error> {
    serde_json::from_slice(line)
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

    #[test]
    fn syntax_errors_in_skipped_parts_are_caught() {
        let line = br#"{"id":"p","status":"success","request":{"messages":[}],"response":null}"#;
        assert!(parse_line(line).is_err());
        let torn = br#"{"id":"p","status":"success","request":{"mess"#;
        assert!(parse_line(torn).is_err());
    }
}
