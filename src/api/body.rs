//! The chat-completions request body for one prompt from the run's [`RequestOptions`]: built as a
//! JSON value ([`build_body`]) or serialized straight from the prompt's raw JSON
//! ([`serialize_body`], [`BodyFields`]), byte-identical either way.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{RequestOptions, ServerKind};
use crate::dataset::Prompt;

/// The chat-completions body for one prompt. `extra_body` is merged after the run's options
/// (top-level keys replace), the prompt's own options ([`Prompt::request_options`]) last.
pub fn build_body(prompt: &Prompt, opts: &RequestOptions) -> Value {
    let tools = prompt
        .tools
        .as_ref()
        .filter(|t| opts.tools_as_parameter && !t.is_empty());
    let mut body = body_fields(opts, tools.is_some());
    // Fill the placeholders `body_fields` reserved (unless `extra_body` replaced them).
    if let Some(slot @ Value::Null) = body.get_mut("messages") {
        *slot = Value::Array(
            prompt
                .messages_to_send(opts.tools_as_parameter)
                .into_owned(),
        );
    }
    if let (Some(tools), Some(slot @ Value::Null)) = (tools, body.get_mut("tools")) {
        *slot = Value::Array(tools.clone());
    }
    if let Some(own) = &prompt.request_options {
        body.extend(own.fields());
    }
    Value::Object(body)
}

/// The request body, serialized, from the prompt's messages and tools already serialized as JSON.
///
/// Byte-identical to serializing [`build_body`] of the same prompt, without rebuilding (and
/// cloning) the message tree per request: the hot path keeps prompts as raw JSON only.
pub fn serialize_body(
    messages: &RawValue,
    tools: Option<&RawValue>,
    opts: &RequestOptions,
) -> serde_json::Result<Box<RawValue>> {
    BodyFields::new(opts).serialize(messages, tools)
}

/// The body fields of one endpoint's requests, built once: [`serialize_body`] without building
/// the field map per request.
#[derive(Debug, Clone)]
pub struct BodyFields {
    with_tools: Map<String, Value>,
    without_tools: Map<String, Value>,
    tools_as_parameter: bool,
}

impl BodyFields {
    pub fn new(opts: &RequestOptions) -> BodyFields {
        BodyFields {
            with_tools: body_fields(opts, true),
            without_tools: body_fields(opts, false),
            tools_as_parameter: opts.tools_as_parameter,
        }
    }

    /// Whether tools go out as the `tools` parameter (else the dataset's system text carries them).
    pub fn tools_as_parameter(&self) -> bool {
        self.tools_as_parameter
    }

    /// The body for `messages` and `tools`, byte-identical to [`serialize_body`].
    pub fn serialize(
        &self,
        messages: &RawValue,
        tools: Option<&RawValue>,
    ) -> serde_json::Result<Box<RawValue>> {
        self.serialize_with(messages, tools, None)
    }

    /// [`BodyFields::serialize`] with a prompt's own options (`Prompt::request_options` fields):
    /// they replace the run's value of the same key in place, others follow at the end — the
    /// same body as [`build_body`].
    pub fn serialize_with(
        &self,
        messages: &RawValue,
        tools: Option<&RawValue>,
        own: Option<&Map<String, Value>>,
    ) -> serde_json::Result<Box<RawValue>> {
        // Tools not sent as a parameter have no placeholder; an `extra_body` "tools" stays as given.
        let tools = tools.filter(|_| self.tools_as_parameter);
        let fields = if tools.is_some() {
            &self.with_tools
        } else {
            &self.without_tools
        };
        serde_json::value::to_raw_value(&RawBody {
            fields,
            messages,
            tools,
            own,
        })
    }
}

/// A body whose `messages`/`tools` placeholders (`null`, see [`body_fields`]) are written from
/// raw JSON, in the fields' own order.
struct RawBody<'a> {
    fields: &'a Map<String, Value>,
    messages: &'a RawValue,
    tools: Option<&'a RawValue>,
    /// The prompt's own options, written over the run's.
    own: Option<&'a Map<String, Value>>,
}

