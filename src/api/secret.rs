//! [`ApiKey`]: a secret that cannot be printed, logged or serialized by accident, and the scrubbing
//! that removes it from any text or JSON we got back from a server (some echo the key in errors).

use std::fmt;

use serde_json::Value;

/// What a key is replaced with wherever it would otherwise appear.
pub const REDACTED: &str = "[REDACTED]";

/// An API key. `Debug`/`Display` print `[REDACTED]`; the only way out is [`ApiKey::expose`].
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into().trim().to_string())
    }

    /// The key itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[REDACTED]`.
    pub fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() || !text.contains(self.0.as_str()) {
            return text.to_string();
        }
        text.replace(self.0.as_str(), REDACTED)
    }

    /// Serialized JSON with every occurrence of the key replaced, as it is written inside a JSON
    /// string (keys are plain ASCII, so that is the key itself, or its escaped form if it has
    /// quotes, backslashes or control characters); `None` if it does not occur.
    pub fn scrub_json_bytes(&self, json: &[u8]) -> Option<Vec<u8>> {
        if self.0.is_empty() {
            return None;
        }
        let needs_escape = self.0.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
        let quoted = if needs_escape {
            serde_json::to_string(&self.0).ok()?
        } else {
            String::new()
        };
        let escaped = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
        let mut out: Option<Vec<u8>> = None;
        for needle in [self.0.as_str(), escaped] {
            if needle.is_empty() {
                continue;
            }
            let hay = out.as_deref().unwrap_or(json);
            if memchr::memmem::find(hay, needle.as_bytes()).is_none() {
                continue;
            }
            let mut replaced = Vec::with_capacity(hay.len());
            let mut last = 0;
            for at in memchr::memmem::find_iter(hay, needle.as_bytes()) {
                replaced.extend_from_slice(&hay[last..at]);
                replaced.extend_from_slice(REDACTED.as_bytes());
                last = at + needle.len();
            }
            replaced.extend_from_slice(&hay[last..]);
            out = Some(replaced);
        }
        out
    }

    /// Replace the key in every string (and object key) of `value`, in place.
    pub fn scrub_json(&self, value: &mut Value) {
        if self.0.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if s.contains(self.0.as_str()) {
                    *s = s.replace(self.0.as_str(), REDACTED);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_json(v)),
            Value::Object(map) => {
                // Keys are rarely tainted; rebuild the map only when one is.
                if map.keys().any(|k| k.contains(self.0.as_str())) {
                    let taken = std::mem::take(map);
                    for (k, v) in taken {
                        map.insert(self.scrub(&k), v);
                    }
                }
                map.values_mut().for_each(|v| self.scrub_json(v));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "sk-or-v1-FAKEKEY-0123456789abcdef";

    #[test]
    fn debug_and_display_hide_the_key() {
        let key = ApiKey::new(format!("  {KEY}\n"));
        assert_eq!(key.expose(), KEY);
        assert_eq!(format!("{key:?}"), REDACTED);
        assert_eq!(format!("{key}"), REDACTED);
    }

    #[test]
    fn scrub_replaces_every_occurrence_in_text_and_json() {
        let key = ApiKey::new(KEY);
        assert_eq!(
            key.scrub(&format!("bad key {KEY} ({KEY})")),
            "bad key [REDACTED] ([REDACTED])"
        );
        let mut v = json!({"error": {"message": format!("key {KEY}"), "list": [KEY]}});
        v.as_object_mut().unwrap().insert(KEY.to_string(), json!(1));
        key.scrub_json(&mut v);
        assert!(!v.to_string().contains(KEY));
        assert_eq!(v["error"]["message"], "key [REDACTED]");
        assert_eq!(v["[REDACTED]"], 1);

        let bytes = format!(r#"{{"a":"x{KEY}y","b":["{KEY}"]}}"#);
        let scrubbed = key.scrub_json_bytes(bytes.as_bytes()).unwrap();
        assert_eq!(
            String::from_utf8(scrubbed).unwrap(),
            r#"{"a":"x[REDACTED]y","b":["[REDACTED]"]}"#
        );
        assert_eq!(key.scrub_json_bytes(b"{}"), None);
    }
}
