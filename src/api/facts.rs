//! What the engine needs from a chat.completion, read without building a `Value` tree: whether it
//! is a usable answer, the provider, and the usage numbers.
//!
//! The answer goes to the journal as the bytes that came, compacted ([`compact_json`]: whitespace
//! outside strings removed, so the line is one line and the resume scanner finds `"usage":{` as
//! serde_json would have written it). A success is decided from a borrowed view of those bytes;
//! whatever the view cannot read — an `error` object, a missing choice, a field of an unexpected
//! type, a duplicate key — is decided by the tree-based [`classify::check_completion`] instead, so
//! every failure is classified exactly as before and the view only has to agree on successes.

use std::borrow::Cow;

use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::usage_check::{self, UsageDoubt};
use super::{classify, ApiError};
use crate::api::ErrorClass;

/// The usage numbers of an answer (OpenRouter's `usage.cost` in USD when sent), as believed
/// (see `usage_check.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageNumbers {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cost: Option<f64>,
    /// What of the reported usage was not believed, if anything.
    pub doubt: Option<UsageDoubt>,
}

/// What the engine journals and books about an answer besides its bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseFacts {
    pub provider: Option<String>,
    pub usage: UsageNumbers,
}

impl ResponseFacts {
    /// The same facts from a parsed body of any shape (numbers only where they make sense). The
    /// provider is the answer's `provider`, else the one an OpenRouter error names
    /// (`error.metadata.provider_name`: a provider's 429 has no `provider` field).
    pub fn of_value(body: &Value) -> ResponseFacts {
        ResponseFacts {
            provider: body
                .get("provider")
                .or_else(|| body.pointer("/error/metadata/provider_name"))
                .and_then(Value::as_str)
                .map(str::to_string),
            usage: usage_check::usage_of(body.get("usage")),
        }
    }
}

/// Check a complete answer (HTTP 2xx) like [`classify::check_completion`] and read its facts.
/// `Ok` means `json` is valid JSON (the view parse, or the tree parse, checked all of it). The
/// error carries the parsed body, as the tree-based check gives it, or none if `json` is not JSON.
pub fn check_answer(json: &str) -> Result<ResponseFacts, ApiError> {
    check_answer_within(json, None)
}

/// [`check_answer`], building the tree for an answer the view does not take only if
/// `tree_too_large` is `None`: else that is the error (a tree's memory is bounded, see
/// `json_limits.rs`).
pub fn check_answer_within(
    json: &str,
    tree_too_large: Option<ApiError>,
) -> Result<ResponseFacts, ApiError> {
    if let Some(facts) = usable_answer(json) {
        return Ok(facts);
    }
    if let Some(err) = tree_too_large {
        return Err(err);
    }
    let body: Value = serde_json::from_str(json).map_err(|e| {
        ApiError::new(
            ErrorClass::Malformed,
            format!("response body is not JSON ({e}): {}", classify::quote(json)),
        )
    })?;
    match classify::check_completion(&body) {
        Ok(()) => Ok(ResponseFacts::of_value(&body)),
        Err(e) => Err(e.with_body(Some(body))),
    }
}

/// The facts of `json` if the borrowed view reads it as a usable answer; `None` means "let the
/// tree-based check decide". Reading it checks that all of `json` is valid JSON (skipped values
/// included, trailing bytes not allowed).
fn usable_answer(json: &str) -> Option<ResponseFacts> {
    // A struct also deserializes from a JSON array; a completion is an object.
    if !json.starts_with('{') {
        return None;
    }
    let view: AnswerView<'_> = serde_json::from_str(json).ok()?;
    if view.error.is_some() {
        return None;
    }
    let choice = view.choices?.into_iter().next()?;
    if choice.finish_reason.0 {
        return None;
    }
    let message = choice.message?;
    let has_details = message.reasoning_details.is_some_and(|d| {
        d.iter()
            .any(|i| is_text(i.text) || is_text(i.summary) || is_text(i.data))
    });
    let has_tool_calls = message.tool_calls.is_some_and(|c| !c.is_empty());
    let answered = is_text(message.content)
        || is_text(message.reasoning)
        || is_text(message.reasoning_content)
        || has_details
        || has_tool_calls;
    // The usage object is small: read as a tree, by the same rules as `of_value`.
    let usage = match view.usage {
        None => UsageNumbers::default(),
        Some(raw) => usage_check::usage_of(Some(&serde_json::from_str(raw.get()).ok()?)),
    };
    answered.then(|| ResponseFacts {
        provider: view.provider.map(Cow::into_owned),
        usage,
    })
}

