//! Error classification: which [`ErrorClass`] a failed exchange belongs to, and a short message
//! taken from what the server said. Pure functions over status codes, headers and bodies, so every
//! rule is unit-tested without a network; the client only gathers the inputs.
//!
//! The class decides what the engine does next (retry, back off, stop the run), so the rules follow
//! OpenRouter's documented meanings (its API error codes): 408 timeout, 429 rate limit, 5xx server, 400 bad
//! request, 401 bad key, 402 no credits, 403 moderation, and errors that arrive inside a 200.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::transport::{error_chain, HttpError};
use super::ApiError;
use crate::api::ErrorClass;

/// Longest piece of server text (`metadata.raw`, a non-JSON body) quoted in a message.
const MAX_QUOTE: usize = 300;

/// The class of a non-2xx HTTP status.
pub fn class_of_status(status: u16) -> ErrorClass {
    match status {
        408 => ErrorClass::Timeout,
        429 => ErrorClass::RateLimited,
        400 => ErrorClass::BadRequest,
        401 => ErrorClass::Unauthorized,
        402 => ErrorClass::PaymentRequired,
        403 => ErrorClass::Forbidden,
        500..=599 => ErrorClass::ServerError,
        // Other 4xx, and anything outside 4xx/5xx that is not a success (1xx/3xx leaking through).
        _ => ErrorClass::ClientError,
    }
}

/// A non-2xx response: class from the status, message from the body, `Retry-After` parsed.
pub fn http_error(status: u16, retry_after: Option<&str>, body: &[u8]) -> ApiError {
    // Parsed only if its tree is small (an error body is): a body of numbers takes 36 times its
    // size as a tree.
    const ERROR_TREE_MAX: usize = 4 << 20;
    let json: Option<Value> = std::str::from_utf8(body)
        .ok()
        .filter(|text| {
            super::json_limits::check(text, usize::MAX)
                .is_ok_and(|checked| checked.tree_bytes <= ERROR_TREE_MAX)
        })
        .and_then(|text| serde_json::from_str(text).ok());
    let detail = json
        .as_ref()
        .and_then(server_message)
        .unwrap_or_else(|| quote(&String::from_utf8_lossy(body)));
    let message = if detail.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {detail}")
    };
    ApiError::new(class_of_status(status), message)
        .with_status(status)
        .with_retry_after(retry_after.and_then(|v| parse_retry_after(v, SystemTime::now())))
        .with_body(json)
}

/// An error status that came through a forwarding proxy (`proxy`: its address): the proxy's own
/// refusal when it is 407 (only proxies send it) or a 401 whose body is not JSON (an
/// OpenAI-compatible server's 401 is a JSON error; tinyproxy, for one, answers a wrong password
/// with 401 and an HTML page). Then the class is [`ErrorClass::ProxyAuth`], not a bad API key.
pub fn proxy_refusal(err: ApiError, status: u16, body: &[u8], proxy: &str) -> ApiError {
    let is_json = std::str::from_utf8(body)
        .is_ok_and(|text| super::json_limits::check(text, usize::MAX).is_ok());
    if status == 407 || (status == 401 && !is_json) {
        return ApiError::new(
            ErrorClass::ProxyAuth,
            format!(
                "the proxy {proxy} refused the request (HTTP {status}; the request never reached the server): the user and password in the proxy URL are missing or wrong"
            ),
        )
        .with_status(status);
    }
    err
}

