//! Native renderers: the known chat templates written out in Rust.
//!
//! Rendering through minijinja costs tens of µs per conversation (the context tree, the VM,
//! strings passed around as template values), while the templates draftgen meets most are few and
//! fixed. Each of those has a hand-written twin in its family's file (`family/qwen3.rs`,
//! `family/deepseek_v3.rs`, `family/kimi/render.rs`), listed in the family's
//! [`FamilySpec::native_twins`] with the SHA-256 of the template it was written from. A twin is
//! used only when the template source is byte-identical to that one and the profile is the family
//! whose pre-processing it assumes (only the profile's family's twins are looked at); any other
//! template keeps the template path.
//!
//! [`FamilySpec::native_twins`]: super::family::FamilySpec::native_twins
//!
//! A twin answers `None` ("not handled", the template renders it) for every input whose render it
//! does not reproduce exactly: roles other than system/user/assistant/tool, values the template
//! would print with Python's `str()` or refuse (`raise_exception`, `str + None`), and
//! `chat_template_kwargs` the template reads but the twin does not implement. The parity corpora
//! must render through the twins, and a property test checks twin == minijinja wherever a twin
//! answers.

use rustc_hash::FxHasher;
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use crate::json::Json;

/// Which code rendered a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderPath {
    /// A native renderer (this module).
    Native,
    /// The chat template through minijinja.
    Template,
}

/// A known template's native twin, as its family lists it.
#[derive(Clone, Copy)]
pub struct NativeTwin {
    /// Which template it is, for people ("kimi-k2 (July 2025)").
    pub name: &'static str,
    /// Hex SHA-256 of the template source it reproduces.
    pub sha256: &'static str,
    /// The `chat_template_kwargs` it implements (any other the template reads makes it decline).
    pub kwargs: &'static [&'static str],
    /// The render, or `None` for an input it does not reproduce exactly.
    pub render: fn(&RenderRequest) -> Option<String>,
}

/// Twins are the same twin when they reproduce the same template.
impl PartialEq for NativeTwin {
    fn eq(&self, other: &Self) -> bool {
        self.sha256 == other.sha256
    }
}

impl Eq for NativeTwin {}

impl std::fmt::Debug for NativeTwin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeTwin")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

/// Context variables the profile sets after the kwargs, so a kwarg of that name never reaches
/// the template.
const CONTEXT_OWNED: [&str; 4] = ["messages", "tools", "documents", "add_generation_prompt"];

/// The native twin of one template source.
#[derive(Debug)]
pub struct NativeTemplate {
    twin: &'static NativeTwin,
    /// Every identifier-like word of the template source (string literals and comments
    /// included): a context variable whose name is not among them cannot change the output.
    words: HashSet<String>,
    tools_cache: ToolsCache,
}

impl NativeTemplate {
    /// The twin of `source` among `twins` (the profile's family's: a twin renders only the
    /// family it was written for).
    pub fn select(source: &str, twins: &'static [NativeTwin]) -> Option<Self> {
        let sha256 = hex::encode(Sha256::digest(source.as_bytes()));
        let twin = twins.iter().find(|twin| twin.sha256 == sha256)?;
        Some(Self {
            twin,
            words: words(source),
            tools_cache: ToolsCache::default(),
        })
    }

