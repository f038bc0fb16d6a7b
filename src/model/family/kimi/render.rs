//! Kimi's chat templates written out (see `model/native.rs`): the built-in K2, K2-Thinking and
//! K2.5 templates (`templates/*.jinja`) and two published ones, the July-2025 K2-Instruct template
//! and the K2-Thinking revision with `tojson()` tools (llama.cpp's copies, see the assets README).
//!
//! What differs between them (the rest is shared and described in `kimi.rs`):
//! - **K2, July 2025**: fixed role headers (`name` ignored), default system "You are a helpful
//!   assistant", tool calls, tool-call ids and reasoning not rendered at all, images without a
//!   newline, tools as `tojson` with Python's default separators.
//! - **K2** (built-in): default system + `\n`, tool calls after the content, no `<think>`.
//! - **K2-Thinking**: history assistants (up to the last assistant without tool calls) render
//!   `<think></think>`, later ones `<think>{reasoning_content}</think>`; tools compact (built-in)
//!   or with default separators (the published revision).
//! - **K2.5** (built-in): like K2-Thinking, but `thinking=false` writes `<think></think>` in the
//!   suffix too and in the generation prompt (else `<think>`), `preserve_thinking` keeps every
//!   reasoning, reasoning falls back from `reasoning_content` to `reasoning`, tools are the
//!   TypeScript declaration when it encodes, images are `<|media_begin|>`, no default system.
//!
//! Tools are deep-sorted by the Kimi tokenizer before any template sees them; writing the JSON with
//! sorted keys is the same text.

use serde_json::Value;
use std::sync::LazyLock;

use super::{deep_sort, tools_ts};
use crate::json::{Json, Object};
use crate::model::native::{self, Message, NativeTwin, RenderRequest, Role};
use crate::pyjson::{write_json, DumpOptions};

/// SHA-256 of `ASSETS/templates/kimi-k2.jinja` (K2-Instruct, July 2025, llama.cpp @ 02f4a631).
pub const K2_JULY_2025_SHA256: &str =
    "0d19c3a601c02d8f788799efcaceee9f0cda955e165b9c137ea9f7198fea4d37";
/// SHA-256 of `ASSETS/templates/kimi-k2-thinking.jinja` (llama.cpp @ 0c3c896e).
pub const K2_THINKING_SHA256: &str =
    "833d0c375531149a922a0f2addf9a66cce8e4503c500fe4ca6a95e9d1ed3c75a";
/// SHA-256 of the built-in `templates/kimi-k2.jinja`.
pub const K2_BUILTIN_SHA256: &str =
    "7a3e484a9e7d53e359b669bdb3f9729f28e6dfdc010ea8f6c8e2c6827d47a7ad";
/// SHA-256 of the built-in `templates/kimi-k2-thinking.jinja`.
pub const K2_THINKING_BUILTIN_SHA256: &str =
    "a9b8ef9d90351a435949cd35010b07f3c3c429dce7a2400f08e5db82d896451e";
/// SHA-256 of the built-in `templates/kimi-k2.5.jinja`.
pub const K25_BUILTIN_SHA256: &str =
    "8e219987b97b0f43022ef7621ca72c5d7daa3ba26014bb9fe8cf0310fe05d14c";

/// The twins of K2's known templates: the July-2025 one and the built-in one.
pub const K2_TWINS: &[NativeTwin] = &[
    NativeTwin {
        name: "kimi-k2 (July 2025)",
        sha256: K2_JULY_2025_SHA256,
        kwargs: Variant::K2July2025.implemented_kwargs(),
        render: |request| render(Variant::K2July2025, request),
    },
    NativeTwin {
        name: "kimi-k2 (built-in)",
        sha256: K2_BUILTIN_SHA256,
        kwargs: Variant::K2.implemented_kwargs(),
        render: |request| render(Variant::K2, request),
    },
];