/// `Retry-After`: delay seconds (integer or decimal) or an HTTP date (then relative to `now`, zero
/// if already past). `None` when unparseable.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The server's own words for an error: `error.message` (or a string `error`), plus
/// `metadata.provider_name` and a shortened `metadata.raw`.
pub fn server_message(body: &Value) -> Option<String> {
    let error = body.get("error")?;
    let mut message = match error {
        Value::String(s) => s.clone(),
        Value::Object(e) => match e.get("message") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => quote(&error.to_string()),
        },
        other => other.to_string(),
    };
    if let Some(code) = error.get("code").filter(|c| !c.is_null()) {
        let code = code
            .as_str()
            .map_or_else(|| code.to_string(), str::to_string);
        message = format!("{message} (code {code})");
    }
    if let Some(meta) = error.get("metadata") {
        if let Some(provider) = meta.get("provider_name").and_then(Value::as_str) {
            message.push_str(&format!(" [provider {provider}]"));
        }
        if let Some(raw) = meta.get("raw").filter(|r| !r.is_null()) {
            let raw = raw.as_str().map_or_else(|| raw.to_string(), str::to_string);
            message.push_str(&format!(" raw: {}", quote(&raw)));
        }
        if let Some(reasons) = meta.get("reasons").and_then(Value::as_array) {
            let reasons: Vec<String> = reasons
                .iter()
                .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_string))
                .collect();
            message.push_str(&format!(" reasons: {}", reasons.join(", ")));
        }
    }
    Some(message)
}

/// Check a complete chat.completion (non-streamed, or assembled from a stream) that came with a
/// 2xx status. `Err` for an `error` object, `finish_reason: "error"`, a body that is not a
/// completion, or an answer with no reasoning, no content and no tool calls.
pub fn check_completion(response: &Value) -> Result<(), ApiError> {
    if !response.is_object() {
        return Err(ApiError::new(
            ErrorClass::Malformed,
            format!(
                "response is not a JSON object: {}",
                quote(&response.to_string())
            ),
        ));
    }
    if response.get("error").is_some_and(|e| !e.is_null()) {
        return Err(error_in_answer(response, Some(response)));
    }
    let Some(choice) = response
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        return Err(ApiError::new(
            ErrorClass::Malformed,
            "response has no `choices[0]`",
        ));
    };
    if choice.get("finish_reason").and_then(Value::as_str) == Some("error") {
        return Err(ApiError::new(
            ErrorClass::MidStream,
            "generation ended with finish_reason \"error\"",
        ));
    }
    let Some(message) = choice.get("message").filter(|m| m.is_object()) else {
        return Err(ApiError::new(
            ErrorClass::Malformed,
            "response has no `choices[0].message` object",
        ));
    };
    let finish_reason = choice.get("finish_reason").and_then(Value::as_str);
    // An empty answer cut by `max_tokens` is the model's real output, not a server hiccup: the cut
    // fell where the server shows nothing yet (SGLang inside the tool section answers
    // `content: ""`, no calls, finish `length`). Retrying would bill the same cut again; the
    // reconstruction says how certain its ids are.
    // Likewise an answer of one token that stopped: the model sampled its end-of-turn token
    // first (vLLM then answers `content: ""`, finish `stop`, `completion_tokens: 1`; seen in the
    // corpus made with vLLM's own code). Only a single token: more tokens with nothing shown are
    // hidden or lost output, which a retry may get.
    let ended_at_once = finish_reason == Some("stop")
        && response
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64)
            == Some(1);
    if is_empty_answer(message) && finish_reason != Some("length") && !ended_at_once {
        let finish = choice
            .get("finish_reason")
            .map_or_else(|| "none".to_string(), Value::to_string);
        return Err(ApiError::new(
            ErrorClass::EmptyAnswer,
            format!(
                "answer has no reasoning, no content and no tool calls (finish_reason {finish})"
            ),
        ));
    }
    Ok(())
}

/// A stream's `error` chunk (status already 200), with `partial` the answer assembled so far
/// (that chunk included): classed by [`error_in_answer`], like the same failure unstreamed.
pub fn mid_stream_error(chunk: &Value, partial: Option<&Value>) -> ApiError {
    error_in_answer(chunk, partial)
}

