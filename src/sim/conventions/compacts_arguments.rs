//! The provider re-serializes each call's arguments as compact JSON (Groq and Together on real
//! traffic: `{"a":2,"b":3}` where the model wrote `{"a": 2, "b": 3}`), Python's
//! `json.dumps(json.loads(a), separators=(",", ":"))`: non-ASCII escaped (`ascii`, Groq) or
//! kept (Together). Arguments that are not JSON are sent as they were.

use crate::pyjson::{dumps_json, DumpOptions};

/// How the arguments are re-serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
    /// `ensure_ascii=False`.
    Unicode,
    /// `ensure_ascii=True`: every non-ASCII character as `\uXXXX`.
    Ascii,
}

impl Compaction {
    /// `compacts_arguments` (`None`) or `compacts_arguments=ascii`.
    pub fn parse(value: Option<&str>) -> Result<Compaction, String> {
        match value {
            None => Ok(Compaction::Unicode),
            Some("ascii") => Ok(Compaction::Ascii),
            Some(other) => Err(format!(
                "compacts_arguments={other:?}: expected compacts_arguments or compacts_arguments=ascii"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compaction::Unicode => "compacts_arguments",
            Compaction::Ascii => "compacts_arguments=ascii",
        }
    }

    /// The arguments as the provider sends them.
    pub fn apply(self, arguments: &str) -> String {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(arguments) else {
            return arguments.to_string();
        };
        let options = DumpOptions {
            ensure_ascii: self == Compaction::Ascii,
            separators: Some((",".to_string(), ":".to_string())),
            ..DumpOptions::default()
        };
        dumps_json(&value, &options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_as_python_writes_it() {
        // json.dumps(json.loads(a), separators=(",", ":"), ensure_ascii=...)
        let args = r#"{"weight": 70, "height": 1.75, "city": "Zürich"}"#;
        assert_eq!(
            Compaction::Unicode.apply(args),
            r#"{"weight":70,"height":1.75,"city":"Zürich"}"#
        );
        assert_eq!(
            Compaction::Ascii.apply(args),
            r#"{"weight":70,"height":1.75,"city":"Z\u00fcrich"}"#
        );
        assert_eq!(Compaction::Ascii.apply("{not json"), "{not json");
    }
}
