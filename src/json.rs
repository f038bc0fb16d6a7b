//! A JSON value borrowed from the text it was parsed from: what the native renderers read.
//!
//! `serde_json::Value` (with `preserve_order`) builds an `IndexMap` per object, hashing every key,
//! and allocates every string. `draftgen render` parses each input line only to read it once, and
//! with the native renderers that parse had become the largest per-line cost (reading lines as
//! `Json` instead took `draftgen render` without tokenizing from 13.5 to 9.8 µs per qwen3 parity
//! conversation). [`Json`] keeps objects as entry lists in input order and strings borrowed unless
//! they had escapes. It converts from and to `serde_json::Value` for the library API and the
//! template path, with the same meaning: for a repeated key, the last value at the first key's
//! place, as `serde_json::Map` does.

use rustc_hash::FxHashMap;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::fmt;

/// Python's truth value of a `serde_json::Value` (what `if x:` tests: `{}`, `[]`, `""`, `0`,
/// `false`, `null` are false), the rule [`Json::truthy`] applies to a [`Json`].
pub fn python_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A JSON value whose strings may borrow from the parsed text.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// A JSON object: its entries in input order, keys unique.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Object<'a> {
    entries: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> Object<'a> {
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> {
        self.entries.iter().map(|(k, v)| (k.as_ref(), v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a> Json<'a> {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(object) => Some(object),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// Python's truth value (what `{% if x %}` tests).
    pub fn truthy(&self) -> bool {
        match self {
            Json::Null => false,
            Json::Bool(b) => *b,
            Json::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
            Json::String(s) => !s.is_empty(),
            Json::Array(items) => !items.is_empty(),
            Json::Object(object) => !object.is_empty(),
        }
    }

    /// A view of a `serde_json::Value`, borrowing its strings.
    pub fn from_value(value: &'a Value) -> Self {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(Cow::Borrowed(s)),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(Object {
                entries: map
                    .iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Json::from_value(v)))
                    .collect(),
            }),
        }
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    /// The value with every string owned.
    pub fn into_owned(self) -> Json<'static> {
        match self {
            Json::Null => Json::Null,
            Json::Bool(b) => Json::Bool(b),
            Json::Number(n) => Json::Number(n),
            Json::String(s) => Json::String(Cow::Owned(s.into_owned())),
            Json::Array(items) => Json::Array(items.into_iter().map(Json::into_owned).collect()),
            Json::Object(object) => Json::Object(Object {
                entries: object
                    .entries
                    .into_iter()
                    .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                    .collect(),
            }),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E>(self, x: f64) -> Result<Json<'de>, E> {
        // As `serde_json::Value` does: a non-finite float (not valid JSON) is `null`.
        Ok(Number::from_f64(x).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_string())))
    }

    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut entries: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        // A key is looked for among the earlier ones only when its (length, first byte, last
        // byte) signature was seen before, which it almost never was; past a few keys, through
        // an index instead of a scan.
        let mut signatures = 0u64;
        let mut index: Option<FxHashMap<String, usize>> = None;
        while let Some(Key(key)) = map.next_key()? {
            let value: Json<'de> = map.next_value()?;
            let bytes = key.as_bytes();
            let signature = bytes.len()
                ^ usize::from(bytes.first().copied().unwrap_or(0)).rotate_left(2)
                ^ usize::from(bytes.last().copied().unwrap_or(0)).rotate_left(4);
            let bit = 1u64 << (signature % 64);
            let maybe_seen = signatures & bit != 0;
            signatures |= bit;
            let seen = match &index {
                Some(index) => index.get(key.as_ref()).copied(),
                None if maybe_seen => entries.iter().position(|(k, _)| *k == key),
                None => None,
            };
            if let Some(at) = seen {
                entries[at].1 = value;
                continue;
            }
            if let Some(index) = &mut index {
                index.insert(key.to_string(), entries.len());
            } else if entries.len() == 16 {
                let mut built: FxHashMap<String, usize> = entries
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.to_string(), i))
                    .collect();
                built.insert(key.to_string(), entries.len());
                index = Some(built);
            }
            entries.push((key, value));
        }
        Ok(Json::Object(Object { entries }))
    }
}

/// An object key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }

            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }

            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |x| x.is_finite())
                .prop_map(Value::from),
            "\\PC{0,8}|[\"\\\\\u{0}-\u{1f}é😀]{0,4}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 48, 20, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                // Up to 20 keys, so objects past the index threshold occur.
                prop::collection::vec(("[a-c]{1,2}|\\PC{1,3}", inner), 0..20)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Parsing into `Json` means what parsing into `Value` means, including repeated keys.
        #[test]
        fn parses_like_serde_json(value in json_value(), repeat in any::<bool>()) {
            let mut text = serde_json::to_string(&value).unwrap();
            if repeat {
                // The same entries again, with other values: the last ones win in place.
                if let (Value::Object(map), true) = (&value, text.len() > 2) {
                    for (key, _) in map {
                        text.insert_str(
                            text.len() - 1,
                            &format!(",{}:{}", serde_json::to_string(key).unwrap(), key.len()),
                        );
                    }
                }
            }
            let json: Json = serde_json::from_str(&text).unwrap();
            let want: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(&json.to_value(), &want);
            prop_assert_eq!(Json::from_value(&want).to_value(), want.clone());
            prop_assert_eq!(json.into_owned().to_value(), want);
        }
    }

    #[test]
    fn borrows_strings_without_escapes() {
        let text = r#"{"role": "user", "content": "a\nb"}"#;
        let json: Json = serde_json::from_str(text).unwrap();
        let object = json.as_object().unwrap();
        assert!(matches!(
            object.get("role"),
            Some(Json::String(Cow::Borrowed("user")))
        ));
        assert!(matches!(object.get("content"), Some(Json::String(Cow::Owned(s))) if s == "a\nb"));
    }
}
