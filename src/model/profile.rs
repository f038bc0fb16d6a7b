//! A model family's profile: tokenizer + template + the family's own rules; auto-detected from
//! the model directory, overridable with `--profile`.
//!
//! Rendering follows `tokenizer.apply_chat_template` (transformers 5) step by step: message keys
//! whose value is `null` are dropped, `reasoning_content` is aliased from `reasoning`/`thinking`,
//! the family's tokenizer pre-processing runs (Kimi: deep-sorted tools, K2.5 defaults and
//! TypeScript tools), and the template sees `messages`, `tools`, `documents`,
//! `add_generation_prompt`, the special tokens (`bos_token`, …) and `chat_template_kwargs`.
//!
//! When the template is one of the known ones, its native twin renders instead (`native.rs`),
//! falling back to the template for any input the twin does not reproduce exactly.

use serde_json::{Map, Value};
use sha2::Digest;
use std::path::{Path, PathBuf};

use super::client_messages;
pub use super::family::AssistantTurn;
use super::family::Family;
use super::native::{JsonRenderInput, NativeTemplate, NativeTwin, RenderPath, Tools};
use super::{ChatTemplate, ModelError, Tokenizer};
use crate::completion::Arguments;
use crate::json::Json;

/// How to load a profile.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--profile NAME`; `None` auto-detects.
    pub profile: Option<String>,
    /// `--chat-template FILE`: overrides the model directory's template.
    pub chat_template: Option<PathBuf>,
}

/// What a render needs.
#[derive(Debug, Clone, Default)]
pub struct RenderInput<'a> {
    pub messages: &'a [Value],
    pub tools: Option<&'a [Value]>,
    pub add_generation_prompt: bool,
    pub chat_template_kwargs: Option<&'a Map<String, Value>>,
}

/// A loaded model family profile.
pub struct Profile {
    pub name: String,
    pub family: Family,
    pub tokenizer: Tokenizer,
    /// The template (the `default` one when the model has several).
    pub template: ChatTemplate,
    /// The `tool_use` template, used when a request has tools, as transformers does.
    tool_use_template: Option<ChatTemplate>,
    /// The native twins of `template` and `tool_use_template`, when they are known templates.
    native: Option<NativeTemplate>,
    tool_use_native: Option<NativeTemplate>,
    /// `bos_token`, `eos_token`, … as the template sees them.
    special_tokens: Map<String, Value>,
    end_of_turn: String,
    /// Hex SHA-256 of the default template's source, so outputs can name the template they used.
    pub template_sha256: String,
    /// The template renders a list of content parts itself (`client_messages.rs`).
    renders_parts: bool,
}

/// Where the template came from, before compiling.
struct TemplateSources {
    default: Option<String>,
    tool_use: Option<String>,
}

impl Profile {
    /// Load the tokenizer and template from a model directory and pick the family.
    pub fn load(dir: &Path, options: &LoadOptions) -> Result<Self, ModelError> {
        let tokenizer_config = read_json(&dir.join("tokenizer_config.json"))?;
        let config = read_json(&dir.join("config.json"))?;
        let sources = template_sources(dir, options, tokenizer_config.as_ref())?;
        let family = match &options.profile {
            Some(name) => Family::from_name(name).ok_or_else(|| {
                ModelError::Other(format!(
                    "unknown profile {name:?}; known profiles: {}",
                    Family::names()
                ))
            })?,
            None => Family::detect(
                config.as_ref(),
                tokenizer_config.as_ref(),
                sources.default.as_deref(),
            ),
        };
        let spec = family.spec();
        let (default_source, tool_use_source) = match sources {
            TemplateSources {
                default: Some(default),
                tool_use,
            } => (default, tool_use),
            TemplateSources {
                default: None,
                tool_use: Some(tool_use),
            } => (tool_use, None),
            _ => match spec.builtin_template {
                Some(builtin) => (builtin.to_string(), None),
                None => {
                    return Err(ModelError::File {
                        path: dir.display().to_string(),
                        message: format!(
                            "no chat template (tokenizer_config.json `chat_template` or \
                             chat_template.jinja) and profile {} has no built-in one; pass \
                             --chat-template FILE",
                            spec.name
                        ),
                    })
                }
            },
        };
        let template_sha256 = hex::encode(sha2::Sha256::digest(default_source.as_bytes()));
        let template = ChatTemplate::new(&default_source)?;
        let renders_parts = client_messages::template_renders_parts(&default_source);
        let tool_use_template = tool_use_source
            .as_deref()
            .map(ChatTemplate::new)
            .transpose()?;
        let native = NativeTemplate::select(&default_source, family.spec().native_twins);
        let tool_use_native = tool_use_source
            .as_deref()
            .and_then(|source| NativeTemplate::select(source, family.spec().native_twins));
        let special_tokens = special_tokens(tokenizer_config.as_ref());
        let end_of_turn = match spec.end_of_turn {
            Some(token) => token.to_string(),
            None => special_tokens
                .get("eos_token")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        };
        let tokenizer = Tokenizer::from_dir(dir)?;
        Ok(Self {
            name: spec.name.to_string(),
            family,
            tokenizer,
            template,
            tool_use_template,
            native,
            tool_use_native,
            special_tokens,
            end_of_turn,
            template_sha256,
            renders_parts,
        })
    }