/// The twins of K2-Thinking's known templates: the published revision and the built-in one.
pub const K2_THINKING_TWINS: &[NativeTwin] = &[
    NativeTwin {
        name: "kimi-k2-thinking (published)",
        sha256: K2_THINKING_SHA256,
        kwargs: Variant::K2Thinking {
            compact_tools: false,
        }
        .implemented_kwargs(),
        render: |request| {
            render(
                Variant::K2Thinking {
                    compact_tools: false,
                },
                request,
            )
        },
    },
    NativeTwin {
        name: "kimi-k2-thinking (built-in)",
        sha256: K2_THINKING_BUILTIN_SHA256,
        kwargs: Variant::K2Thinking {
            compact_tools: true,
        }
        .implemented_kwargs(),
        render: |request| {
            render(
                Variant::K2Thinking {
                    compact_tools: true,
                },
                request,
            )
        },
    },
];

/// The twin of K2.5's built-in template.
pub const K25_TWINS: &[NativeTwin] = &[NativeTwin {
    name: "kimi-k2.5 (built-in)",
    sha256: K25_BUILTIN_SHA256,
    kwargs: Variant::K25.implemented_kwargs(),
    render: |request| render(Variant::K25, request),
}];

/// Which Kimi template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    K2July2025,
    K2,
    K2Thinking { compact_tools: bool },
    K25,
}

impl Variant {
    /// The `chat_template_kwargs` this variant's template reads.
    pub const fn implemented_kwargs(self) -> &'static [&'static str] {
        match self {
            Variant::K25 => &["thinking", "preserve_thinking"],
            _ => &[],
        }
    }
}

const DEFAULT_SYSTEM: &str =
    "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>";
const JULY_DEFAULT_SYSTEM: &str =
    "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>";
const TOOL_DECLARE: &str = "<|im_system|>tool_declare<|im_middle|>";
const END: &str = "<|im_end|>";
const GENERATION_PROMPT: &str = "<|im_assistant|>assistant<|im_middle|>";
const MEDIA: &str = "<|media_start|>image<|media_content|><|media_pad|><|media_end|>";
const K25_MEDIA: &str = "<|media_begin|>image<|media_content|><|media_pad|><|media_end|>";

/// `tojson(separators=(',', ':'))` and `tojson` of the deep-sorted tools.
static COMPACT_SORTED: LazyLock<DumpOptions> = LazyLock::new(|| DumpOptions {
    separators: Some((",".into(), ":".into())),
    sort_keys: true,
    ..DumpOptions::default()
});
static DEFAULT_SORTED: LazyLock<DumpOptions> = LazyLock::new(|| DumpOptions {
    sort_keys: true,
    ..DumpOptions::default()
});

/// The render, or `None` when it would not be exact.
pub fn render(variant: Variant, request: &RenderRequest) -> Option<String> {
    let messages = native::parse_messages(request.messages)?;
    let mut out = native::output_buffer(&messages);
    let switches = Switches::read(variant, request)?;

    if let Some(declaration) = request.tool_declaration(|tools| tool_declaration(variant, tools)) {
        out.push_str(TOOL_DECLARE);
        out.push_str(&declaration);
        out.push_str(END);
    }
    let first_is_system = messages.first()?.role == Role::System;
    match variant {
        Variant::K2July2025 => {
            if !first_is_system {
                out.push_str(JULY_DEFAULT_SYSTEM);
            }
            for message in &messages {
                july_message(&mut out, message)?;
            }
        }
        Variant::K2 => {
            if !first_is_system {
                out.push_str(DEFAULT_SYSTEM);
                out.push('\n');
            }
            for message in &messages {
                k2_message(&mut out, message)?;
            }
        }
        Variant::K2Thinking { .. } | Variant::K25 => {
            if variant != Variant::K25 && !first_is_system {
                out.push_str(DEFAULT_SYSTEM);
            }
            thinking_messages(&mut out, variant, switches, &messages)?;
        }
    }
    if request.add_generation_prompt {
        out.push_str(GENERATION_PROMPT);
        if variant == Variant::K25 {
            out.push_str(if switches.thinking_off {
                "<think></think>"
            } else {
                "<think>"
            });
        }
    }
    Some(out)
}

/// K2.5's `chat_template_kwargs` switches (both false for the other variants).
#[derive(Debug, Clone, Copy)]
struct Switches {
    thinking_off: bool,
    preserve_thinking: bool,
}

