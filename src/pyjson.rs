//! Python's `json.dumps` and `str()`/`repr()` as chat templates see them.
//!
//! transformers replaces Jinja's `tojson` with
//! `json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`, and Jinja2
//! prints values with Python's `str()`. Both reach the token stream, so both must be byte-exact:
//! insertion key order, `", "`/`": "` separators unless `separators=` is given (`","`/`": "` when
//! `indent` is set), no HTML escaping, Python's float repr (`1e-09`, `1e+16`, `1.0`, `-0.0`,
//! `Infinity`). Hand-written because no crate reproduces Python's float repr and separator rules;
//! serde_json's writer formats floats differently (`1e-9`) and has no `", "` separator mode.

use minijinja::value::{Value, ValueKind};
use std::fmt::Write as _;

use crate::json::Json;

/// The keyword arguments of `json.dumps` that templates use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpOptions {
    /// `ensure_ascii=True` escapes every non-ASCII character as `\uXXXX`.
    pub ensure_ascii: bool,
    /// `indent=`: `None` writes everything on one line; `Some("")` (indent 0) still breaks lines.
    pub indent: Option<String>,
    /// `separators=(item, key)`; `None` means Python's default for the given `indent`.
    pub separators: Option<(String, String)>,
    pub sort_keys: bool,
}

impl Default for DumpOptions {
    /// What transformers' `tojson` uses when the template passes no arguments.
    fn default() -> Self {
        Self {
            ensure_ascii: false,
            indent: None,
            separators: None,
            sort_keys: false,
        }
    }
}

/// A value `json.dumps` refuses (`TypeError: Object of type … is not JSON serializable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Object of type {0} is not JSON serializable")]
pub struct NotSerializable(pub String);

/// `json.dumps(value, **options)` over a template value.
pub fn dumps(value: &Value, options: &DumpOptions) -> Result<String, NotSerializable> {
    let (item_sep, key_sep) = match &options.separators {
        Some((item, key)) => (item.as_str(), key.as_str()),
        None if options.indent.is_some() => (",", ": "),
        None => (", ", ": "),
    };
    let mut writer = Writer {
        out: String::new(),
        options,
        item_sep,
        key_sep,
    };
    writer.value(value, 0)?;
    Ok(writer.out)
}

/// `json.dumps(value, **options)` over a JSON value (for code outside templates).
pub fn dumps_json(value: &serde_json::Value, options: &DumpOptions) -> String {
    let mut out = String::new();
    write_json(&mut out, &Json::from_value(value), options);
    out
}

/// [`dumps_json`] appended to `out`: what a template's `tojson` writes for the same value, without
/// converting it to a template value first (the native renderers' path).
pub fn write_json(out: &mut String, value: &Json, options: &DumpOptions) {
    let (item_sep, key_sep) = match &options.separators {
        Some((item, key)) => (item.as_str(), key.as_str()),
        None if options.indent.is_some() => (",", ": "),
        None => (", ", ": "),
    };
    let mut writer = JsonWriter {
        out,
        options,
        item_sep,
        key_sep,
    };
    writer.value(value, 0);
}

/// [`Writer`] over JSON values. Every JSON value is serializable, so nothing fails; numbers are
/// what the template sees after conversion: integers as written, floats by `float.__repr__`.
struct JsonWriter<'a, 'o> {
    out: &'o mut String,
    options: &'a DumpOptions,
    item_sep: &'a str,
    key_sep: &'a str,
}