    /// Render the conversation to text, exactly as the family's serving stack does.
    pub fn render(&self, input: &RenderInput) -> Result<String, ModelError> {
        self.render_with_path(input).map(|(text, _)| text)
    }

    /// [`render`](Self::render), saying whether the native twin or the template rendered it.
    pub fn render_with_path(
        &self,
        input: &RenderInput,
    ) -> Result<(String, RenderPath), ModelError> {
        check_not_empty(input.messages.len())?;
        if input
            .messages
            .iter()
            .any(client_messages::needs_normalizing)
        {
            let messages = self.server_messages(input.messages);
            return self.render_normalized(&RenderInput {
                messages: &messages,
                ..input.clone()
            });
        }
        self.render_normalized(input)
    }

    /// [`render_with_path`](Self::render_with_path) of messages the servers would hand the
    /// template as they are.
    fn render_normalized(&self, input: &RenderInput) -> Result<(String, RenderPath), ModelError> {
        if let Some(text) = self.render_native(input) {
            return Ok((text, RenderPath::Native));
        }
        Ok((self.render_template(input)?, RenderPath::Template))
    }

    /// [`render`](Self::render) of a conversation parsed as [`Json`] (`draftgen render`'s input
    /// lines): the native twin reads it as it is, the template gets it converted.
    pub fn render_json(&self, input: &JsonRenderInput) -> Result<String, ModelError> {
        check_not_empty(input.messages.len())?;
        let as_written = input.messages.iter().all(|m| {
            m.as_object()
                .is_none_or(|m| m.get("content").is_some_and(|c| c.as_str().is_some()))
        });
        let native = self
            .native_for(input.tools.is_some())
            .filter(|_| as_written);
        if let Some(text) = native.and_then(|n| n.render(input, &self.special_tokens)) {
            return Ok(text);
        }
        let messages: Vec<Value> = input.messages.iter().map(Json::to_value).collect();
        let tools = input
            .tools
            .map(Tools::to_values)
            .transpose()
            .map_err(|e| ModelError::Other(format!("tools: {e}")))?;
        self.render_template(&RenderInput {
            messages: &messages,
            tools: tools.as_deref(),
            add_generation_prompt: input.add_generation_prompt,
            chat_template_kwargs: input.chat_template_kwargs,
        })
    }

    /// The native twin's render; `None` when the template has no twin or the twin does not
    /// reproduce this input exactly.
    pub fn render_native(&self, input: &RenderInput) -> Option<String> {
        if input.messages.is_empty() {
            return None;
        }
        let native = self.native_for(input.tools.is_some())?;
        let messages: Vec<Json> = input.messages.iter().map(Json::from_value).collect();
        let tools: Option<Vec<Json>> = input
            .tools
            .map(|tools| tools.iter().map(Json::from_value).collect());
        let input = JsonRenderInput {
            messages: &messages,
            tools: tools.as_deref().map(Tools::Parsed),
            add_generation_prompt: input.add_generation_prompt,
            chat_template_kwargs: input.chat_template_kwargs,
        };
        native.render(&input, &self.special_tokens)
    }

    /// The twin of the template a request uses: the `tool_use` one when it has tools.
    fn native_for(&self, has_tools: bool) -> Option<&NativeTemplate> {
        match (&self.tool_use_template, has_tools) {
            (Some(_), true) => self.tool_use_native.as_ref(),
            _ => self.native.as_ref(),
        }
    }

    /// The render through the chat template (minijinja), never the native twin.
    pub fn render_template(&self, input: &RenderInput) -> Result<String, ModelError> {
        let template = match (&self.tool_use_template, input.tools) {
            (Some(tool_use), Some(_)) => tool_use,
            _ => &self.template,
        };
        template.render(&Value::Object(self.context(input)))
    }

