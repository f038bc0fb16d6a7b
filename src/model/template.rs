//! Chat templates rendered with minijinja in an environment that matches transformers'.
//!
//! transformers renders chat templates in
//! `ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])`
//! with its own `tojson` (Python `json.dumps`), `raise_exception` and `strftime_now`. Templates
//! lean on Python: `.get()`, `.items()`, `.startswith()`, `.split()`, `.strip('\n')`, printing
//! `None` as `None`. This module reproduces that environment so a template renders the same bytes
//! here as under `apply_chat_template`; the differences that remain are noted where they live.

use minijinja::value::{from_args, Kwargs, Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State};
use std::path::Path;

use super::ModelError;
use crate::pyjson::{self, DumpOptions};

const TEMPLATE_NAME: &str = "chat_template";

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate").finish_non_exhaustive()
    }
}

impl ChatTemplate {
    /// Compile a template source.
    pub fn new(source: &str) -> Result<Self, ModelError> {
        let mut env = environment();
        env.add_template_owned(TEMPLATE_NAME, source.to_string())
            .map_err(|e| ModelError::Template(describe(&e)))?;
        Ok(Self { env })
    }

    /// Compile a template file (`chat_template.jinja`, a `--chat-template` override).
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let source = std::fs::read_to_string(path).map_err(|e| ModelError::File {
            path: path.display().to_string(),
            message: format!("cannot read chat template: {e}"),
        })?;
        Self::new(&source).map_err(|e| ModelError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Render with a context object (`messages`, `tools`, `add_generation_prompt`, kwargs, special tokens).
    pub fn render(&self, context: &serde_json::Value) -> Result<String, ModelError> {
        self.render_value(Value::from(minijinja::value::Serde(context)))
    }

    /// Render with a context already converted to a template value.
    pub fn render_value(&self, context: Value) -> Result<String, ModelError> {
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| ModelError::Template(describe(&e)))?;
        template
            .render(context)
            .map_err(|e| ModelError::Template(describe(&e)))
    }
}

/// An error message with its template line and the chain of causes (a `raise_exception` message
/// is the useful part, so it comes first).
fn describe(err: &Error) -> String {
    let mut message = match err.detail() {
        Some(detail) => format!("{} ({})", detail, err.kind()),
        None => err.kind().to_string(),
    };
    if let Some(line) = err.line() {
        message.push_str(&format!(" at template line {line}"));
    }
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message
}

/// The transformers-compatible environment.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    // Jinja2's `keep_trailing_newline=False` default, which transformers keeps: one trailing
    // newline of the source is dropped.
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(false)
        .build();
    if let Ok(syntax) = syntax {
        env.set_syntax(syntax);
    }
    // Jinja2's default `Undefined`: prints empty, iterates empty, is falsy; only attributes of an
    // undefined value are errors. minijinja's `Lenient` is exactly that.
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Lenient);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_formatter(|out, _state, value| {
        // `{{ x }}` is Python's `str(x)`: `None`, `True`, `1.0`, `['a']`.
        let text = match value.kind() {
            ValueKind::String => {
                return out
                    .write_str(value.as_str().unwrap_or_default())
                    .map_err(Error::from)
            }
            _ => pyjson::py_str(value),
        };
        out.write_str(&text).map_err(Error::from)
    });
    env.set_unknown_method_callback(python_method);
    env.add_filter("tojson", tojson);
    env.add_filter("string", |value: Value| pyjson::py_str(&value));
    env.add_filter("trim", |value: String, chars: Option<String>| match chars {
        Some(chars) => value.trim_matches(|c| chars.contains(c)).to_string(),
        None => value.trim_matches(is_py_space).to_string(),
    });
    // Jinja2's `iterable` is `iter(value)` succeeding: never for `None` (minijinja's says yes,
    // and a template's `tools is iterable and tools | length > 0` then fails on `None`).
    env.add_test("iterable", |value: Value| {
        !matches!(
            value.kind(),
            ValueKind::None | ValueKind::Bool | ValueKind::Number
        ) && value.try_iter().is_ok()
    });
    env.add_function("raise_exception", raise_exception);
    env.add_function("strftime_now", strftime_now);
    env
}

