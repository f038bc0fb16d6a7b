//! Rebuilding one `chat.completion` from the `chat.completion.chunk`s of a stream, so the journal
//! and everything after it see the same shape whether or not the run streamed.
//!
//! Merging rules (the ones OpenAI's SDKs and K2-Vendor-Verifier use, generalized so a server's own
//! fields survive): string fields of `delta` are concatenated under the name the server used
//! (`content`, `reasoning` or `reasoning_content`, `refusal`); `tool_calls` are accumulated per
//! `index` (kept on each call) with `arguments` concatenated and `id`/`name`/`type` taken as sent; `reasoning_details`
//! are merged by their `index` with `text`/`summary`/`data` concatenated; per-choice `token_ids`
//! (vLLM) and `logprobs` lists are concatenated; `finish_reason`, `native_finish_reason` and other
//! choice fields keep their last non-null value; top-level fields (`id`, `model`, `provider`,
//! `prompt_token_ids`, llama.cpp `__verbose`, …) keep their last non-null value; `usage` comes from
//! the last chunk that has one.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::json_limits::tree_size;

/// Accumulates chunks; [`ChunkAssembler::finish`] gives the completion.
#[derive(Debug, Default)]
pub struct ChunkAssembler {
    top: Map<String, Value>,
    choices: BTreeMap<u64, ChoiceState>,
    usage: Option<Value>,
    chunks: usize,
}

#[derive(Debug)]
struct ChoiceState {
    message: Map<String, Value>,
    tool_calls: BTreeMap<u64, Map<String, Value>>,
    reasoning_details: Vec<Value>,
    has_reasoning_details: bool,
    fields: Map<String, Value>,
}

impl Default for ChoiceState {
    fn default() -> Self {
        let mut message = Map::new();
        message.insert("role".into(), Value::from("assistant"));
        message.insert("content".into(), Value::Null);
        ChoiceState {
            message,
            tool_calls: BTreeMap::new(),
            reasoning_details: Vec::new(),
            has_reasoning_details: false,
            fields: Map::new(),
        }
    }
}

impl ChunkAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of chunks pushed.
    pub fn chunks(&self) -> usize {
        self.chunks
    }

    /// Whether any choice has a non-null `finish_reason` yet.
    pub fn has_finish_reason(&self) -> bool {
        self.choices
            .values()
            .any(|c| c.fields.get("finish_reason").is_some_and(|f| !f.is_null()))
    }

    /// Merge one parsed chunk.
    pub fn push(&mut self, chunk: &Value) {
        self.chunks += 1;
        let Some(obj) = chunk.as_object() else {
            return;
        };
        for (key, value) in obj {
            match key.as_str() {
                "choices" => {
                    for (position, choice) in value.as_array().into_iter().flatten().enumerate() {
                        let index = choice
                            .get("index")
                            .and_then(Value::as_u64)
                            .unwrap_or(position as u64);
                        self.choices.entry(index).or_default().push(choice);
                    }
                }
                "usage" => {
                    if !value.is_null() {
                        self.usage = Some(value.clone());
                    }
                }
                // The error of a failed stream is reported by the client, not kept in the body.
                "error" => {}
                "object" => {
                    self.top.insert(key.clone(), Value::from("chat.completion"));
                }
                _ => set_unless_null(&mut self.top, key, value),
            }
        }
    }

    /// About the memory [`ChunkAssembler::finish`]'s tree would take
    /// (`json_limits::tree_size`), without building it: what the client bounds while a stream
    /// is read.
    pub fn tree_size(&self) -> usize {
        let choices: usize = self.choices.values().map(ChoiceState::tree_size).sum();
        map_size(&self.top) + choices + self.usage.as_ref().map_or(0, tree_size)
    }

    /// The assembled `chat.completion`.
    pub fn finish(&self) -> Value {
        let mut out = self.top.clone();
        out.insert("object".into(), Value::from("chat.completion"));
        let choices: Vec<Value> = self
            .choices
            .iter()
            .map(|(index, c)| c.finish(*index))
            .collect();
        out.insert("choices".into(), Value::Array(choices));
        if let Some(usage) = &self.usage {
            out.insert("usage".into(), usage.clone());
        }
        Value::Object(out)
    }
}

impl ChoiceState {
    fn push(&mut self, choice: &Value) {
        let Some(obj) = choice.as_object() else {
            return;
        };
        for (key, value) in obj {
            match key.as_str() {
                "index" => {}
                "delta" | "message" => self.push_delta(value),
                "token_ids" | "logprobs" => concat_lists(&mut self.fields, key, value),
                _ => set_unless_null(&mut self.fields, key, value),
            }
        }
    }