/// An `error` object in a 2xx answer — `holder` is the body or the stream chunk that carries it,
/// `answer` the completion (assembled so far, when streamed). One rule whether streamed or not:
/// if the answer already holds generated output (content, reasoning or tool calls) the generation
/// started and broke, [`ErrorClass::MidStream`]; if nothing was generated, the request failed
/// before generating, [`ErrorClass::ErrorIn200`]. The same server failure thus gets the same class
/// with `stream` on or off (OpenRouter sends a streamed error as an `error` chunk and the same
/// failure unstreamed as an `error` body, with whatever was generated in `choices`).
pub fn error_in_answer(holder: &Value, answer: Option<&Value>) -> ApiError {
    let generated = answer
        .and_then(|a| a.get("choices"))
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(|c| c.get("message"))
        .filter(|m| m.is_object())
        .is_some_and(|m| !is_empty_answer(m));
    let message = server_message(holder).unwrap_or_else(|| "error object".to_string());
    if generated {
        ApiError::new(
            ErrorClass::MidStream,
            format!("error in the stream: {message}"),
        )
    } else if error_code(holder) == Some(429) {
        // OpenRouter sends the 200 (and padding) before the provider answers, so a provider's
        // rate limit comes as this object; it is the same 429 and the pacing must slow for it.
        ApiError::new(
            ErrorClass::RateLimited,
            format!("rate limited (in a 200 response): {message}"),
        )
    } else {
        ApiError::new(
            ErrorClass::ErrorIn200,
            format!("error object in a 200 response: {message}"),
        )
    }
}

/// `error.code` as a number, whether sent as one or as its digits.
fn error_code(holder: &Value) -> Option<u64> {
    let code = holder.get("error")?.get("code")?;
    code.as_u64()
        .or_else(|| code.as_str().and_then(|s| s.parse().ok()))
}

fn is_empty_answer(message: &Value) -> bool {
    let has_text = |key: &str| {
        message
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    let has_details = message
        .get("reasoning_details")
        .and_then(Value::as_array)
        .is_some_and(|d| {
            d.iter().any(|item| {
                ["text", "summary", "data"].iter().any(|k| {
                    item.get(k)
                        .and_then(Value::as_str)
                        .is_some_and(|s| !s.is_empty())
                })
            })
        });
    let has_tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty());
    !(has_text("content")
        || has_text("reasoning")
        || has_text("reasoning_content")
        || has_details
        || has_tool_calls)
}

/// A transport failure: a connect that ran out of time is [`ErrorClass::Timeout`] (the other
/// deadlines are the client's own), everything else (refused, reset, DNS, TLS, a broken body or
/// response head) is [`ErrorClass::Network`].
pub(crate) fn transport_error(err: &HttpError) -> ApiError {
    let class = match err {
        HttpError::ConnectTimeout(_) => ErrorClass::Timeout,
        HttpError::ProxyAuth { .. } => ErrorClass::ProxyAuth,
        _ => ErrorClass::Network,
    };
    ApiError::new(class, error_chain(err))
}