/// Python's `str.isspace()`: Rust's White_Space plus the information separators U+001C..U+001F.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python methods on strings, dicts and lists. The whitespace forms of `strip`/`split` follow
/// Python's definition of whitespace; everything else is minijinja-contrib's pycompat.
fn python_method(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if let Some(s) = value.as_str() {
        match (method, args) {
            ("strip", []) => return Ok(Value::from(s.trim_matches(is_py_space))),
            ("lstrip", []) => return Ok(Value::from(s.trim_start_matches(is_py_space))),
            ("rstrip", []) => return Ok(Value::from(s.trim_end_matches(is_py_space))),
            ("strip" | "lstrip" | "rstrip", [chars]) if chars.is_none() => {
                return python_method(state, value, method, &[]);
            }
            ("split", []) => {
                return Ok(Value::from(
                    s.split(is_py_space)
                        .filter(|part| !part.is_empty())
                        .map(Value::from)
                        .collect::<Vec<_>>(),
                ));
            }
            ("split", [sep, ..]) if sep.is_none() => {
                let (_, maxsplit): (Value, Option<i64>) = from_args(args)?;
                return Ok(Value::from(split_whitespace(s, maxsplit)));
            }
            ("rsplit", _) => {
                let (sep, maxsplit): (Option<String>, Option<i64>) = from_args(args)?;
                return Ok(Value::from(rsplit(s, sep.as_deref(), maxsplit)));
            }
            _ => {}
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// `str.split(None, maxsplit)`.
fn split_whitespace(s: &str, maxsplit: Option<i64>) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut rest = s.trim_start_matches(is_py_space);
    let mut splits = 0;
    while !rest.is_empty() {
        if maxsplit.is_some_and(|m| m >= 0 && splits >= m) {
            parts.push(Value::from(rest));
            break;
        }
        let end = rest.find(is_py_space).unwrap_or(rest.len());
        parts.push(Value::from(&rest[..end]));
        rest = rest[end..].trim_start_matches(is_py_space);
        splits += 1;
    }
    parts
}

/// `str.rsplit(sep, maxsplit)`.
fn rsplit(s: &str, sep: Option<&str>, maxsplit: Option<i64>) -> Vec<Value> {
    let limit = maxsplit.filter(|m| *m >= 0).map(|m| m as usize);
    let mut parts: Vec<Value> = match sep {
        Some(sep) if !sep.is_empty() => match limit {
            Some(n) => s.rsplitn(n + 1, sep).map(Value::from).collect(),
            None => s.rsplit(sep).map(Value::from).collect(),
        },
        _ => {
            let words: Vec<&str> = s.split(is_py_space).filter(|w| !w.is_empty()).collect();
            match limit {
                Some(n) if n < words.len() => {
                    // Keep the head as one piece, trimmed on the right only as Python does.
                    let mut rest = s.trim_end_matches(is_py_space);
                    let mut tail = Vec::new();
                    for _ in 0..n {
                        let start = rest.rfind(is_py_space).map(|i| i + 1).unwrap_or(0);
                        tail.push(Value::from(&rest[start..]));
                        rest = rest[..start].trim_end_matches(is_py_space);
                    }
                    tail.push(Value::from(rest));
                    tail
                }
                _ => words.into_iter().rev().map(Value::from).collect(),
            }
        }
    };
    parts.reverse();
    parts
}

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`.
fn tojson(value: &Value, args: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let mut options = DumpOptions::default();
    let positional = ["ensure_ascii", "indent", "separators", "sort_keys"];
    if args.len() > positional.len() {
        return Err(Error::new(
            ErrorKind::TooManyArguments,
            "tojson takes at most 4 arguments",
        ));
    }
    let mut named: Vec<(&str, Value)> = positional
        .iter()
        .copied()
        .zip(args.iter().cloned())
        .collect();
    for key in positional {
        if let Some(v) = kwargs.get::<Option<Value>>(key)? {
            named.push((key, v));
        }
    }
    kwargs.assert_all_used()?;
    for (key, v) in named {
        match key {
            "ensure_ascii" => options.ensure_ascii = v.is_true(),
            "sort_keys" => options.sort_keys = v.is_true(),
            "indent" => {
                options.indent = match v.kind() {
                    ValueKind::None | ValueKind::Undefined => None,
                    ValueKind::String => Some(v.as_str().unwrap_or_default().to_string()),
                    ValueKind::Number => {
                        let n = i64::try_from(v.clone())?;
                        Some(" ".repeat(n.max(0) as usize))
                    }
                    other => {
                        return Err(Error::new(
                            ErrorKind::InvalidOperation,
                            format!("tojson indent must be an int or a string, not {other}"),
                        ))
                    }
                }
            }
            _ => {
                options.separators =
                    if v.is_none() || v.is_undefined() {
                        None
                    } else {
                        let parts: Vec<String> = v
                            .try_iter()?
                            .map(|p| p.as_str().map(str::to_string))
                            .collect::<Option<_>>()
                            .ok_or_else(|| {
                                Error::new(
                                    ErrorKind::InvalidOperation,
                                    "tojson separators must be strings",
                                )
                            })?;
                        match <[String; 2]>::try_from(parts) {
                            Ok([item, key]) => Some((item, key)),
                            Err(_) => return Err(Error::new(
                                ErrorKind::InvalidOperation,
                                "tojson separators must be a pair (item_separator, key_separator)",
                            )),
                        }
                    }
            }
        }
    }
    let text = pyjson::dumps(value, &options)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    Ok(Value::from_safe_string(text))
}

/// `raise_exception(message)`: the template refuses its input.
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// The context variable that fixes the time `strftime_now` formats (Unix seconds, read as UTC):
/// the time a server rendered the prompt it answered, when a prompt is rendered again later.
/// No template names it, so a native twin still renders a context holding it.
pub const RENDER_TIME: &str = "draftgen_render_time";

/// `strftime_now(format)`: the local time (or [`RENDER_TIME`]'s), formatted like Python's
/// `strftime`.
fn strftime_now(state: &State, format: String) -> Result<Value, Error> {
    use std::fmt::Write as _;
    let fixed = state
        .lookup(RENDER_TIME)
        .and_then(|t| i64::try_from(t).ok())
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0));
    let mut out = String::new();
    let written = match fixed {
        Some(time) => write!(out, "{}", time.format(&format)),
        None => write!(out, "{}", chrono::Local::now().format(&format)),
    };
    written.map_err(|_| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("strftime_now: unsupported format {format:?}"),
        )
    })?;
    Ok(Value::from(out))
}

#[cfg(test)]
mod tests {
    //! Expected strings are what Jinja2 3.1 prints in transformers' environment
    //! (`ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
    //! extensions=[loopcontrols])` + its `tojson`), pasted verbatim.
    use super::*;
    use serde_json::json;

    fn render(source: &str, context: serde_json::Value) -> String {
        ChatTemplate::new(source).unwrap().render(&context).unwrap()
    }

    #[test]
    fn python_printing() {
        assert_eq!(
            render(
                "{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}|{{ f }}",
                json!({"a": null, "b": true, "c": 1.0, "d": [1, "x", null], "e": {"k": false}, "f": 1e-9})
            ),
            "None|True|1.0|[1, 'x', None]|{'k': False}|1e-09"
        );
    }

    #[test]
    fn tojson_like_transformers() {
        let ctx = json!({"t": {"name": "f", "d": "<&>", "x": 0.5, "n": [1, 2]}});
        assert_eq!(
            render("{{ t | tojson }}", ctx.clone()),
            r#"{"name": "f", "d": "<&>", "x": 0.5, "n": [1, 2]}"#
        );
        assert_eq!(
            render("{{ t | tojson(separators=(',', ':')) }}", ctx.clone()),
            r#"{"name":"f","d":"<&>","x":0.5,"n":[1,2]}"#
        );
        assert_eq!(
            render("{{ t | tojson(indent=2, sort_keys=true) }}", ctx),
            "{\n  \"d\": \"<&>\",\n  \"n\": [\n    1,\n    2\n  ],\n  \"name\": \"f\",\n  \"x\": 0.5\n}"
        );
    }

    #[test]
    fn trim_and_lstrip_blocks() {
        let source =
            "{% for m in messages %}\n  {% if m %}\n{{ m }}\n  {% endif %}\n{% endfor %}\n";
        assert_eq!(render(source, json!({"messages": ["a", "b"]})), "a\nb\n");
    }

    #[test]
    fn python_methods_and_loop_controls() {
        let source = "{%- set ns = namespace(n=0) -%}\
            {%- for i in range(5, -1, -1) -%}{%- if i == 2 -%}{%- break -%}{%- endif -%}\
            {%- set ns.n = ns.n + i -%}{%- endfor -%}\
            {{ ns.n }}|{{ s.split('</think>')[-1].lstrip('\\n') }}|{{ s.strip() }}|\
            {{ d.get('x', 'dflt') }}|{{ d.get('k') }}|{% for k, v in d.items() %}{{ k }}={{ v }}{% endfor %}|\
            {{ s.startswith(' <') }}|{{ ' a  b '.split() }}|{{ messages[::-1] }}";
        assert_eq!(
            render(
                source,
                json!({"s": " <think>r</think>\n\nanswer ", "d": {"k": 1}, "messages": [1, 2]})
            ),
            "12|answer |<think>r</think>\n\nanswer|dflt|1|k=1|True|['a', 'b']|[2, 1]"
        );
    }

    #[test]
    fn undefined_like_jinja2() {
        assert_eq!(
            render(
                "[{{ missing }}]{% if missing %}x{% endif %}{% for a in missing %}y{% endfor %}{{ m.get('nope') }}{{ m.nope }}",
                json!({"m": {}})
            ),
            "[]None"
        );
        assert!(ChatTemplate::new("{{ missing.attr }}")
            .unwrap()
            .render(&json!({}))
            .is_err());
    }

    #[test]
    fn raise_exception_is_an_error_with_its_message() {
        let err = ChatTemplate::new("{{ raise_exception('Conversation roles must alternate') }}")
            .unwrap()
            .render(&json!({}))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("Conversation roles must alternate"),
            "{err}"
        );
    }

    #[test]
    fn strftime_now_at_a_fixed_render_time() {
        // Python: datetime.fromtimestamp(1754352000 + 23 * 3600, timezone.utc).strftime(…)
        let at = json!({ RENDER_TIME: 1754352000 + 23 * 3600 });
        assert_eq!(render("{{ strftime_now('%Y-%m-%d') }}", at), "2025-08-05");
        let today = chrono::Local::now().format("%Y").to_string();
        assert!(render("{{ strftime_now('%Y') }}", json!({})).starts_with(&today[..2]));
    }

    #[test]
    fn trailing_newline_dropped_once() {
        assert_eq!(render("a\n\n", json!({})), "a\n");
    }
}
