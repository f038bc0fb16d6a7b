//! JSON files: a top-level array is streamed element by element; an object wrapping exactly one
//! array of records (`{"data": [...]}`) yields that array; any other object is one record.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::ops::ControlFlow;
use std::path::Path;

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde_json::Value;

use super::{Container, RawRecord};
use crate::dataset::error::{DatasetError, Location, Position};

/// Keys that mark an object as one conversation record rather than a wrapper of records.
const RECORD_KEYS: &[&str] = &["messages", "conversations", "items", "chat"];

/// A `.json` file starting with `{`: one JSON document, or JSON Lines under a `.json` name?
pub(super) fn object_or_lines(path: &Path) -> Result<Container, DatasetError> {
    let file = File::open(path).map_err(|source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    // serde_json stops at the first byte after the first value, so JSON Lines fail fast here.
    match serde_json::from_reader::<_, de::IgnoredAny>(BufReader::new(file)) {
        Err(e) if e.to_string().starts_with("trailing characters") => Ok(Container::JsonLines),
        _ => Ok(Container::Json),
    }
}

pub(super) fn read<R: BufRead>(
    mut reader: R,
    shown: &str,
    sink: &mut dyn FnMut(RawRecord) -> ControlFlow<()>,
) -> io::Result<()> {
    match first_byte(&mut reader)? {
        None => {
            let location = Location::new(shown, Position::File);
            let _ = sink(RawRecord::bad(location, "file has no records"));
        }
        Some(b'[') => read_array(reader, shown, sink),
        Some(_) => read_document(reader, shown, sink),
    }
    Ok(())
}

/// The first byte that is not whitespace, left unconsumed; `None` for a blank file.
fn first_byte<R: BufRead>(reader: &mut R) -> io::Result<Option<u8>> {
    loop {
        let buf = reader.fill_buf()?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => return Ok(Some(buf[i])),
            None if buf.is_empty() => return Ok(None),
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}

/// A top-level array, streamed element by element so a large file is never held whole.
fn read_array<R: BufRead>(
    reader: R,
    shown: &str,
    sink: &mut dyn FnMut(RawRecord) -> ControlFlow<()>,
) {
    let mut elements = Elements {
        shown,
        sink,
        index: 0,
        stopped: false,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let result = (&mut elements).deserialize(&mut de).and_then(|()| de.end());
    if let Err(e) = result {
        if !elements.stopped {
            let location = Location::new(shown, Position::Element(elements.index));
            let _ = (elements.sink)(RawRecord::bad(
                location,
                format!("broken JSON ({e}); the rest of the file cannot be read"),
            ));
        }
    }
}

/// Any other document: an object wrapping one array of records yields those records, any other
/// object is one record, anything else is bad.
fn read_document<R: BufRead>(
    reader: R,
    shown: &str,
    sink: &mut dyn FnMut(RawRecord) -> ControlFlow<()>,
) {
    let file_location = Location::new(shown, Position::File);
    match serde_json::from_reader::<_, Value>(reader) {
        Ok(Value::Object(map)) => {
            let wrapped: Vec<&String> = map
                .iter()
                .filter(|(_, v)| v.as_array().is_some_and(|a| a.iter().all(Value::is_object)))
                .map(|(k, _)| k)
                .collect();
            let is_record = map.keys().any(|k| RECORD_KEYS.contains(&k.as_str()));
            match (wrapped.as_slice(), is_record) {
                ([key], false) => {
                    let key = (*key).clone();
                    if let Some(Value::Array(items)) = map.get(&key) {
                        for (i, item) in items.iter().enumerate() {
                            let location = Location::new(shown, Position::Element(i as u64));
                            if sink(RawRecord::ok(location, item.clone())).is_break() {
                                break;
                            }
                        }
                    }
                }
                _ => {
                    let location = Location::new(shown, Position::Element(0));
                    let _ = sink(RawRecord::ok(location, Value::Object(map)));
                }
            }
        }
        Ok(other) => {
            let _ = sink(RawRecord::bad(
                file_location,
                format!("expected a JSON array or object, found {}", kind(&other)),
            ));
        }
        Err(e) => {
            let _ = sink(RawRecord::bad(file_location, format!("broken JSON ({e})")));
        }
    }
}

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Streams a top-level array into the sink without collecting it.
struct Elements<'s> {
    shown: &'s str,
    sink: &'s mut dyn FnMut(RawRecord) -> ControlFlow<()>,
    index: u64,
    /// The sink asked to stop; the "error" that unwinds serde is ours, not the file's.
    stopped: bool,
}

impl<'de> DeserializeSeed<'de> for &mut Elements<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for &mut Elements<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(value) = seq.next_element::<Value>()? {
            let location = Location::new(self.shown, Position::Element(self.index));
            self.index += 1;
            if (self.sink)(RawRecord::ok(location, value)).is_break() {
                self.stopped = true;
                return Err(de::Error::custom("stopped by the reader's caller"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &str) -> Vec<String> {
        let mut out = Vec::new();
        read(input.as_bytes(), "t.json", &mut |r| {
            out.push(match r.value {
                Ok(v) => format!("{} ok {v}", r.location),
                Err(m) => m.to_string(),
            });
            ControlFlow::Continue(())
        })
        .unwrap();
        out
    }

    #[test]
    fn array_elements_are_indexed() {
        assert_eq!(
            collect(" [{\"a\":1}, 2]"),
            ["t.json: element 0 ok {\"a\":1}", "t.json: element 1 ok 2"]
        );
    }

    #[test]
    fn broken_array_reports_the_element() {
        let got = collect("[{\"a\":1}, {\"a\": }]");
        assert_eq!(got.len(), 2);
        assert!(
            got[1].starts_with("t.json: element 1: broken JSON"),
            "{}",
            got[1]
        );
    }

    #[test]
    fn wrapper_object_yields_its_array() {
        assert_eq!(
            collect("{\"version\": 1, \"data\": [{\"a\":1}]}"),
            ["t.json: element 0 ok {\"a\":1}"]
        );
        assert_eq!(
            collect("{\"messages\": [{\"role\":\"user\"}]}"),
            ["t.json: element 0 ok {\"messages\":[{\"role\":\"user\"}]}"]
        );
    }

    #[test]
    fn early_stop_is_not_an_error() {
        let mut seen = 0;
        read("[1,2,3]".as_bytes(), "t.json", &mut |_| {
            seen += 1;
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(seen, 1);
    }
}
