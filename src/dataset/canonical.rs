//! The canonical JSON that prompt ids hash: exactly what Python writes with
//! `json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
//!
//! Matching Python byte for byte lets anyone recompute an id with `hashlib` and no draftgen.
//! The three places serde_json differs are handled here: keys are sorted recursively (by code
//! point, as Python sorts `str`), floats use Python's `repr` (`1e-05`, `1e+16`, `3.0`), and
//! nothing else is escaped beyond what Python escapes with `ensure_ascii=False`.

use serde_json::Value;
use std::fmt::Write as _;

/// Canonical compact JSON text of `value` (see the module doc).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else if let Some(f) = n.as_f64() {
                out.push_str(&python_float_repr(f));
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Rust `str` ordering is byte order of UTF-8, which equals code point order.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// A JSON string as Python's encoder writes it with `ensure_ascii=False`.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest round-trip digits, in positional notation when the
/// decimal exponent is in `-4..16`, else `d.ddde±XX` (at least two exponent digits).
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    // Position of the decimal point relative to the digit string (Python's `decpt`).
    let decpt = exp + 1;
    let mut out = String::from(sign);
    if (-4 < decpt) && (decpt <= 16) {
        if decpt <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-decpt) as usize));
            out.push_str(&digits);
        } else {
            let decpt = decpt as usize;
            if digits.len() <= decpt {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', decpt - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..decpt]);
                out.push('.');
                out.push_str(&digits[decpt..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    out
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
            assert_eq!(python_float_repr(f), want, "{f}");
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
