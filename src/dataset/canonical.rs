//! The canonical JSON that prompt ids hash: exactly what Python writes with
//! `json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
//!
//! Matching Python byte for byte lets anyone recompute an id with `hashlib` and no draftgen.
//! It is [`crate::pyjson`] (the same `json.dumps` the chat templates' `tojson` uses) with
//! sorted keys and compact separators.

use serde_json::Value;

use crate::pyjson::{dumps_json, DumpOptions};

/// Canonical compact JSON text of `value` (see the module doc).
pub fn canonical_json(value: &Value) -> String {
    dumps_json(
        value,
        &DumpOptions {
            separators: Some((",".into(), ":".into())),
            sort_keys: true,
            ..DumpOptions::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Expected strings are Python 3.11's `repr(float(x))`.
    #[test]
    fn floats_match_python_repr() {
        let cases = [
            (3.0, "3.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-9, "1.5e-09"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e300, "1e+300"),
            (271.5, "271.5"),
        ];
        for (f, want) in cases {
            assert_eq!(canonical_json(&json!(f)), want, "{f}");
        }
    }

    /// Expected text from Python:
    /// `json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
    #[test]
    fn canonical_matches_python_json_dumps() {
        let value =
            json!({"b": [1, 2.0, {"z": null, "a": true}], "a": "é\"\\\n\u{1}\u{7f}😀", "A": 1e-7});
        // DEL (U+007F) is not escaped by Python either.
        let want = r#"{"A":1e-07,"a":"é\"\\\n\u0001"#.to_string()
            + "\u{7f}"
            + r#"😀","b":[1,2.0,{"a":true,"z":null}]}"#;
        assert_eq!(canonical_json(&value), want);
    }
}