/// Whether a field is a non-empty string, as `Value::as_str` then `!is_empty()` would say. The
/// text fields are taken as raw JSON: skipped, not unescaped (they are most of an answer's bytes).
fn is_text(field: Option<&RawValue>) -> bool {
    field.is_some_and(|raw| {
        let json = raw.get();
        json.starts_with('"') && json.len() > 2
    })
}

#[derive(Deserialize)]
struct AnswerView<'a> {
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default, borrow)]
    choices: Option<Vec<ChoiceView<'a>>>,
    #[serde(default, borrow)]
    provider: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ChoiceView<'a> {
    #[serde(default)]
    finish_reason: IsError,
    #[serde(default, borrow)]
    message: Option<MessageView<'a>>,
}

#[derive(Deserialize)]
struct MessageView<'a> {
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    reasoning: Option<&'a RawValue>,
    #[serde(default, borrow)]
    reasoning_content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    reasoning_details: Option<Vec<DetailView<'a>>>,
    #[serde(default)]
    tool_calls: Option<Vec<IgnoredAny>>,
}

#[derive(Deserialize)]
struct DetailView<'a> {
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
    #[serde(default, borrow)]
    summary: Option<&'a RawValue>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

/// A string-or-null `finish_reason`: whether it is `"error"`. Any other type fails the view.
#[derive(Default)]
struct IsError(bool);

struct StrOrNull<F>(F);

impl<'de, F: FnOnce(&str) -> bool> Visitor<'de> for StrOrNull<F> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
        Ok((self.0)(s))
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
}

impl<'de> Deserialize<'de> for IsError {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrOrNull(|s: &str| s == "error"))
            .map(IsError)
    }
}