impl JsonWriter<'_, '_> {
    fn value(&mut self, value: &Json, level: usize) {
        match value {
            Json::Null => self.out.push_str("null"),
            Json::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => {
                if let Some(i) = n.as_i64() {
                    let _ = write!(self.out, "{i}");
                } else if let Some(u) = n.as_u64() {
                    let _ = write!(self.out, "{u}");
                } else {
                    self.out
                        .push_str(&json_float(n.as_f64().unwrap_or(f64::NAN)));
                }
            }
            Json::String(s) => write_json_string(self.out, s, self.options.ensure_ascii),
            Json::Array(items) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(self.item_sep);
                    }
                    self.newline(level + 1);
                    self.value(item, level + 1);
                }
                if !items.is_empty() {
                    self.newline(level);
                }
                self.out.push(']');
            }
            Json::Object(map) => {
                self.out.push('{');
                if self.options.sort_keys {
                    // Python compares str by code point; UTF-8 byte order is the same order.
                    let mut entries: Vec<_> = map.iter().collect();
                    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    self.entries(entries.into_iter(), level);
                } else {
                    self.entries(map.iter(), level);
                }
                if !map.is_empty() {
                    self.newline(level);
                }
                self.out.push('}');
            }
        }
    }

    fn entries<'v, 'j: 'v>(
        &mut self,
        entries: impl Iterator<Item = (&'v str, &'v Json<'j>)>,
        level: usize,
    ) {
        for (i, (key, item)) in entries.enumerate() {
            if i > 0 {
                self.out.push_str(self.item_sep);
            }
            self.newline(level + 1);
            write_json_string(self.out, key, self.options.ensure_ascii);
            self.out.push_str(self.key_sep);
            self.value(item, level + 1);
        }
    }

    fn newline(&mut self, level: usize) {
        if let Some(indent) = &self.options.indent {
            self.out.push('\n');
            for _ in 0..level {
                self.out.push_str(indent);
            }
        }
    }
}

struct Writer<'a> {
    out: String,
    options: &'a DumpOptions,
    item_sep: &'a str,
    key_sep: &'a str,
}

impl Writer<'_> {
    fn value(&mut self, value: &Value, level: usize) -> Result<(), NotSerializable> {
        match value.kind() {
            ValueKind::None => self.out.push_str("null"),
            ValueKind::Bool => self
                .out
                .push_str(if value.is_true() { "true" } else { "false" }),
            ValueKind::Number => self.number(value),
            ValueKind::String => self.string(value.as_str().unwrap_or_default()),
            ValueKind::Seq | ValueKind::Iterable => self.seq(value, level)?,
            ValueKind::Map => self.map(value, level)?,
            ValueKind::Undefined => return Err(NotSerializable("Undefined".into())),
            ValueKind::Bytes => return Err(NotSerializable("bytes".into())),
            other => return Err(NotSerializable(other.to_string())),
        }
        Ok(())
    }

    fn number(&mut self, value: &Value) {
        if value.is_integer() {
            let _ = write!(self.out, "{value}");
        } else {
            let x = f64::try_from(value.clone()).unwrap_or(f64::NAN);
            self.out.push_str(&json_float(x));
        }
    }

    fn string(&mut self, s: &str) {
        write_json_string(&mut self.out, s, self.options.ensure_ascii);
    }

    fn newline(&mut self, level: usize) {
        if let Some(indent) = &self.options.indent {
            self.out.push('\n');
            for _ in 0..level {
                self.out.push_str(indent);
            }
        }
    }

    fn seq(&mut self, value: &Value, level: usize) -> Result<(), NotSerializable> {
        let items = value
            .try_iter()
            .map_err(|_| NotSerializable(value.kind().to_string()))?;
        let mut first = true;
        self.out.push('[');
        for item in items {
            if first {
                first = false;
            } else {
                self.out.push_str(self.item_sep);
            }
            self.newline(level + 1);
            self.value(&item, level + 1)?;
        }
        if !first {
            self.newline(level);
        }
        self.out.push(']');
        Ok(())
    }

    fn map(&mut self, value: &Value, level: usize) -> Result<(), NotSerializable> {
        let keys = value
            .try_iter()
            .map_err(|_| NotSerializable(value.kind().to_string()))?;
        let mut entries: Vec<(String, Value)> = Vec::new();
        for key in keys {
            let item = value
                .get_item(&key)
                .map_err(|_| NotSerializable("dict".into()))?;
            entries.push((json_key(&key)?, item));
        }
        if self.options.sort_keys {
            // Python compares str by code point; UTF-8 byte order is the same order.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
        }
        self.out.push('{');
        let mut first = true;
        for (key, item) in &entries {
            if first {
                first = false;
            } else {
                self.out.push_str(self.item_sep);
            }
            self.newline(level + 1);
            self.string(key);
            self.out.push_str(self.key_sep);
            self.value(item, level + 1)?;
        }
        if !first {
            self.newline(level);
        }
        self.out.push('}');
        Ok(())
    }
}