impl Switches {
    /// `thinking` (default true) is tested with `is false`; `preserve_thinking` (default false)
    /// both for truth and with `is false`, so only booleans are rendered here (`None` otherwise).
    fn read(variant: Variant, request: &RenderRequest) -> Option<Switches> {
        let thinking_off = variant == Variant::K25 && request.kwarg_is_false("thinking");
        let preserve_thinking = match (variant, request.kwarg("preserve_thinking")) {
            (Variant::K25, Some(Value::Bool(preserve))) => *preserve,
            (Variant::K25, Some(_)) => return None,
            _ => false,
        };
        Some(Switches {
            thinking_off,
            preserve_thinking,
        })
    }
}

/// The built-in K2 template's message: header, content (then an assistant's tool calls), end.
fn k2_message(out: &mut String, message: &Message) -> Option<()> {
    header(out, message)?;
    match (message.role, message.tool_calls) {
        (Role::Assistant, Some(calls)) if calls.truthy() => {
            content(out, message, MEDIA)?;
            tool_calls(out, calls)?;
        }
        _ => plain_body(out, message, MEDIA)?,
    }
    out.push_str(END);
    Some(())
}

/// K2-Thinking's and K2.5's messages: every assistant turn opens with `<think>…</think>`, empty
/// in the history (up to the last assistant without tool calls) unless reasoning is preserved.
fn thinking_messages(
    out: &mut String,
    variant: Variant,
    switches: Switches,
    messages: &[Message],
) -> Option<()> {
    let media = if variant == Variant::K25 {
        K25_MEDIA
    } else {
        MEDIA
    };
    let history = if switches.preserve_thinking {
        0
    } else {
        messages
            .iter()
            .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_some_and(Json::truthy))
            .map_or(0, |last| last + 1)
    };
    for (i, message) in messages.iter().enumerate() {
        header(out, message)?;
        if message.role != Role::Assistant {
            plain_body(out, message, media)?;
            out.push_str(END);
            continue;
        }
        let dropped = i < history || switches.thinking_off && !switches.preserve_thinking;
        let reasoning = if dropped {
            ""
        } else {
            reasoning_of(variant, message)?
        };
        out.push_str("<think>");
        out.push_str(reasoning);
        out.push_str("</think>");
        content(out, message, media)?;
        if let Some(calls) = message.tool_calls.filter(|c| c.truthy()) {
            tool_calls(out, calls)?;
        }
        out.push_str(END);
    }
    Some(())
}

/// The reasoning an assistant turn renders when it is not dropped.
fn reasoning_of<'a>(variant: Variant, message: &Message<'a>) -> Option<&'a str> {
    if variant == Variant::K25 {
        // `reasoning_content or reasoning or ''`
        match truthy_text(message.reasoning_content)? {
            Some(text) => Some(text),
            None => Some(truthy_text(message.reasoning)?.unwrap_or_default()),
        }
    } else {
        // `get('reasoning_content', '')`
        match message.reasoning_content {
            Some(text) => text.as_str(),
            None => Some(""),
        }
    }
}

/// What the template writes between `tool_declare<|im_middle|>` and `<|im_end|>`: the
/// deep-sorted tools as JSON, or for K2.5 their TypeScript declaration when it encodes.
fn tool_declaration(variant: Variant, tools: &[Json]) -> String {
    let mut out = String::new();
    let options = match variant {
        Variant::K2July2025
        | Variant::K2Thinking {
            compact_tools: false,
        } => &*DEFAULT_SORTED,
        Variant::K2
        | Variant::K2Thinking {
            compact_tools: true,
        } => &*COMPACT_SORTED,
        Variant::K25 => {
            let sorted: Vec<Value> = tools.iter().map(|t| deep_sort(&t.to_value())).collect();
            match tools_ts::encode_tools(&sorted) {
                Ok(ts) if !ts.is_empty() => return ts,
                _ => &*COMPACT_SORTED,
            }
        }
    };
    write_json_list(&mut out, tools, options);
    out
}

/// The July-2025 template's message: a fixed header per role, then the content.
fn july_message(out: &mut String, message: &Message) -> Option<()> {
    out.push_str(match message.role {
        Role::System => "<|im_system|>system<|im_middle|>",
        Role::User => "<|im_user|>user<|im_middle|>",
        Role::Assistant => "<|im_assistant|>assistant<|im_middle|>",
        Role::Tool => "<|im_system|>tool<|im_middle|>",
    });
    match message.content {
        Some(Json::String(text)) => out.push_str(text),
        // Parts; a missing content iterates as empty.
        None => {}
        Some(Json::Array(parts)) => {
            for part in parts {
                let part = part.as_object()?;
                let image = part.get("type").and_then(Json::as_str) == Some("image")
                    || part.contains_key("image")
                    || part.contains_key("image_url");
                if image {
                    out.push_str(MEDIA);
                } else {
                    part_text(out, part)?;
                }
            }
        }
        Some(_) => return None,
    }
    out.push_str(END);
    Some(())
}