    /// The native twin of the (default) template, if it has one.
    pub fn native_renderer(&self) -> Option<&'static NativeTwin> {
        self.native.as_ref().map(NativeTemplate::twin)
    }

    /// Render and tokenize.
    pub fn render_ids(&self, input: &RenderInput) -> Result<Vec<u32>, ModelError> {
        Ok(self.tokenizer.encode(&self.render(input)?))
    }

    /// The variables the template sees.
    fn context(&self, input: &RenderInput) -> Map<String, Value> {
        let mut context = self.special_tokens.clone();
        self.family
            .rules()
            .prepare_context(input.tools, &mut context);
        let tools = context.remove("tools").unwrap_or(Value::Null);
        if let Some(kwargs) = input.chat_template_kwargs {
            for (key, value) in kwargs {
                context.insert(key.clone(), value.clone());
            }
        }
        context.insert(
            "messages".into(),
            Value::Array(
                input
                    .messages
                    .iter()
                    .map(|m| self.normalize_message(m))
                    .collect(),
            ),
        );
        context.insert("tools".into(), tools);
        context.insert("documents".into(), Value::Null);
        context.insert(
            "add_generation_prompt".into(),
            Value::Bool(input.add_generation_prompt),
        );
        context
    }

    /// The exact text the model generated after the generation prompt for this turn.
    ///
    /// Families with native rules write it themselves ([`FamilyRules::completion_text`]: Kimi,
    /// Qwen3 and DeepSeek-V3, see their files under `family/`).
    ///
    /// Other families: the render of the conversation with the turn appended as an assistant
    /// message, minus the render with the generation prompt (an error if that is not a prefix),
    /// cut right after the end-of-turn token; without `end_of_turn`, cut before it. Reasoning
    /// left open is cut before the family's reasoning close marker.
    ///
    /// [`FamilyRules::completion_text`]: super::family::FamilyRules::completion_text
    pub fn completion_text(
        &self,
        request: &RenderInput,
        turn: &AssistantTurn,
    ) -> Result<String, ModelError> {
        let thinking = self.thinking_enabled(request.chat_template_kwargs);
        if let Some(native) = self.family.rules().completion_text(thinking, turn) {
            return native;
        }
        let prompt = self.render(&RenderInput {
            add_generation_prompt: true,
            ..request.clone()
        })?;
        let mut messages = request.messages.to_vec();
        messages.push(self.assistant_message(turn));
        let full = self.render(&RenderInput {
            messages: &messages,
            add_generation_prompt: false,
            ..request.clone()
        })?;
        let Some(generated) = full.strip_prefix(prompt.as_str()) else {
            return Err(ModelError::Template(format!(
                "profile {}: the conversation rendered with the answer does not start with the \
                 rendered prompt, so the answer's text cannot be isolated",
                self.name
            )));
        };
        let mut text = match generated.rfind(self.end_of_turn.as_str()) {
            Some(at) if !self.end_of_turn.is_empty() => {
                if turn.end_of_turn {
                    &generated[..at + self.end_of_turn.len()]
                } else {
                    &generated[..at]
                }
            }
            _ => generated,
        };
        if let (Some(reasoning), false, Some(close)) = (
            turn.reasoning.as_deref(),
            turn.reasoning_closed,
            self.reasoning_close(),
        ) {
            let from = text.find(reasoning).map_or(0, |at| at + reasoning.len());
            if let Some(at) = text[from..].find(close) {
                text = &text[..from + at];
            }
        }
        Ok(text.to_string())
    }

    /// transformers 5's message normalization, except where the family's template needs the
    /// older behaviour ([`FamilySpec::keeps_null_content_with_tool_calls`]: DeepSeek-V3's
    /// template renders an assistant's tool calls only when its `content` is `null`, which
    /// transformers 5 drops). Servers pinned to transformers 4 keep it; so does draftgen.
    ///
    /// [`FamilySpec::keeps_null_content_with_tool_calls`]: super::family::FamilySpec::keeps_null_content_with_tool_calls
    fn normalize_message(&self, message: &Value) -> Value {
        let keeps_null = self.family.spec().keeps_null_content_with_tool_calls;
        let message = &client_messages::normalize_content(message, keeps_null, self.renders_parts);
        let mut normalized = normalize_message(message);
        let keep_null_content = self.family.spec().keeps_null_content_with_tool_calls
            && message.get("content").is_some_and(Value::is_null)
            && message.get("tool_calls").is_some_and(|c| !c.is_null());
        if let (true, Value::Object(map)) = (keep_null_content, &mut normalized) {
            map.insert("content".into(), Value::Null);
        }
        if self.family.rules().template_reads_argument_objects() {
            parse_call_arguments(&mut normalized);
        }
        normalized
    }

    /// Whether a list of text parts is joined into one string before this template sees it
    /// (the template does not loop over parts itself; `client_messages.rs`).
    pub fn joins_content_parts(&self) -> bool {
        !self.renders_parts
    }

    /// The messages as the servers hand them to the template (`client_messages.rs`).
    fn server_messages(&self, messages: &[Value]) -> Vec<Value> {
        let keeps_null = self.family.spec().keeps_null_content_with_tool_calls;
        messages
            .iter()
            .map(|m| client_messages::normalize_content(m, keeps_null, self.renders_parts))
            .collect()
    }

    /// The turn as the assistant message a template renders.
    fn assistant_message(&self, turn: &AssistantTurn) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), Value::from("assistant"));
        // DeepSeek-V3's template writes tool calls only for messages without content.
        let content = if turn.content.is_empty()
            && !turn.tool_calls.is_empty()
            && self.family.spec().keeps_null_content_with_tool_calls
        {
            Value::Null
        } else {
            Value::from(turn.content.as_str())
        };
        message.insert("content".into(), content);
        if let Some(reasoning) = &turn.reasoning {
            message.insert("reasoning_content".into(), Value::from(reasoning.as_str()));
        }
        if !turn.tool_calls.is_empty() {
            let calls = turn
                .tool_calls
                .iter()
                .map(|call| {
                    let arguments = match &call.arguments {
                        Arguments::Raw(text) => Value::from(text.as_str()),
                        Arguments::Object(value) => value.clone(),
                    };
                    let mut function = Map::new();
                    function.insert("name".into(), Value::from(call.name.as_str()));
                    function.insert("arguments".into(), arguments);
                    let mut entry = Map::new();
                    if let Some(id) = &call.id {
                        entry.insert("id".into(), Value::from(id.as_str()));
                    }
                    entry.insert("type".into(), Value::from("function"));
                    entry.insert("function".into(), Value::Object(function));
                    Value::Object(entry)
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        Value::Object(message)
    }

    /// The family's native tool-call id for the n-th tool call of the conversation
    /// (Kimi: `functions.NAME:n`); `None` if the family's token stream has no ids.
    pub fn native_tool_call_id(&self, name: &str, n: usize) -> Option<String> {
        self.family.rules().native_tool_call_id(name, n)
    }

    /// Whether `id` already has the family's native form (Kimi: `NAME:digits` as vLLM's parser
    /// accepts). Families without ids in their token stream accept any id.
    pub fn is_native_tool_call_id(&self, id: &str) -> bool {
        self.family.rules().is_native_tool_call_id(id)
    }

    /// The token that ends an assistant turn (`<|im_end|>`, `<｜end▁of▁sentence｜>`, …).
    pub fn end_of_turn(&self) -> &str {
        &self.end_of_turn
    }

    /// `</think>` for thinking families.
    pub fn reasoning_close(&self) -> Option<&str> {
        self.family.spec().reasoning_close
    }

    /// `<|tool_calls_section_begin|>`, `<tool_call>`, `<｜tool▁calls▁begin｜>`.
    pub fn tool_section_begin(&self) -> Option<&str> {
        self.family.spec().tool_section_begin
    }

    /// Whether the model thinks for a request with these `chat_template_kwargs`.
    pub fn thinking_enabled(&self, kwargs: Option<&Map<String, Value>>) -> bool {
        self.family.thinking_enabled(kwargs)
    }
}

fn check_not_empty(messages: usize) -> Result<(), ModelError> {
    if messages == 0 {
        return Err(ModelError::Template(
            "cannot render an empty conversation; give at least one message".into(),
        ));
    }
    Ok(())
}

/// transformers' message normalization: keys whose value is `null` are dropped, and reasoning
/// given as `reasoning_content`, `thinking` or `reasoning` is copied to `thinking` (first, if
/// absent) and `reasoning_content`.
fn normalize_message(message: &Value) -> Value {
    let Value::Object(map) = message else {
        return message.clone();
    };
    let mut out: Map<String, Value> = map
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let reasoning = ["reasoning_content", "thinking", "reasoning"]
        .iter()
        .find_map(|key| out.get(*key).cloned());
    if let Some(reasoning) = reasoning {
        if !out.contains_key("thinking") {
            let mut aliased = Map::new();
            aliased.insert("thinking".into(), reasoning.clone());
            aliased.extend(out);
            out = aliased;
        }
        out.insert("reasoning_content".into(), reasoning);
    }
    Value::Object(out)
}

/// An assistant message's JSON-string tool-call arguments parsed into objects, as vLLM does
/// before it renders (`_postprocess_messages` in `vllm/renderers/chat_utils/chat_message.py`):
/// a string that is not a JSON object becomes `{}`, as there.
fn parse_call_arguments(message: &mut Value) {
    let Some(Value::Array(calls)) = message.get_mut("tool_calls") else {
        return;
    };
    for call in calls {
        let Some(function) = call.get_mut("function").and_then(Value::as_object_mut) else {
            continue;
        };
        if let Some(Value::String(text)) = function.get("arguments") {
            let parsed = match serde_json::from_str::<Value>(text) {
                Ok(object @ Value::Object(_)) => object,
                _ => Value::Object(serde_json::Map::new()),
            };
            function.insert("arguments".into(), parsed);
        }
    }
}

fn read_json(path: &Path) -> Result<Option<Value>, ModelError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ModelError::File {
                path: path.display().to_string(),
                message: e.to_string(),
            })
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ModelError::File {
            path: path.display().to_string(),
            message: format!("invalid JSON: {e}"),
        })
}