impl Serialize for RawBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.fields {
            if let Some(own) = self.own.and_then(|own| own.get(k)) {
                map.serialize_entry(k, own)?;
                continue;
            }
            match (k.as_str(), v, self.tools) {
                ("messages", Value::Null, _) => map.serialize_entry(k, self.messages)?,
                ("tools", Value::Null, Some(tools)) => map.serialize_entry(k, tools)?,
                _ => map.serialize_entry(k, v)?,
            }
        }
        for (k, v) in self.own.into_iter().flatten() {
            if !self.fields.contains_key(k) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// Every body field from the options, with `null` placeholders where `messages` and (if the
/// prompt has tools and they are sent as a parameter) `tools` go, so both body builders share one
/// field order. `extra_body` is applied last and may override anything, placeholders included.
fn body_fields(opts: &RequestOptions, has_tools: bool) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(opts.model.as_str()));
    body.insert("messages".into(), Value::Null);
    if has_tools {
        body.insert("tools".into(), Value::Null);
    }
    if let Some(v) = opts.max_tokens {
        body.insert("max_tokens".into(), v.into());
    }
    if let Some(v) = opts.temperature {
        body.insert("temperature".into(), v.into());
    }
    if let Some(v) = opts.top_p {
        body.insert("top_p".into(), v.into());
    }
    if let Some(v) = opts.seed {
        body.insert("seed".into(), v.into());
    }
    if let Some(v) = &opts.reasoning {
        body.insert("reasoning".into(), v.clone());
    }
    if let Some(v) = &opts.provider {
        body.insert("provider".into(), v.clone());
    }
    if opts.server_kind == ServerKind::OpenRouter {
        // A documented no-op today (usage is always returned); harmless and keeps older behaviour.
        body.insert("usage".into(), serde_json::json!({"include": true}));
    }
    if let Some(v) = &opts.chat_template_kwargs {
        body.insert("chat_template_kwargs".into(), Value::Object(v.clone()));
    }
    if let (ServerKind::Vllm, Some(spaces)) = (opts.server_kind, opts.spaces_between_special_tokens)
    {
        body.insert("spaces_between_special_tokens".into(), spaces.into());
    }
    if opts.server_token_ids {
        match opts.server_kind {
            ServerKind::Vllm | ServerKind::Sglang => {
                body.insert("return_token_ids".into(), true.into());
            }
            ServerKind::LlamaCpp => {
                body.insert("return_tokens".into(), true.into());
                body.insert("verbose".into(), true.into());
            }
            // Rejected by `validate`; nothing to ask a server that cannot answer.
            ServerKind::OpenRouter | ServerKind::Generic => {}
        }
    }
    body.insert("stream".into(), opts.stream.into());
    if opts.stream {
        body.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    for (k, v) in &opts.extra_body {
        body.insert(k.clone(), v.clone());
    }
    body
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::OptionsError;
    use serde_json::json;

    fn prompt(tools: Option<Vec<Value>>) -> Prompt {
        Prompt {
            id: "p1".into(),
            source: "test".into(),
            messages: vec![json!({"role": "user", "content": "hi"})],
            tools,
            meta: Value::Null,
            ..Prompt::default()
        }
    }

    fn weather_tool() -> Value {
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}})
    }

    #[test]
    fn openrouter_body_with_every_extra() {
        let mut extra = Map::new();
        extra.insert("top_k".into(), json!(20));
        extra.insert("usage".into(), json!({"include": false}));
        let opts = RequestOptions {
            model: "moonshotai/kimi-k2-0905:exacto".into(),
            max_tokens: Some(512),
            temperature: Some(0.6),
            top_p: Some(0.95),
            seed: Some(7),
            reasoning: Some(json!({"effort": "high"})),
            provider: Some(
                json!({"order": ["Fireworks"], "allow_fallbacks": false, "quantizations": ["int4"]}),
            ),
            tools_as_parameter: true,
            stream: true,
            extra_body: extra,
            server_kind: ServerKind::OpenRouter,
            ..Default::default()
        };
        opts.validate().unwrap();
        let body = build_body(&prompt(Some(vec![weather_tool()])), &opts);
        assert_eq!(
            body,
            json!({
                "model": "moonshotai/kimi-k2-0905:exacto",
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [weather_tool()],
                "max_tokens": 512, "temperature": 0.6, "top_p": 0.95, "seed": 7,
                "reasoning": {"effort": "high"},
                "provider": {"order": ["Fireworks"], "allow_fallbacks": false, "quantizations": ["int4"]},
                "usage": {"include": false},
                "stream": true,
                "stream_options": {"include_usage": true},
                "top_k": 20
            })
        );
    }

    /// The hot path's raw-JSON body must be byte-for-byte the serialized `build_body`: the
    /// journal's `request` is those bytes, and resumed runs compare against older journals.
    #[test]
    fn serialize_body_matches_build_body() {
        let mut extra = Map::new();
        extra.insert("top_k".into(), json!(20));
        let variants = [
            RequestOptions {
                model: "m".into(),
                max_tokens: Some(256),
                server_kind: ServerKind::OpenRouter,
                ..Default::default()
            },
            RequestOptions {
                model: "m".into(),
                tools_as_parameter: true,
                stream: true,
                seed: Some(3),
                extra_body: extra.clone(),
                ..Default::default()
            },
            RequestOptions {
                model: "m".into(),
                tools_as_parameter: false,
                ..Default::default()
            },
        ];
        for opts in &variants {
            for tools in [None, Some(vec![weather_tool()])] {
                let p = prompt(tools);
                let messages = serde_json::value::to_raw_value(&p.messages).unwrap();
                let raw_tools = p
                    .tools
                    .as_ref()
                    .map(|t| serde_json::value::to_raw_value(t).unwrap());
                let raw = serialize_body(&messages, raw_tools.as_deref(), opts).unwrap();
                assert_eq!(
                    raw.get(),
                    serde_json::to_string(&build_body(&p, opts)).unwrap()
                );
            }
        }
    }

    /// A prompt's own options and the dataset's system text: the same bytes on both paths, the
    /// prompt's `provider` replacing the run's in place, and the system text (tool JSON included)
    /// sent only when tools are not a parameter.
    #[test]
    fn prompt_options_and_system_text_on_both_body_paths() {
        let mut p = prompt(Some(vec![weather_tool()]));
        p.messages
            .insert(0, json!({"role": "system", "content": "Be brief."}));
        p.system_with_tools = Some("Be brief. {\"name\": \"get_weather\"}".into());
        p.request_options = Some(Box::new(crate::dataset::PromptOptions {
            tool_choice: Some(json!("none")),
            parallel_tool_calls: Some(false),
            provider: Some(json!({"only": ["B"]})),
            max_tokens: Some(7),
        }));
        for tools_as_parameter in [true, false] {
            let opts = RequestOptions {
                model: "m".into(),
                tools_as_parameter,
                max_tokens: Some(64),
                provider: Some(json!({"only": ["A"]})),
                server_kind: ServerKind::OpenRouter,
                ..Default::default()
            };
            let body = build_body(&p, &opts);
            let messages =
                serde_json::value::to_raw_value(&p.messages_to_send(tools_as_parameter)).unwrap();
            let tools = serde_json::value::to_raw_value(p.tools.as_ref().unwrap()).unwrap();
            let own = p.request_options.as_ref().unwrap().fields();
            let raw = BodyFields::new(&opts)
                .serialize_with(&messages, Some(&tools), Some(&own))
                .unwrap();
            assert_eq!(raw.get(), serde_json::to_string(&body).unwrap());
            assert_eq!(body["provider"], json!({"only": ["B"]}));
            assert_eq!(body["tool_choice"], "none");
            assert_eq!(body["parallel_tool_calls"], false);
            assert_eq!(body["max_tokens"], 7);
            let system = body["messages"][0]["content"].as_str().unwrap();
            assert_eq!(body.get("tools").is_some(), tools_as_parameter);
            assert_eq!(
                system.contains("get_weather"),
                !tools_as_parameter,
                "{system}"
            );
        }
    }

    #[test]
    fn tools_stay_out_when_the_system_prompt_carries_them() {
        let opts = RequestOptions {
            model: "m".into(),
            tools_as_parameter: false,
            ..Default::default()
        };
        let body = build_body(&prompt(Some(vec![weather_tool()])), &opts);
        assert!(body.get("tools").is_none());
        assert_eq!(body["stream"], false);
        assert!(body.get("stream_options").is_none());
        assert!(body.get("usage").is_none());
        // An empty tool list is not sent either.
        let opts = RequestOptions {
            tools_as_parameter: true,
            ..opts
        };
        assert!(build_body(&prompt(Some(vec![])), &opts)
            .get("tools")
            .is_none());
    }

    #[test]
    fn spaces_between_special_tokens_is_sent_to_vllm_only_when_set() {
        let vllm = RequestOptions {
            model: "m".into(),
            server_kind: ServerKind::Vllm,
            ..Default::default()
        };
        let body = build_body(&prompt(None), &vllm);
        assert!(body.get("spaces_between_special_tokens").is_none());
        for spaces in [false, true] {
            let opts = RequestOptions {
                spaces_between_special_tokens: Some(spaces),
                ..vllm.clone()
            };
            let body = build_body(&prompt(None), &opts);
            assert_eq!(body["spaces_between_special_tokens"], json!(spaces));
            // Both body builders agree.
            let raw = serialize_body(
                &serde_json::value::to_raw_value(&body["messages"]).unwrap(),
                None,
                &opts,
            )
            .unwrap();
            assert_eq!(serde_json::from_str::<Value>(raw.get()).unwrap(), body);
        }
        let sglang = RequestOptions {
            server_kind: ServerKind::Sglang,
            spaces_between_special_tokens: Some(false),
            ..vllm
        };
        assert!(build_body(&prompt(None), &sglang)
            .get("spaces_between_special_tokens")
            .is_none());
    }

    #[test]
    fn server_token_id_flags_follow_the_server_kind() {
        let mut kwargs = Map::new();
        kwargs.insert("thinking".into(), json!(false));
        let base = RequestOptions {
            model: "m".into(),
            server_token_ids: true,
            chat_template_kwargs: Some(kwargs),
            ..Default::default()
        };
        for (kind, expected) in [
            (ServerKind::Vllm, json!({"return_token_ids": true})),
            (ServerKind::Sglang, json!({"return_token_ids": true})),
            (
                ServerKind::LlamaCpp,
                json!({"return_tokens": true, "verbose": true}),
            ),
        ] {
            let opts = RequestOptions {
                server_kind: kind,
                ..base.clone()
            };
            opts.validate().unwrap();
            let body = build_body(&prompt(None), &opts);
            for (k, v) in expected.as_object().unwrap() {
                assert_eq!(&body[k], v, "{kind:?} {k}");
            }
            assert_eq!(body["chat_template_kwargs"], json!({"thinking": false}));
        }
        let generic = RequestOptions {
            server_kind: ServerKind::Generic,
            ..base.clone()
        };
        assert_eq!(
            generic.validate(),
            Err(OptionsError::TokenIdsUnsupported(ServerKind::Generic))
        );
        let sglang_stream = RequestOptions {
            server_kind: ServerKind::Sglang,
            stream: true,
            ..base
        };
        assert_eq!(
            sglang_stream.validate(),
            Err(OptionsError::NoTokenIdsWhenStreaming(ServerKind::Sglang))
        );
        let vllm_stream = RequestOptions {
            server_kind: ServerKind::Vllm,
            ..sglang_stream.clone()
        };
        assert_eq!(
            vllm_stream.validate(),
            Err(OptionsError::NoTokenIdsWhenStreaming(ServerKind::Vllm))
        );
        let llama_stream = RequestOptions {
            server_kind: ServerKind::LlamaCpp,
            ..sglang_stream
        };
        assert_eq!(
            llama_stream.validate(),
            Err(OptionsError::NoTokenIdsWhenStreaming(ServerKind::LlamaCpp))
        );
    }
}