    fn push_delta(&mut self, delta: &Value) {
        let Some(obj) = delta.as_object() else {
            return;
        };
        for (key, value) in obj {
            match (key.as_str(), value) {
                ("tool_calls", Value::Array(calls)) => {
                    for (position, call) in calls.iter().enumerate() {
                        let index = call
                            .get("index")
                            .and_then(Value::as_u64)
                            .unwrap_or(position as u64);
                        merge_tool_call(self.tool_calls.entry(index).or_default(), call);
                    }
                }
                ("reasoning_details", Value::Array(items)) => {
                    self.has_reasoning_details = true;
                    for item in items {
                        merge_reasoning_detail(&mut self.reasoning_details, item);
                    }
                }
                ("role", Value::String(_)) => {
                    self.message.insert(key.clone(), value.clone());
                }
                (_, Value::String(s)) => match self.message.get_mut(key) {
                    Some(Value::String(acc)) => acc.push_str(s),
                    _ => {
                        self.message.insert(key.clone(), value.clone());
                    }
                },
                _ => set_unless_null(&mut self.message, key, value),
            }
        }
    }

    fn tree_size(&self) -> usize {
        let calls: usize = self.tool_calls.values().map(map_size).sum();
        let details: usize = self.reasoning_details.iter().map(tree_size).sum();
        map_size(&self.message) + calls + details + map_size(&self.fields)
    }

