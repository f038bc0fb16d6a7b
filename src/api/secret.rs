//! [`ApiKey`]: a secret that cannot be printed, logged or serialized by accident, and the scrubbing
//! that removes it from any text or JSON we got back from a server (some echo the key in errors).

use std::fmt;

use serde_json::Value;

/// What a key is replaced with wherever it would otherwise appear.
pub const REDACTED: &str = "[REDACTED]";

/// An API key. `Debug`/`Display` print `[REDACTED]`; the only way out is [`ApiKey::expose`].
#[derive(Clone, PartialEq, Eq)]
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
    }
}