/// The template sources in priority order: `--chat-template`, `chat_template.jinja`, then
/// `tokenizer_config.json`'s `chat_template` (a string, or a list of `{name, template}`).
fn template_sources(
    dir: &Path,
    options: &LoadOptions,
    tokenizer_config: Option<&Value>,
) -> Result<TemplateSources, ModelError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| ModelError::File {
            path: path.display().to_string(),
            message: format!("cannot read chat template: {e}"),
        })
    };
    if let Some(path) = &options.chat_template {
        return Ok(TemplateSources {
            default: Some(read(path)?),
            tool_use: None,
        });
    }
    let file = dir.join("chat_template.jinja");
    if file.is_file() {
        return Ok(TemplateSources {
            default: Some(read(&file)?),
            tool_use: None,
        });
    }
    let mut sources = TemplateSources {
        default: None,
        tool_use: None,
    };
    match tokenizer_config.and_then(|c| c.get("chat_template")) {
        Some(Value::String(template)) => sources.default = Some(template.clone()),
        Some(Value::Array(named)) => {
            for entry in named {
                let name = entry.get("name").and_then(Value::as_str);
                let template = entry.get("template").and_then(Value::as_str);
                match (name, template) {
                    (Some("default"), Some(t)) => sources.default = Some(t.to_string()),
                    (Some("tool_use"), Some(t)) => sources.tool_use = Some(t.to_string()),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Ok(sources)
}

/// `tokenizer.special_tokens_map` as transformers 5 hands it to templates: the set ones among
/// `bos_token`, `eos_token`, `unk_token`, `sep_token`, `pad_token`, `cls_token`, `mask_token`,
/// as strings (an `AddedToken` dict contributes its `content`).
fn special_tokens(tokenizer_config: Option<&Value>) -> Map<String, Value> {
    let mut map = Map::new();
    let Some(config) = tokenizer_config else {
        return map;
    };
    for key in [
        "bos_token",
        "eos_token",
        "unk_token",
        "sep_token",
        "pad_token",
        "cls_token",
        "mask_token",
    ] {
        let token = match config.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(added)) => added
                .get("content")
                .and_then(Value::as_str)
                .map(str::to_string),
            _ => None,
        };
        if let Some(token) = token {
            map.insert(key.into(), Value::String(token));
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalize_drops_nulls_and_aliases_reasoning() {
        // transformers 5.24 `_normalize_chat_messages` + `_alias_reasoning_fields` on
        // {"role": "assistant", "content": None, "reasoning": "r", "tool_calls": None}
        let got = normalize_message(
            &json!({"role": "assistant", "content": null, "reasoning": "r", "tool_calls": null}),
        );
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            r#"{"thinking":"r","role":"assistant","reasoning":"r","reasoning_content":"r"}"#
        );
    }

    #[test]
    fn special_tokens_from_strings_and_added_tokens() {
        let config = json!({
            "bos_token": {"__type": "AddedToken", "content": "<s>"},
            "eos_token": "</s>",
            "unk_token": null,
            "additional_special_tokens": ["<x>"]
        });
        let map = special_tokens(Some(&config));
        assert_eq!(
            Value::Object(map),
            json!({"bos_token": "<s>", "eos_token": "</s>"})
        );
    }
}