/// How `json.dumps` turns a dict key into a string (`True` → `true`, `None` → `null`, floats by repr).
fn json_key(key: &Value) -> Result<String, NotSerializable> {
    Ok(match key.kind() {
        ValueKind::String => key.as_str().unwrap_or_default().to_string(),
        ValueKind::Bool => (if key.is_true() { "true" } else { "false" }).to_string(),
        ValueKind::None => "null".to_string(),
        ValueKind::Number if key.is_integer() => key.to_string(),
        ValueKind::Number => json_float(f64::try_from(key.clone()).unwrap_or(f64::NAN)),
        other => {
            return Err(NotSerializable(format!(
                "keys must be str, int, float, bool or None, not {other}"
            )))
        }
    })
}

/// Python's JSON string escaping (`ESCAPE` / `ESCAPE_ASCII` in `json.encoder`).
pub fn write_json_string(out: &mut String, s: &str, ensure_ascii: bool) {
    if !ensure_ascii {
        write_json_string_utf8(out, s);
        return;
    }
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
            // ensure_ascii escapes everything outside ' '..='~' (so DEL too), as UTF-16 units.
            c if ensure_ascii && !(' '..='~').contains(&c) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// [`write_json_string`] with `ensure_ascii=False`: runs of characters that need no escape are
/// copied whole (only `"`, `\\` and C0 controls are escaped then).
fn write_json_string_utf8(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        // Every byte matched above is ASCII, so `i` is a character boundary.
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// A float as `json.dumps` writes it: `float.__repr__`, with `NaN`/`Infinity`/`-Infinity`.
pub fn json_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        float_repr(x)
    }
}

/// Python's `repr(float)`: the shortest round-tripping digits, positional notation when the
/// decimal exponent is in `-4..16`, else `d.ddde±XX` with at least two exponent digits; integral
/// values keep a `.0`. `nan`/`inf` as Python writes them.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits Python uses; only the layout differs.
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::from(sign);
    if (-4..16).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            for _ in 0..(-exponent - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let point = exponent as usize + 1;
            if digits.len() <= point {
                out.push_str(&digits);
                for _ in digits.len()..point {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        );
    }
    out
}

/// Python's `str(value)` as Jinja2 prints `{{ value }}`: `None`, `True`, float repr, and
/// `repr()` inside lists and dicts.
pub fn py_str(value: &Value) -> String {
    match value.kind() {
        ValueKind::String => value.as_str().unwrap_or_default().to_string(),
        ValueKind::Undefined => String::new(),
        _ => py_repr(value),
    }
}

/// Python's `repr(value)` for the value kinds templates handle.
pub fn py_repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, value);
    out
}