/// `set_roles`: `<|im_user|>`, `<|im_assistant|>` or (any other role) `<|im_system|>`, then the
/// message's `name` if truthy, else its role, then `<|im_middle|>`.
fn header(out: &mut String, message: &Message) -> Option<()> {
    out.push_str(match message.role {
        Role::User => "<|im_user|>",
        Role::Assistant => "<|im_assistant|>",
        Role::System | Role::Tool => "<|im_system|>",
    });
    out.push_str(truthy_text(message.name)?.unwrap_or(message.role.as_str()));
    out.push_str("<|im_middle|>");
    Some(())
}

/// A message that is not an assistant turn with tool calls: tool results as
/// `## Return of {tool_call_id}\n{content}`, anything else its content.
fn plain_body(out: &mut String, message: &Message, media: &str) -> Option<()> {
    if message.role == Role::Tool {
        out.push_str("## Return of ");
        if let Some(id) = message.tool_call_id {
            out.push_str(id.as_str()?);
        }
        out.push('\n');
    }
    content(out, message, media)
}

/// `render_content`: a string as is, parts as their text (images as `media` + `\n`), nothing
/// for a missing content.
fn content(out: &mut String, message: &Message, media: &str) -> Option<()> {
    match message.content {
        None => {}
        Some(Json::String(text)) => out.push_str(text),
        Some(Json::Array(parts)) => {
            for part in parts {
                let part = part.as_object()?;
                let kind = part.get("type").and_then(Json::as_str);
                let image = if media == K25_MEDIA {
                    matches!(kind, Some("image" | "image_url"))
                } else {
                    kind == Some("image")
                        || part.contains_key("image")
                        || part.contains_key("image_url")
                };
                if image {
                    out.push_str(media);
                    out.push('\n');
                } else {
                    part_text(out, part)?;
                }
            }
        }
        Some(_) => return None,
    }
    Some(())
}

/// `{{ part['text'] }}`: a string, or nothing when absent.
fn part_text(out: &mut String, part: &Object) -> Option<()> {
    match part.get("text") {
        Some(Json::String(text)) => out.push_str(text),
        None => {}
        Some(_) => return None,
    }
    Some(())
}

/// `render_toolcalls`: ids as given, string arguments verbatim, others through `tojson`.
fn tool_calls(out: &mut String, calls: &Json) -> Option<()> {
    out.push_str(super::SECTION_BEGIN);
    for call in calls.as_array()? {
        let call = call.as_object()?;
        out.push_str(super::CALL_BEGIN);
        match call.get("id") {
            Some(Json::String(id)) => out.push_str(id),
            None => {}
            Some(_) => return None,
        }
        out.push_str(super::ARGUMENT_BEGIN);
        match call.get("function")?.as_object()?.get("arguments")? {
            Json::String(arguments) => out.push_str(arguments),
            other => write_json(out, other, &DumpOptions::default()),
        }
        out.push_str(super::CALL_END);
    }
    out.push_str("<|tool_calls_section_end|>");
    Some(())
}

/// `tools | tojson` over the list.
fn write_json_list(out: &mut String, tools: &[Json], options: &DumpOptions) {
    let (item_sep, _) = options
        .separators
        .as_ref()
        .map_or((", ", ""), |(item, key)| (item.as_str(), key.as_str()));
    out.push('[');
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push_str(item_sep);
        }
        write_json(out, tool, options);
    }
    out.push(']');
}

/// A value read for its truth (`x or …`): `Some(None)` when falsy, `Some(Some(text))` for a
/// truthy string, `None` (not rendered natively) for a truthy non-string Python would `str()`.
fn truthy_text<'a>(value: Option<&'a Json>) -> Option<Option<&'a str>> {
    match value {
        Some(value) if value.truthy() => Some(Some(value.as_str()?)),
        _ => Some(None),
    }
}