    pub fn twin(&self) -> &'static NativeTwin {
        self.twin
    }

    /// The render, or `None` when the twin does not reproduce this input exactly.
    pub fn render(
        &self,
        input: &JsonRenderInput,
        special_tokens: &Map<String, Value>,
    ) -> Option<String> {
        if let Some(kwargs) = input.chat_template_kwargs {
            let implemented = self.twin.kwargs;
            let unsupported = kwargs.keys().any(|key| {
                self.words.contains(key.as_str())
                    && !implemented.contains(&key.as_str())
                    && !CONTEXT_OWNED.contains(&key.as_str())
            });
            if unsupported {
                return None;
            }
        }
        let request = RenderRequest {
            messages: input.messages,
            tools: input.tools,
            add_generation_prompt: input.add_generation_prompt,
            kwargs: input.chat_template_kwargs,
            special_tokens,
            tools_cache: &self.tools_cache,
        };
        (self.twin.render)(&request)
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*` runs of a template source.
fn words(source: &str) -> HashSet<String> {
    source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// [`RenderInput`](super::RenderInput) with the conversation as [`Json`] (borrowed from its text):
/// what `draftgen render` parses each line into.
#[derive(Debug, Clone, Copy)]
pub struct JsonRenderInput<'a> {
    pub messages: &'a [Json<'a>],
    pub tools: Option<Tools<'a>>,
    pub add_generation_prompt: bool,
    pub chat_template_kwargs: Option<&'a Map<String, Value>>,
}

/// A request's tool list: parsed, or its JSON text (an array), parsed only when no declaration
/// made from the same text is cached. A twin reads the tools only to declare them, and one dataset
/// repeats a handful of tool lists, so most requests never parse theirs (DeepSeek-V3's template
/// does not read them at all).
#[derive(Debug, Clone, Copy)]
pub enum Tools<'a> {
    Parsed(&'a [Json<'a>]),
    Text(&'a str),
}

impl<'a> Tools<'a> {
    /// The list as `serde_json` values (for the template path).
    pub fn to_values(self) -> Result<Vec<Value>, serde_json::Error> {
        match self {
            Tools::Parsed(tools) => Ok(tools.iter().map(Json::to_value).collect()),
            Tools::Text(text) => serde_json::from_str(text),
        }
    }
}

/// What a twin renders from: the request and the template context the profile would build.
pub struct RenderRequest<'a> {
    pub messages: &'a [Json<'a>],
    pub tools: Option<Tools<'a>>,
    pub add_generation_prompt: bool,
    pub kwargs: Option<&'a Map<String, Value>>,
    /// `bos_token`, `eos_token`, … as the template sees them.
    pub special_tokens: &'a Map<String, Value>,
    pub tools_cache: &'a ToolsCache,
}

impl RenderRequest<'_> {
    /// The declaration `make` writes for the tools, cached by the tool list; `None` when the
    /// template sees no tools (absent or an empty list, both falsy) or a tool list given as text
    /// does not parse as one.
    pub fn tool_declaration(&self, make: impl FnOnce(&[Json]) -> String) -> Option<Arc<str>> {
        match self.tools? {
            Tools::Parsed([]) => None,
            Tools::Parsed(tools) => Some(self.tools_cache.get_or_make(tools, || make(tools))),
            Tools::Text(text) => self.tools_cache.get_or_make_from_text(text, || {
                let tools: Vec<Json> = serde_json::from_str(text).ok()?;
                (!tools.is_empty()).then(|| make(&tools))
            }),
        }
    }

    /// The kwarg `key` (after the implemented-kwargs check).
    pub fn kwarg(&self, key: &str) -> Option<&Value> {
        self.kwargs.and_then(|k| k.get(key))
    }

    /// `key is false`: only a literal `false` (Jinja's `false` test).
    pub fn kwarg_is_false(&self, key: &str) -> bool {
        matches!(self.kwarg(key), Some(Value::Bool(false)))
    }
}

/// Text made from a tool list, by the tool list: requests of one dataset share a handful of tool
/// lists, and writing their declaration is most of a native render (K2.5's TypeScript one ~12 µs
/// of ~15 µs, JSON about half of a Qwen3 render), while finding it again hashes and compares the
/// list once.
///
/// Lists match only when they are the same JSON: object keys in the same order, numbers of the
/// same kind and bits (`1` ≠ `1.0`, `0.0` ≠ `-0.0`); lists given as JSON text match only the same
/// text (the same list written otherwise is made again, which costs time, not exactness).
#[derive(Debug, Default)]
pub struct ToolsCache {
    entries: Mutex<CachedTools>,
}

/// Made texts by the hash of their tool list ([`hash_value`], or of the JSON text).
type CachedTools = HashMap<u64, Vec<(ToolsKey, Arc<str>)>>;

#[derive(Debug)]
enum ToolsKey {
    List(Vec<Json<'static>>),
    Text(Box<str>),
}

impl ToolsCache {
    /// Distinct lists kept before the cache starts over (a dataset with a tool list per request
    /// gains nothing from it).
    const CAPACITY: usize = 256;

    /// The text for `tools`, made by `make` the first time.
    pub fn get_or_make(&self, tools: &[Json], make: impl FnOnce() -> String) -> Arc<str> {
        let mut hasher = FxHasher::default();
        tools.len().hash(&mut hasher);
        for tool in tools {
            hash_value(tool, &mut hasher);
        }
        let key = hasher.finish();
        let found = self.find(key, |cached| match cached {
            ToolsKey::List(list) => {
                list.len() == tools.len() && list.iter().zip(tools).all(|(a, b)| same(a, b))
            }
            ToolsKey::Text(_) => false,
        });
        if let Some(text) = found {
            return text;
        }
        let owned = tools.iter().cloned().map(Json::into_owned).collect();
        self.insert(key, ToolsKey::List(owned), make())
    }

    /// The text for the tool list written as `json`, made by `make` the first time (`None`:
    /// nothing to declare, and nothing kept).
    pub fn get_or_make_from_text(
        &self,
        json: &str,
        make: impl FnOnce() -> Option<String>,
    ) -> Option<Arc<str>> {
        let mut hasher = FxHasher::default();
        (6u8, json).hash(&mut hasher);
        let key = hasher.finish();
        let found = self.find(key, |cached| match cached {
            ToolsKey::Text(text) => **text == *json,
            ToolsKey::List(_) => false,
        });
        if found.is_some() {
            return found;
        }
        Some(self.insert(key, ToolsKey::Text(json.into()), make()?))
    }

    fn find(&self, key: u64, matches: impl Fn(&ToolsKey) -> bool) -> Option<Arc<str>> {
        let entries = self.lock();
        let bucket = entries.get(&key)?;
        let (_, text) = bucket.iter().find(|(cached, _)| matches(cached))?;
        Some(Arc::clone(text))
    }

    fn insert(&self, key: u64, tools: ToolsKey, text: String) -> Arc<str> {
        let text: Arc<str> = Arc::from(text);
        let mut entries = self.lock();
        if entries.len() >= Self::CAPACITY {
            entries.clear();
        }
        entries
            .entry(key)
            .or_default()
            .push((tools, Arc::clone(&text)));
        text
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CachedTools> {
        // The map is valid whatever a panicking holder left behind.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A hash consistent with [`same`].
fn hash_value(value: &Json, hasher: &mut FxHasher) {
    match value {
        Json::Null => 0u8.hash(hasher),
        Json::Bool(b) => (1u8, *b).hash(hasher),
        Json::Number(n) => (2u8, number_bits(n)).hash(hasher),
        Json::String(s) => (3u8, s.as_ref()).hash(hasher),
        Json::Array(items) => {
            (4u8, items.len()).hash(hasher);
            for item in items {
                hash_value(item, hasher);
            }
        }
        Json::Object(map) => {
            (5u8, map.len()).hash(hasher);
            for (key, item) in map.iter() {
                key.hash(hasher);
                hash_value(item, hasher);
            }
        }
    }
}

/// The same JSON text, whatever the options it is written with: object keys in the same order,
/// numbers of the same kind and bits.
fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => number_bits(x) == number_bits(y),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((k, a), (l, b))| k == l && same(a, b))
        }
        _ => a == b,
    }
}

/// A number's kind and bits: what decides how it is written.
fn number_bits(n: &Number) -> (u8, u64) {
    if let Some(u) = n.as_u64() {
        (0, u)
    } else if let Some(i) = n.as_i64() {
        (1, i as u64)
    } else {
        (2, n.as_f64().map_or(0, f64::to_bits))
    }
}

/// The four roles the twins render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    fn parse(role: &str) -> Option<Self> {
        Some(match role {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message as the template sees it after transformers' normalization: keys whose value is
/// `null` are absent (`None` here), and `reasoning_content` is aliased from `thinking` or
/// `reasoning` (see `Profile::normalize_message`).
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    pub role: Role,
    pub content: Option<&'a Json<'a>>,
    /// `content` was given as `null` (DeepSeek-V3 keeps it when there are tool calls).
    pub content_null: bool,
    /// The first non-null of `reasoning_content`, `thinking`, `reasoning`.
    pub reasoning_content: Option<&'a Json<'a>>,
    /// `reasoning` itself.
    pub reasoning: Option<&'a Json<'a>>,
    pub tool_calls: Option<&'a Json<'a>>,
    pub tool_call_id: Option<&'a Json<'a>>,
    pub name: Option<&'a Json<'a>>,
}

impl<'a> Message<'a> {
    /// `None` for a message that is not an object or whose role is not one of [`Role`]'s.
    pub fn parse(message: &'a Json<'a>) -> Option<Self> {
        let map = message.as_object()?;
        let mut role = None;
        let mut parsed = Message {
            role: Role::System,
            content: None,
            content_null: false,
            reasoning_content: None,
            reasoning: None,
            tool_calls: None,
            tool_call_id: None,
            name: None,
        };
        let (mut explicit, mut thinking) = (None, None);
        // One pass over the (few) keys; nulls stay `None`, as if dropped.
        for (key, value) in map.iter() {
            let slot = match key {
                "role" => {
                    role = Some(Role::parse(value.as_str()?)?);
                    continue;
                }
                "content" => {
                    parsed.content_null = value.is_null();
                    &mut parsed.content
                }
                "reasoning_content" => &mut explicit,
                "thinking" => &mut thinking,
                "reasoning" => &mut parsed.reasoning,
                "tool_calls" => &mut parsed.tool_calls,
                "tool_call_id" => &mut parsed.tool_call_id,
                "name" => &mut parsed.name,
                _ => continue,
            };
            *slot = Some(value).filter(|v| !v.is_null());
        }
        parsed.role = role?;
        parsed.reasoning_content = explicit.or(thinking).or(parsed.reasoning);
        Some(parsed)
    }

    /// The content when it is a string (what the templates concatenate); `None` otherwise.
    pub fn text(&self) -> Option<&'a str> {
        self.content.and_then(Json::as_str)
    }
}

/// The messages, or `None` if any one is not renderable natively.
pub fn parse_messages<'a>(messages: &'a [Json<'a>]) -> Option<Vec<Message<'a>>> {
    messages.iter().map(Message::parse).collect()
}

/// A `String` to render into: the message texts plus room for the markup.
pub fn output_buffer(messages: &[Message]) -> String {
    let text: usize = messages
        .iter()
        .map(|m| {
            m.text().map_or(0, str::len)
                + m.reasoning_content
                    .and_then(Json::as_str)
                    .map_or(0, str::len)
        })
        .sum();
    String::with_capacity(text + 64 * messages.len() + 256)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_cache_tells_lists_apart() {
        let cache = ToolsCache::default();
        let text = |tools: &[Value]| {
            let json: Vec<Json> = tools.iter().map(Json::from_value).collect();
            cache.get_or_make(&json, || serde_json::to_string(tools).unwrap())
        };
        let a = [serde_json::json!({"name": "f", "x": 1, "y": [0.0]})];
        assert_eq!(&*text(&a), r#"[{"name":"f","x":1,"y":[0.0]}]"#);
        // Key order, number kinds and bits all count.
        let reordered = [serde_json::json!({"y": [0.0], "x": 1, "name": "f"})];
        assert_eq!(&*text(&reordered), r#"[{"y":[0.0],"x":1,"name":"f"}]"#);
        let float = [serde_json::json!({"name": "f", "x": 1.0, "y": [0.0]})];
        assert_eq!(&*text(&float), r#"[{"name":"f","x":1.0,"y":[0.0]}]"#);
        let negative_zero = [serde_json::json!({"name": "f", "x": 1, "y": [-0.0]})];
        assert_eq!(&*text(&negative_zero), r#"[{"name":"f","x":1,"y":[-0.0]}]"#);

        // Lists given as text match by their text; an empty list declares nothing.
        let from_text = |json: &str, made: &str| {
            cache.get_or_make_from_text(json, || (json != "[]").then(|| made.to_string()))
        };
        assert_eq!(
            from_text(r#"[{"a": 1}]"#, "first").as_deref(),
            Some("first")
        );
        assert_eq!(
            from_text(r#"[{"a": 1}]"#, "again").as_deref(),
            Some("first")
        );
        assert_eq!(from_text(r#"[{"a":1}]"#, "other").as_deref(), Some("other"));
        assert_eq!(from_text("[]", "none"), None);
    }

    #[test]
    fn messages_drop_nulls_and_alias_reasoning() {
        let m = serde_json::json!({"role": "assistant", "content": null, "thinking": "t",
                                   "reasoning": "r", "tool_calls": null});
        let m = Json::from_value(&m);
        let m = Message::parse(&m).unwrap();
        assert!(m.content.is_none() && m.content_null && m.tool_calls.is_none());
        assert_eq!(m.reasoning_content.and_then(Json::as_str), Some("t"));
        assert_eq!(m.reasoning.and_then(Json::as_str), Some("r"));
        let developer = serde_json::json!({"role": "developer"});
        assert!(Message::parse(&Json::from_value(&developer)).is_none());
        let no_role = serde_json::json!({"content": "x"});
        assert!(Message::parse(&Json::from_value(&no_role)).is_none());
    }
}