/// `json` without whitespace outside strings; `json` itself when it has none (no copy). Invalid
/// JSON stays invalid (the caller validates). Hand-written because serde_json has no minifier
/// short of parsing into a tree or transcoding every token, and this is a scan with a skip:
/// strings are jumped over with `memchr`.
pub fn compact_json(json: Vec<u8>) -> Vec<u8> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => {
                // Jump to the closing quote, stepping over escapes.
                let mut j = i + 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &json[j.min(json.len())..]) {
                        Some(k) if json[j + k] == b'\\' => j += k + 2,
                        Some(k) => {
                            j += k + 1;
                            break;
                        }
                        None => {
                            j = json.len();
                            break;
                        }
                    }
                }
                i = j;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                let out = out.get_or_insert_with(|| Vec::with_capacity(json.len()));
                out.extend_from_slice(&json[copied..i]);
                i += 1;
                copied = i;
            }
            _ => i += 1,
        }
    }
    match out {
        None => json,
        Some(mut out) => {
            out.extend_from_slice(&json[copied.min(json.len())..]);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: &Value) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn compact_equals_serde_json_on_pretty_input() {
        let v = json!({"id": "a b", "s": "q \" \\ \n\t x", "n": [1, 2.5, -3e-7, null, true],
            "o": {"k": {"deep": "  spaced  "}}, "u": "日本 🌦"});
        let pretty = format!("\n   \n{}\r\n", serde_json::to_string_pretty(&v).unwrap());
        let compact = compact_json(pretty.into_bytes());
        assert_eq!(
            String::from_utf8(compact).unwrap(),
            serde_json::to_string(&v).unwrap()
        );
        let already = serde_json::to_string(&v).unwrap();
        assert_eq!(
            compact_json(already.clone().into_bytes()),
            already.as_bytes()
        );
        // Broken input stays broken (an unterminated string or a trailing backslash).
        for broken in [&b"{\"a\": \"x"[..], b"{\"a\": \"x\\"] {
            assert!(serde_json::from_slice::<Value>(&compact_json(broken.to_vec())).is_err());
        }
    }

    /// OpenRouter's 429 from a rate-limited provider (the recorded shape) names the provider
    /// only in its metadata; a top-level `provider` comes first.
    #[test]
    fn an_error_body_names_its_provider() {
        let body = json!({"error": {"message": "Provider returned error", "code": 429,
            "metadata": {"raw": "… is temporarily rate-limited upstream …",
                         "provider_name": "WandB"}}});
        assert_eq!(
            ResponseFacts::of_value(&body).provider.as_deref(),
            Some("WandB")
        );
        let mut chunk = body.clone();
        chunk["provider"] = json!("Chutes");
        assert_eq!(
            ResponseFacts::of_value(&chunk).provider.as_deref(),
            Some("Chutes")
        );
        assert_eq!(
            ResponseFacts::of_value(&json!({"error": "x"})).provider,
            None
        );
    }

    /// The view and the tree-based check agree on what is a usable answer, for every shape the
    /// check knows about, and the facts are those read from the tree.
    #[test]
    fn view_agrees_with_the_tree_based_check() {
        let answer = |message: Value, finish: Value| {
            json!({"id": "x", "provider": "P", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8, "cost": 1.5e-6}})
        };
        let cases = vec![
            answer(json!({"role": "assistant", "content": "hi"}), json!("stop")),
            answer(json!({"content": null, "reasoning": "r"}), json!("length")),
            answer(
                json!({"content": "", "reasoning_content": "r"}),
                json!(null),
            ),
            answer(
                json!({"content": null, "reasoning_details": [{"type": "reasoning.text", "text": "t"}]}),
                json!("stop"),
            ),
            answer(
                json!({"content": null, "reasoning_details": [{"summary": ["not a string"]}]}),
                json!("stop"),
            ),
            answer(
                json!({"content": null, "tool_calls": [{"id": "a"}]}),
                json!("tool_calls"),
            ),
            answer(json!({"content": null, "tool_calls": []}), json!("stop")),
            answer(json!({"content": ""}), json!("stop")),
            answer(json!({"content": "x"}), json!("error")),
            answer(json!({"content": "x"}), json!(7)),
            answer(json!({"content": 5}), json!("stop")),
            answer(json!("not an object"), json!("stop")),
            json!({"choices": []}),
            json!({"choices": [{"index": 0}]}),
            json!({"choices": "x"}),
            json!({"error": {"message": "boom"}, "choices": [{"message": {"content": "x"}}]}),
            json!({"error": null, "choices": [{"message": {"content": "x"}}], "provider": 5}),
            json!({"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 1.5, "cost": "1"}}),
            json!({"choices": [{"message": {"content": "x"}}], "usage": null}),
            json!([{"choices": [{"message": {"content": "x"}}]}]),
            json!(null),
        ];
        for case in cases {
            let tree = classify::check_completion(&case).map(|()| ResponseFacts::of_value(&case));
            let view = check_answer(&raw(&case));
            match (tree, view) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{case}"),
                (Err(a), Err(b)) => {
                    assert_eq!((a.class, a.message), (b.class, b.message), "{case}");
                    assert_eq!(b.body, Some(case.clone()));
                }
                (a, b) => panic!("disagree on {case}: {a:?} vs {b:?}"),
            }
        }
        // The fast view itself takes the plain answers.
        let plain = answer(json!({"content": "hi"}), json!("stop"));
        let facts = usable_answer(&raw(&plain)).expect("view reads a plain answer");
        assert_eq!(facts.provider.as_deref(), Some("P"));
        assert_eq!(facts.usage.cost, Some(1.5e-6));
    }
}