    fn finish(&self, index: u64) -> Value {
        let mut message = self.message.clone();
        if self.has_reasoning_details {
            message.insert(
                "reasoning_details".into(),
                Value::Array(self.reasoning_details.clone()),
            );
        }
        if !self.tool_calls.is_empty() {
            let calls = self
                .tool_calls
                .values()
                .map(|call| Value::Object(call.clone()))
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let mut out = Map::new();
        out.insert("index".into(), Value::from(index));
        out.insert("message".into(), Value::Object(message));
        for (k, v) in &self.fields {
            out.insert(k.clone(), v.clone());
        }
        if !out.contains_key("finish_reason") {
            out.insert("finish_reason".into(), Value::Null);
        }
        Value::Object(out)
    }
}

/// [`tree_size`] of an object's entries.
fn map_size(map: &Map<String, Value>) -> usize {
    map.iter()
        .map(|(k, v)| std::mem::size_of::<Value>() + k.len() + tree_size(v))
        .sum::<usize>()
}

/// Insert `value` unless it is null and a value is already there (a null still records that the
/// server sent the field).
fn set_unless_null(map: &mut Map<String, Value>, key: &str, value: &Value) {
    if !value.is_null() || !map.contains_key(key) {
        map.insert(key.to_string(), value.clone());
    }
}

/// Concatenate lists: a list value (`token_ids`) or an object of lists (`logprobs.content`).
fn concat_lists(map: &mut Map<String, Value>, key: &str, value: &Value) {
    match (map.get_mut(key), value) {
        (Some(Value::Array(acc)), Value::Array(more)) => acc.extend(more.iter().cloned()),
        (Some(Value::Object(acc)), Value::Object(more)) => {
            for (k, v) in more {
                match (acc.get_mut(k), v) {
                    (Some(Value::Array(a)), Value::Array(m)) => a.extend(m.iter().cloned()),
                    _ => set_unless_null(acc, k, v),
                }
            }
        }
        _ => set_unless_null(map, key, value),
    }
}

fn merge_tool_call(acc: &mut Map<String, Value>, call: &Value) {
    let Some(obj) = call.as_object() else {
        return;
    };
    for (key, value) in obj {
        match key.as_str() {
            // Kept as the server first sent it (the list is in index order anyway): an audit
            // of the stream checks each call's numbering.
            "index" => {
                acc.entry("index").or_insert_with(|| value.clone());
            }
            "function" => {
                let function = acc
                    .entry("function")
                    .or_insert_with(|| Value::Object(Map::new()));
                let (Some(function), Some(parts)) = (function.as_object_mut(), value.as_object())
                else {
                    continue;
                };
                for (fk, fv) in parts {
                    match (fk.as_str(), function.get_mut(fk), fv) {
                        ("arguments", Some(Value::String(args)), Value::String(more)) => {
                            args.push_str(more)
                        }
                        // Names are sent whole (some servers repeat them in every chunk).
                        ("name", _, Value::String(s)) if s.is_empty() => {}
                        _ => set_unless_null(function, fk, fv),
                    }
                }
            }
            "id" if value.as_str().is_some_and(str::is_empty) => {}
            _ => set_unless_null(acc, key, value),
        }
    }
    if let Some(function) = acc.get_mut("function").and_then(Value::as_object_mut) {
        function
            .entry("arguments")
            .or_insert_with(|| Value::from(""));
    }
}

fn merge_reasoning_detail(acc: &mut Vec<Value>, item: &Value) {
    let index = item.get("index").and_then(Value::as_u64);
    let existing = index.and_then(|i| {
        acc.iter_mut()
            .find(|d| d.get("index").and_then(Value::as_u64) == Some(i))
    });
    let (Some(Value::Object(target)), Some(parts)) = (existing, item.as_object()) else {
        acc.push(item.clone());
        return;
    };
    for (k, v) in parts {
        match (k.as_str(), target.get_mut(k), v) {
            ("text" | "summary" | "data", Some(Value::String(s)), Value::String(more)) => {
                s.push_str(more)
            }
            _ => set_unless_null(target, k, v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assemble(chunks: &[Value]) -> Value {
        let mut a = ChunkAssembler::new();
        for c in chunks {
            a.push(c);
        }
        a.finish()
    }

    #[test]
    fn content_reasoning_and_usage() {
        let out = assemble(&[
            json!({"id": "g1", "object": "chat.completion.chunk", "created": 1, "model": "m", "provider": "P",
                   "choices": [{"index": 0, "delta": {"role": "assistant", "content": "", "reasoning": "Let"}, "finish_reason": null, "native_finish_reason": null}]}),
            json!({"id": "g1", "object": "chat.completion.chunk", "created": 1, "model": "m", "provider": "P",
                   "choices": [{"index": 0, "delta": {"content": null, "reasoning": " me"}, "finish_reason": null}]}),
            json!({"id": "g1", "object": "chat.completion.chunk", "created": 1, "model": "m", "provider": "P",
                   "choices": [{"index": 0, "delta": {"content": "Hi", "reasoning": null}, "finish_reason": "stop", "native_finish_reason": "stop"}]}),
            json!({"id": "g1", "object": "chat.completion.chunk", "created": 1, "model": "m", "provider": "P",
                   "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "cost": 0.001}}),
        ]);
        assert_eq!(
            out,
            json!({"id": "g1", "object": "chat.completion", "created": 1, "model": "m", "provider": "P",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi", "reasoning": "Let me"},
                                "finish_reason": "stop", "native_finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 4, "cost": 0.001}})
        );
    }

    #[test]
    fn tool_calls_accumulate_per_index() {
        let out = assemble(&[
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "functions.a:0", "type": "function", "function": {"name": "a", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": "{\"x\":"}},
                {"index": 1, "id": "functions.b:1", "type": "function", "function": {"name": "b", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "", "function": {"name": "", "arguments": " 1}"}}]}, "finish_reason": "tool_calls"}]}),
        ]);
        assert_eq!(
            out["choices"][0]["message"]["tool_calls"],
            json!([
                {"index": 0, "id": "functions.a:0", "type": "function", "function": {"name": "a", "arguments": "{\"x\": 1}"}},
                {"index": 1, "id": "functions.b:1", "type": "function", "function": {"name": "b", "arguments": "{}"}}
            ])
        );
        assert_eq!(out["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(out["choices"][0]["message"]["content"], Value::Null);
    }

    #[test]
    fn reasoning_details_merge_by_index() {
        let out = assemble(&[
            json!({"choices": [{"index": 0, "delta": {"reasoning_details": [{"type": "reasoning.text", "text": "a", "index": 0, "format": "unknown"}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"reasoning_details": [{"type": "reasoning.text", "text": "b", "index": 0}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"reasoning_details": [{"type": "reasoning.encrypted", "data": "Z", "index": 1}]}}]}),
        ]);
        assert_eq!(
            out["choices"][0]["message"]["reasoning_details"],
            json!([{"type": "reasoning.text", "text": "ab", "index": 0, "format": "unknown"},
                   {"type": "reasoning.encrypted", "data": "Z", "index": 1}])
        );
    }

    #[test]
    fn vllm_token_ids_and_logprobs_concatenate() {
        let out = assemble(&[
            json!({"id": "c", "prompt_token_ids": [1, 2], "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "r"}, "token_ids": [5], "logprobs": {"content": [{"id": 5}]}}]}),
            json!({"id": "c", "prompt_token_ids": null, "choices": [{"index": 0, "delta": {"reasoning_content": "s"}, "token_ids": [6, 7], "logprobs": {"content": [{"id": 6}, {"id": 7}]}, "finish_reason": "length", "stop_reason": null}]}),
        ]);
        assert_eq!(out["prompt_token_ids"], json!([1, 2]));
        let choice = &out["choices"][0];
        assert_eq!(choice["token_ids"], json!([5, 6, 7]));
        assert_eq!(
            choice["logprobs"]["content"],
            json!([{"id": 5}, {"id": 6}, {"id": 7}])
        );
        assert_eq!(choice["message"]["reasoning_content"], "rs");
        assert_eq!(choice["stop_reason"], Value::Null);
        assert_eq!(choice["finish_reason"], "length");
    }

    #[test]
    fn several_choices_are_kept_apart() {
        let out = assemble(&[
            json!({"choices": [{"index": 1, "delta": {"content": "b"}}, {"index": 0, "delta": {"content": "a"}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "A"}, "finish_reason": "stop"}]}),
        ]);
        assert_eq!(out["choices"][0]["message"]["content"], "aA");
        assert_eq!(out["choices"][1]["message"]["content"], "b");
        assert_eq!(out["choices"][1]["finish_reason"], Value::Null);
    }
}
