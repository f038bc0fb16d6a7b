//! vLLM's harmony parser for gpt-oss (read in vLLM 0.33.0's `parser/harmony.py` and
//! `entrypoints/openai/parser/harmony_utils.py`; the parsing itself is OpenAI's `openai_harmony`
//! `StreamableParser`, measured in tests/data/gpt_oss/parser_shapes.jsonl).
//!
//! The model's text is a run of harmony messages (`HEADER<|message|>TEXT` ended by `<|end|>`,
//! `<|return|>` or `<|call|>`, the next one opened by `<|start|>assistant`), every one parsed
//! whatever the request declared:
//! - `analysis` messages are the reasoning, joined by `\n`;
//! - `final` messages and `commentary` messages without a recipient are the content, joined by
//!   `\n`;
//! - a message to a function recipient (`to=functions.NAME`) is a call of NAME; its arguments are
//!   `json.dumps(json.loads(TEXT))` (Python's spacing, `ensure_ascii`; every call of several
//!   alike), or the text as written when it is no JSON or its content type (`<|constrain|>TYPE`)
//!   says it is not JSON. Ids are minted.
//! - Empty texts are dropped. A `length` cut ends the last message where it stands (its text so
//!   far counts); a cut inside a header leaves the parser mid-header, and vLLM then returns the
//!   text since the last finished message as content.
//!
//! Streamed (`parse_delta`), the same messages are sent as deltas: reasoning and content are the
//! messages' texts one after the other (no `\n` between them) and arguments are the model's text.

use super::{Parsed, ParsedCall, ParserTraits};

use crate::model::family::gpt_oss::{CALL, CHANNEL, CONSTRAIN, END, MESSAGE, RETURN, START};
use crate::pyjson::{dumps_json, DumpOptions};

/// vLLM's harmony parser: every call's arguments read and written anew (ids minted).
pub const TRAITS: ParserTraits = ParserTraits {
    rewrites_calls: true,
    ..ParserTraits::NONE
};

/// The recipients vLLM's `is_function_recipient` keeps from being calls (its built-in tools).
const BUILTIN_TOOLS: &[&str] = &["python", "browser", "container"];

/// One harmony message of the model's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Message<'a> {
    pub channel: Option<&'a str>,
    pub recipient: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub text: &'a str,
}

pub fn parse(text: &str, stream: bool) -> Parsed {
    let mut parsed = Parsed {
        finish_reason: "stop",
        ..Parsed::default()
    };
    // Streamed, each message's deltas are sent as they come: nothing joins two messages.
    let joiner = if stream { "" } else { "\n" };
    let (messages, rest) = messages(text);
    let (mut reasoning, mut content) = (Vec::new(), Vec::new());
    for message in messages.iter().filter(|m| !m.text.is_empty() || is_call(m)) {
        if is_call(message) {
            let recipient = message.recipient.unwrap_or_default();
            let json = message.content_type.is_none_or(|t| t.contains("json"));
            parsed.calls.push(ParsedCall {
                id: String::new(),
                name: recipient
                    .strip_prefix("functions.")
                    .unwrap_or(recipient)
                    .to_string(),
                arguments: if json && !stream {
                    reserialized(message.text)
                } else {
                    message.text.to_string()
                },
            });
        } else if message.channel == Some("analysis") {
            reasoning.push(message.text);
        } else if message.channel == Some("final")
            || (message.channel == Some("commentary") && message.recipient.is_none())
        {
            content.push(message.text);
        }
    }
    if !rest.is_empty() {
        content.push(rest);
    }
    parsed.stopped = text.ends_with(CALL);
    parsed.reasoning = Some(reasoning.join(joiner)).filter(|r| !r.is_empty());
    parsed.content = Some(content.join(joiner)).filter(|c| !c.is_empty());
    parsed
}

/// `is_function_recipient` without a list of allowed names (the Chat Completions path).
fn is_call(message: &Message) -> bool {
    let Some(recipient) = message.recipient else {
        return false;
    };
    if let Some(name) = recipient.strip_prefix("functions.") {
        return !name.is_empty();
    }
    let first = recipient.split('.').next().unwrap_or_default();
    !recipient.starts_with("<|") && recipient != "assistant" && !BUILTIN_TOOLS.contains(&first)
}

/// `json.dumps(json.loads(text))`, or the text itself where it is no JSON.
fn reserialized(text: &str) -> String {
    let options = DumpOptions {
        ensure_ascii: true,
        ..DumpOptions::default()
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => dumps_json(&value, &options),
        Err(_) => text.to_string(),
    }
}

/// The text's messages, and what follows the last one when the text ends inside a header.
pub fn messages(text: &str) -> (Vec<Message<'_>>, &str) {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let Some((header, after)) = rest.split_once(MESSAGE) else {
            return (out, rest);
        };
        let (body, next) = [END, RETURN, CALL]
            .iter()
            .filter_map(|stop| after.find(stop).map(|at| (at, stop.len())))
            .min()
            .map_or((after, ""), |(at, len)| (&after[..at], &after[at + len..]));
        out.push(message(header, body));
        rest = next;
    }
    (out, rest)
}

/// One message from its header (`<|start|>assistant` first, except for the generation prompt's
/// own) and its text.
fn message<'a>(header: &'a str, text: &'a str) -> Message<'a> {
    let header = header.strip_prefix(START).unwrap_or(header);
    let header = header.strip_prefix("assistant").unwrap_or(header);
    let (header, constrained) = match header.split_once(CONSTRAIN) {
        Some((before, content_type)) => (before, Some(content_type.trim())),
        None => (header, None),
    };
    let word = |s: &'a str| {
        let end = s
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(s.len());
        &s[..end]
    };
    let recipient = header
        .find("to=")
        .map(|at| word(&header[at + 3..]))
        .filter(|r| !r.is_empty());
    let after_channel = header.split_once(CHANNEL).map(|(_, after)| after);
    let channel = after_channel.map(word).filter(|c| !c.is_empty());
    // The older header writes the content type after the channel: `commentary json`.
    let trailing = after_channel.and_then(|after| {
        after
            .split_whitespace()
            .skip(1)
            .find(|w| !w.starts_with("to="))
    });
    Message {
        channel,
        recipient,
        content_type: constrained.or(trailing).filter(|t| !t.is_empty()),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_in_both_orders() {
        let (m, rest) = messages(
            "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>commentary \
             to=functions.f <|constrain|>json<|message|>{}<|call|>",
        );
        assert_eq!(rest, "");
        assert_eq!(m[0].channel, Some("analysis"));
        assert_eq!(m[1].recipient, Some("functions.f"));
        assert_eq!(m[1].content_type, Some("json"));
        let (m, _) = messages(" to=functions.g<|channel|>commentary json<|message|>{}");
        assert_eq!(
            (m[0].recipient, m[0].channel, m[0].content_type),
            (Some("functions.g"), Some("commentary"), Some("json"))
        );
    }

    #[test]
    fn streamed_messages_are_not_joined() {
        let text = "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis\
                    <|message|>b<|end|><|start|>assistant<|channel|>final<|message|>c";
        assert_eq!(parse(text, true).reasoning.as_deref(), Some("ab"));
        assert_eq!(parse(text, false).reasoning.as_deref(), Some("a\nb"));
    }
}