/// `s` cut to [`MAX_QUOTE`] characters, with a marker when cut.
pub fn quote(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(MAX_QUOTE) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// vLLM 0.33.0's own answer when the model's first token is its end token
    /// (tests/data/server_shapes/deepseek_v3.jsonl, `random_mix/002`): a real answer. The same
    /// with more tokens, or none counted, stays a retryable empty answer.
    #[test]
    fn an_answer_of_only_the_end_token_is_not_empty_answer() {
        let answer = |tokens: u64| {
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": ""},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 16, "completion_tokens": tokens}})
        };
        assert!(check_completion(&answer(1)).is_ok());
        for tokens in [0, 2, 500] {
            let err = check_completion(&answer(tokens)).unwrap_err();
            assert_eq!(err.class, ErrorClass::EmptyAnswer, "{tokens}");
        }
    }

    #[test]
    fn statuses_map_to_classes() {
        for (status, class) in [
            (408, ErrorClass::Timeout),
            (429, ErrorClass::RateLimited),
            (500, ErrorClass::ServerError),
            (502, ErrorClass::ServerError),
            (503, ErrorClass::ServerError),
            (400, ErrorClass::BadRequest),
            (401, ErrorClass::Unauthorized),
            (402, ErrorClass::PaymentRequired),
            (403, ErrorClass::Forbidden),
            (404, ErrorClass::ClientError),
            (422, ErrorClass::ClientError),
        ] {
            assert_eq!(class_of_status(status), class, "status {status}");
        }
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        let ms = Duration::from_millis;
        for (value, after) in [
            ("7", ms(7_000)),
            (" 0 ", Duration::ZERO),
            ("1.5", ms(1_500)),
            ("Sun, 06 Nov 1994 08:50:07 GMT", ms(30_000)),
            // RFC 850 and asctime forms are valid HTTP dates too.
            ("Sunday, 06-Nov-94 08:49:47 GMT", ms(10_000)),
            ("Sun Nov  6 08:49:57 1994", ms(20_000)),
            // A date in the past means "now".
            ("Sun, 06 Nov 1994 08:00:00 GMT", Duration::ZERO),
        ] {
            assert_eq!(parse_retry_after(value, now), Some(after), "{value:?}");
        }
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn http_error_takes_the_servers_message_and_metadata() {
        let body = json!({"error": {"code": 502, "message": "Provider returned error",
            "metadata": {"provider_name": "Chutes", "raw": "x".repeat(1000)}}});
        let err = http_error(502, Some("3"), body.to_string().as_bytes());
        assert_eq!(err.class, ErrorClass::ServerError);
        assert_eq!(err.http_status, Some(502));
        assert_eq!(err.retry_after, Some(Duration::from_secs(3)));
        assert!(err.message.starts_with(
            "HTTP 502: Provider returned error (code 502) [provider Chutes] raw: xxx"
        ));
        assert!(
            err.message.len() < 450,
            "raw is shortened: {}",
            err.message.len()
        );
        assert_eq!(err.body, Some(body));
    }

    #[test]
    fn http_error_with_a_non_json_body_quotes_it() {
        let err = http_error(503, None, b"<html>upstream down</html>");
        assert_eq!(err.class, ErrorClass::ServerError);
        assert_eq!(err.message, "HTTP 503: <html>upstream down</html>");
        assert_eq!(err.body, None);
        assert_eq!(http_error(404, None, b"").message, "HTTP 404");
    }

    #[test]
    fn moderation_reasons_are_reported() {
        let body = json!({"error": {"code": 403, "message": "flagged",
            "metadata": {"reasons": ["violence"], "provider_name": "OpenAI"}}});
        let err = http_error(403, None, body.to_string().as_bytes());
        assert_eq!(err.class, ErrorClass::Forbidden);
        assert!(err.message.contains("reasons: violence"), "{}", err.message);
    }

    fn completion(message: Value, finish: &str) -> Value {
        json!({"id": "x", "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
    }

    #[test]
    fn a_complete_answer_passes() {
        for message in [
            json!({"role": "assistant", "content": "hi"}),
            json!({"role": "assistant", "content": null, "reasoning": "think"}),
            json!({"role": "assistant", "content": "", "reasoning_content": "think"}),
            json!({"role": "assistant", "content": null, "reasoning_details": [{"type": "reasoning.text", "text": "t"}]}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
        ] {
            assert!(
                check_completion(&completion(message.clone(), "stop")).is_ok(),
                "{message}"
            );
        }
    }

    #[test]
    fn errors_inside_a_200_are_classified() {
        let class = |v: &Value| check_completion(v).unwrap_err().class;
        let in200 = json!({"error": {"code": 500, "message": "boom"}});
        assert_eq!(class(&in200), ErrorClass::ErrorIn200);
        assert!(check_completion(&in200)
            .unwrap_err()
            .message
            .contains("boom"));
        assert_eq!(
            class(&completion(json!({"content": "partial"}), "error")),
            ErrorClass::MidStream
        );
        assert_eq!(
            class(&completion(
                json!({"content": "", "reasoning": null, "tool_calls": []}),
                "stop"
            )),
            ErrorClass::EmptyAnswer
        );
        // Cut by max_tokens before anything visible (SGLang, inside the tool section): a real answer.
        check_completion(&completion(
            json!({"role": "assistant", "content": "", "tool_calls": null}),
            "length",
        ))
        .unwrap();
        assert_eq!(
            class(&completion(json!({"content": null}), "stop")),
            ErrorClass::EmptyAnswer
        );
        assert_eq!(class(&json!({"id": "x"})), ErrorClass::Malformed);
        assert_eq!(class(&json!([1])), ErrorClass::Malformed);
        assert_eq!(
            class(&json!({"choices": [{"index": 0}]})),
            ErrorClass::Malformed
        );
    }

    #[test]
    fn mid_stream_error_chunk() {
        let chunk = json!({"id": "g", "provider": "openai", "error": {"code": "server_error",
            "message": "Provider disconnected unexpectedly"},
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]});
        let partial = completion(
            json!({"role": "assistant", "content": "Half an ans"}),
            "error",
        );
        let err = mid_stream_error(&chunk, Some(&partial));
        assert_eq!(err.class, ErrorClass::MidStream);
        assert!(err
            .message
            .contains("Provider disconnected unexpectedly (code server_error)"));
        // Nothing generated before the error: the request failed, as an error body would say.
        let nothing = completion(json!({"role": "assistant", "content": ""}), "error");
        assert_eq!(
            mid_stream_error(&chunk, Some(&nothing)).class,
            ErrorClass::ErrorIn200
        );
        assert_eq!(mid_stream_error(&chunk, None).class, ErrorClass::ErrorIn200);
    }

    #[test]
    fn a_429_object_in_a_200_is_a_rate_limit_unless_output_came() {
        for code in [json!(429), json!("429")] {
            let error = json!({"code": code, "message": "Provider returned error",
                "metadata": {"provider_name": "WandB"}});
            let bare = json!({"error": error});
            let err = check_completion(&bare).unwrap_err();
            assert_eq!(err.class, ErrorClass::RateLimited, "{code}");
            assert!(err.message.contains("[provider WandB]"), "{}", err.message);
            assert_eq!(mid_stream_error(&bare, None).class, ErrorClass::RateLimited);
            let partial = completion(json!({"role": "assistant", "content": "Half"}), "error");
            assert_eq!(
                mid_stream_error(&bare, Some(&partial)).class,
                ErrorClass::MidStream
            );
        }
    }

    #[test]
    fn an_error_object_gets_one_class_streamed_or_not() {
        let error = json!({"code": 502, "message": "Upstream error"});
        // Unstreamed: the body; streamed: the chunk carrying the error, and the answer so far.
        let partial_answer = completion(
            json!({"role": "assistant", "content": "The answer is"}),
            "error",
        );
        let mut body = partial_answer.clone();
        body["error"] = error.clone();
        let chunk = json!({"error": error, "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}]});
        assert_eq!(
            check_completion(&body).unwrap_err().class,
            ErrorClass::MidStream
        );
        assert_eq!(
            mid_stream_error(&chunk, Some(&partial_answer)).class,
            ErrorClass::MidStream
        );
        let bare = json!({"error": error});
        assert_eq!(
            check_completion(&bare).unwrap_err().class,
            ErrorClass::ErrorIn200
        );
        assert_eq!(mid_stream_error(&chunk, None).class, ErrorClass::ErrorIn200);
    }

    #[test]
    fn quote_cuts_on_a_char_boundary() {
        let s = "é".repeat(400);
        let q = quote(&s);
        assert_eq!(q.chars().count(), MAX_QUOTE + 1);
        assert!(q.ends_with('…'));
    }
}