fn write_repr(out: &mut String, value: &Value) {
    match value.kind() {
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number if value.is_integer() => {
            let _ = write!(out, "{value}");
        }
        ValueKind::Number => out.push_str(&float_repr(
            f64::try_from(value.clone()).unwrap_or(f64::NAN),
        )),
        ValueKind::String => write_str_repr(out, value.as_str().unwrap_or_default()),
        ValueKind::Map => {
            out.push('{');
            if let Ok(keys) = value.try_iter() {
                for (i, key) in keys.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_repr(out, &key);
                    out.push_str(": ");
                    write_repr(out, &value.get_item(&key).unwrap_or_default());
                }
            }
            out.push('}');
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let (open, close) = if value.is_tuple() {
                ('(', ')')
            } else {
                ('[', ']')
            };
            out.push(open);
            let mut count = 0;
            if let Ok(items) = value.try_iter() {
                for item in items {
                    if count > 0 {
                        out.push_str(", ");
                    }
                    write_repr(out, &item);
                    count += 1;
                }
            }
            if value.is_tuple() && count == 1 {
                out.push(',');
            }
            out.push(close);
        }
        _ => {
            let _ = write!(out, "{value}");
        }
    }
}

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`.
fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if !py_printable(c) => {
                let _ = match c as u32 {
                    n if n < 0x100 => write!(out, "\\x{n:02x}"),
                    n if n < 0x10000 => write!(out, "\\u{n:04x}"),
                    n => write!(out, "\\U{n:08x}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python's `str.isprintable()` above U+009F for assigned characters (Unicode 14, Python 3.11's
/// `unicodedata`): false for the separators (Zs but the space, Zl, Zp), format characters (Cf)
/// and private use (Co), which `repr` escapes. Unassigned code points (Cn), which Python escapes
/// too, are not known here and are written as they are.
fn py_printable(c: char) -> bool {
    !matches!(
        c as u32,
        0xA0 | 0xAD
            | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x1680
            | 0x180E
            | 0x2000..=0x200F
            | 0x2028..=0x202F
            | 0x205F..=0x2064
            | 0x2066..=0x206F
            | 0x3000
            | 0xE000..=0xF8FF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x13438
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xF0000..=0xFFFFD
            | 0x100000..=0x10FFFD
    )
}

#[cfg(test)]
mod tests {
    //! Expected strings are Python 3.11 output, pasted verbatim (see each test's comment).
    use super::*;
    use serde_json::json;

    fn d(v: serde_json::Value) -> String {
        dumps_json(&v, &DumpOptions::default())
    }

    #[test]
    fn str_repr_escapes_what_python_does_not_print() {
        // python3 -c "print(repr('a\u200db\u2028\xa0\U000f0000é'))"
        let value = Value::from("a\u{200d}b\u{2028}\u{a0}\u{f0000}é");
        assert_eq!(py_repr(&value), r"'a\u200db\u2028\xa0\U000f0000é'");
    }

    #[test]
    fn float_repr_matches_python() {
        // python3 -c "print([repr(x) for x in [1e-09, 1e16, 0.1, 1.0, -0.0, 1e15, 0.0001, 1e-05,
        //   123456789012345678.0, 1.5e300, 2.5, 100.0, 1e22, 5e-324, 0.30000000000000004]])"
        let cases = [
            (1e-09, "1e-09"),
            (1e16, "1e+16"),
            (0.1, "0.1"),
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (1e-05, "1e-05"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1.5e300, "1.5e+300"),
            (2.5, "2.5"),
            (100.0, "100.0"),
            (1e22, "1e+22"),
            (5e-324, "5e-324"),
            (0.30000000000000004, "0.30000000000000004"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "{x}");
        }
        // json.dumps([float('inf'), float('-inf'), float('nan')]) == '[Infinity, -Infinity, NaN]'
        assert_eq!(json_float(f64::INFINITY), "Infinity");
        assert_eq!(json_float(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(json_float(f64::NAN), "NaN");
    }

    #[test]
    fn default_separators_and_insertion_order() {
        // json.dumps({"b": 1, "a": [1, 2.0, None, True], "c": {}}, ensure_ascii=False)
        assert_eq!(
            d(json!({"b": 1, "a": [1, 2.0, null, true], "c": {}})),
            r#"{"b": 1, "a": [1, 2.0, null, true], "c": {}}"#
        );
    }

    #[test]
    fn no_html_escaping_and_unicode_kept() {
        // json.dumps({"t": "<b>&'x'</b> é 日本 😀"}, ensure_ascii=False)
        assert_eq!(
            d(json!({"t": "<b>&'x'</b> é 日本 😀"})),
            r#"{"t": "<b>&'x'</b> é 日本 😀"}"#
        );
    }

    #[test]
    fn control_characters() {
        // json.dumps("a\"b\\c\n\r\t\b\f\x00\x1f\x7f", ensure_ascii=False)
        assert_eq!(
            d(json!("a\"b\\c\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}")),
            "\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0000\\u001f\u{7f}\""
        );
    }

    #[test]
    fn ensure_ascii_escapes() {
        // json.dumps("é😀\x7f", ensure_ascii=True) == '"\\u00e9\\ud83d\\ude00\\u007f"'
        let options = DumpOptions {
            ensure_ascii: true,
            ..DumpOptions::default()
        };
        assert_eq!(
            dumps_json(&json!("é😀\u{7f}"), &options),
            r#""\u00e9\ud83d\ude00\u007f""#
        );
    }

    #[test]
    fn compact_separators_and_sort_keys() {
        // json.dumps({"b": 1, "a": {"d": 1, "c": [1, 2]}}, separators=(',', ':'), sort_keys=True)
        let options = DumpOptions {
            separators: Some((",".into(), ":".into())),
            sort_keys: true,
            ..DumpOptions::default()
        };
        assert_eq!(
            dumps_json(&json!({"b": 1, "a": {"d": 1, "c": [1, 2]}}), &options),
            r#"{"a":{"c":[1,2],"d":1},"b":1}"#
        );
    }

    #[test]
    fn indent() {
        // json.dumps({"a": [1, {"b": None}], "c": [], "d": {}}, indent=2)
        let options = DumpOptions {
            indent: Some("  ".into()),
            ..DumpOptions::default()
        };
        assert_eq!(
            dumps_json(&json!({"a": [1, {"b": null}], "c": [], "d": {}}), &options),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": [],\n  \"d\": {}\n}"
        );
        // json.dumps([1, 2], indent=0) == '[\n1,\n2\n]'
        let options = DumpOptions {
            indent: Some(String::new()),
            ..DumpOptions::default()
        };
        assert_eq!(dumps_json(&json!([1, 2]), &options), "[\n1,\n2\n]");
    }

    #[test]
    fn floats_inside_json() {
        // json.dumps([1e-09, 1e16, 0.5, -0.0, 12345.678])
        assert_eq!(
            d(json!([1e-09, 1e16, 0.5, -0.0, 12345.678])),
            "[1e-09, 1e+16, 0.5, -0.0, 12345.678]"
        );
    }

    proptest::proptest! {
        /// The direct JSON writer and the template's `tojson` (over the converted value) agree.
        #[test]
        fn json_writer_matches_template_values(
            value in json_value(),
            compact in proptest::bool::ANY,
            sort_keys in proptest::bool::ANY,
            indent in proptest::option::of(0usize..3),
        ) {
            let options = DumpOptions {
                separators: compact.then(|| (",".to_string(), ":".to_string())),
                sort_keys,
                indent: indent.map(|n| " ".repeat(n)),
                ..DumpOptions::default()
            };
            let template = dumps(&Value::from(minijinja::value::Serde(&value)), &options);
            proptest::prop_assert_eq!(Ok(dumps_json(&value, &options)), template);
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<f64>()
                .prop_filter("JSON has no NaN or infinities", |x| x.is_finite())
                .prop_map(serde_json::Value::from),
            "\\PC{0,8}|[\"\\\\\u{0}-\u{1f}\u{7f}é😀]{0,4}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::vec(("\\PC{0,4}", inner), 0..4).prop_map(|entries| {
                    serde_json::Value::Object(entries.into_iter().collect())
                }),
            ]
        })
    }

    #[test]
    fn python_str_and_repr() {
        // str(None), str(True), str([1, 'a', None, {'k': "it's"}]), str(1.0)
        assert_eq!(py_str(&Value::from(())), "None");
        assert_eq!(py_str(&Value::from(true)), "True");
        assert_eq!(
            py_str(&Value::from(minijinja::value::Serde(
                json!([1, "a", null, {"k": "it's"}])
            ))),
            r#"[1, 'a', None, {'k': "it's"}]"#
        );
        assert_eq!(py_str(&Value::from(1.0)), "1.0");
    }
}
