//! Token counting for the simulator: the model of `--model` when given (shared in an `Arc`,
//! used per request), else whitespace-separated pieces as a rough stand-in.
//!
//! Prompt ids come from the model's own profile (its chat template, as `draftgen render` does)
//! when the directory loads as one; otherwise, or if a request does not render, from
//! [`approximate_render`](super::prompt::approximate_render) tokenized.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::model::{LoadOptions, ModelError, Profile, RenderInput, Tokenizer};
use crate::server;

/// The sampled tokens after `max_tokens`: what the server detokenizes and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// The output text, without the stop token (servers strip it).
    pub text: String,
    /// The sampled ids, `<|im_end|>` included unless cut; `None` without a tokenizer.
    pub ids: Option<Vec<u32>>,
    pub count: usize,
    /// `max_tokens` cut the stream before its end token.
    pub cut: bool,
    /// The last ids that end inside a character (a cut): an incremental detokenizer that waits
    /// for a character's last byte (vLLM's) never sends their text.
    pub partial_tokens: usize,
    /// `text` without those ids' text (`text` itself unless a cut split a character).
    pub complete_text: String,
}

impl Sampled {
    fn whole(text: String, ids: Option<Vec<u32>>, count: usize, cut: bool) -> Sampled {
        Sampled {
            complete_text: text.clone(),
            text,
            ids,
            count,
            cut,
            partial_tokens: 0,
        }
    }
}

/// What `--model` loaded: a full profile, or only its tokenizer.
enum Model {
    Profile(Box<Profile>),
    Tokenizer(Tokenizer),
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("tokenizer", &self.has_tokenizer())
            .field("eos_id", &self.eos_id)
            .finish()
    }
}

#[derive(Clone, Default)]
pub struct TokenCounter {
    model: Option<Arc<Model>>,
    /// The tokenizer's `eos_token` id (`tokenizer_config.json`), when it is one token.
    eos_id: Option<u32>,
}

/// A request's prompt as the server counts it.
pub struct PromptTokens {
    pub ids: Option<Vec<u32>>,
    pub count: usize,
    /// Rendered with the model's own template (not the approximation).
    pub exact: bool,
}

impl TokenCounter {
    /// Load `model_dir` as a profile (tokenizer + template); if it has no usable template, load
    /// just its tokenizer.
    /// `profile` names the family (`kimi-k2-thinking`) where the directory alone cannot tell
    /// (Kimi K2, K2-Thinking and K2.5 share one set of tokenizer files).
    /// `chat_template` replaces the directory's template (`--chat-template`).
    pub fn load(
        model_dir: Option<&Path>,
        profile: Option<&str>,
        chat_template: Option<&Path>,
    ) -> Result<Self, ModelError> {
        let Some(dir) = model_dir else {
            return Ok(TokenCounter::default());
        };
        let options = LoadOptions {
            profile: profile.map(str::to_string),
            chat_template: chat_template.map(Path::to_path_buf),
        };
        let model = match Profile::load(dir, &options) {
            Ok(profile) => Model::Profile(Box::new(profile)),
            Err(err) => {
                tracing::warn!(
                    "sim: {} does not load as a model profile ({err}); prompt counts use an \
                     approximate Kimi-style render",
                    dir.display()
                );
                Model::Tokenizer(Tokenizer::from_dir(dir)?)
            }
        };
        let mut counter = TokenCounter {
            model: Some(Arc::new(model)),
            eos_id: None,
        };
        counter.eos_id = eos_token(dir).and_then(|eos| match counter.encode(&eos).as_deref() {
            Some([id]) => Some(*id),
            _ => None,
        });
        Ok(counter)
    }

    /// `id` is the tokenizer's own `eos_token` (vLLM stops on it without a `stop_reason`; an
    /// end-of-turn id from `generation_config`, such as Kimi's `<|im_end|>`, is the stop reason).
    pub fn is_eos(&self, id: u32) -> bool {
        self.eos_id == Some(id)
    }

    fn tokenizer(&self) -> Option<&Tokenizer> {
        self.model.as_deref().map(|m| match m {
            Model::Profile(p) => &p.tokenizer,
            Model::Tokenizer(t) => t,
        })
    }

    /// The loaded profile, if `--model` loaded as one.
    pub fn profile(&self) -> Option<&Profile> {
        match self.model.as_deref() {
            Some(Model::Profile(p)) => Some(p),
            _ => None,
        }
    }

    pub fn has_tokenizer(&self) -> bool {
        self.model.is_some()
    }

    pub fn encode(&self, text: &str) -> Option<Vec<u32>> {
        self.tokenizer().map(|t| t.encode(text))
    }

    /// `ids` as a server's detokenizer sees them (bytes, added or not), for shapes whose stream
    /// is modelled token by token (`server::forward_tokens`). `None` without a tokenizer.
    pub fn stream_tokens(&self, ids: &[u32]) -> Option<Vec<server::vllm011_stream::Token>> {
        let tokenizer = self.tokenizer()?;
        let tokens = ids
            .iter()
            .map(|&id| server::vllm011_stream::Token {
                bytes: tokenizer.decode_bytes(&[id]).unwrap_or_default(),
                special: tokenizer.is_special(id),
            })
            .collect();
        Some(tokens)
    }

    /// Tokens in `text`, or whitespace-separated pieces without a tokenizer.
    pub fn count(&self, text: &str) -> usize {
        match self.tokenizer() {
            Some(t) => t.encode(text).len(),
            None => text.split_whitespace().count(),
        }
    }

    /// The prompt of a request (with the generation prompt).
    pub fn prompt(
        &self,
        messages: &[Value],
        tools: &[Value],
        chat_template_kwargs: Option<&Map<String, Value>>,
        thinking: bool,
    ) -> PromptTokens {
        if let Some(Model::Profile(profile)) = self.model.as_deref() {
            let input = RenderInput {
                messages,
                tools: (!tools.is_empty()).then_some(tools),
                add_generation_prompt: true,
                chat_template_kwargs,
            };
            match profile.render_ids(&input) {
                Ok(ids) => {
                    return PromptTokens {
                        count: ids.len(),
                        ids: Some(ids),
                        exact: true,
                    }
                }
                Err(err) => tracing::debug!("sim: render failed, approximating: {err}"),
            }
        }
        let text = super::prompt::approximate_render(messages, tools, thinking);
        match self.encode(&text) {
            Some(ids) => PromptTokens {
                count: ids.len(),
                ids: Some(ids),
                exact: false,
            },
            None => PromptTokens {
                count: self.count(&text),
                ids: None,
                exact: false,
            },
        }
    }

    /// What the model sampled when it is given as ids (`stop` included unless `max_tokens` cut
    /// it): the text the server detokenizes, without the stop token. `None` without a tokenizer.
    pub fn given(&self, ids: &[u32], stop: &str) -> Option<Sampled> {
        let tokenizer = self.tokenizer()?;
        let stop_id = match tokenizer.encode(stop)[..] {
            [id] if !stop.is_empty() => Some(id),
            _ => None,
        };
        let cut = stop_id.is_none() || ids.last().copied() != stop_id;
        let body = if cut { ids } else { &ids[..ids.len() - 1] };
        Some(self.cut_at(tokenizer, body, ids.to_vec(), cut))
    }

    /// `body` (the ids without the stop token) decoded, with the partial character a cut may
    /// leave at its end told apart.
    fn cut_at(&self, tokenizer: &Tokenizer, body: &[u32], ids: Vec<u32>, cut: bool) -> Sampled {
        let text = tokenizer.decode(body);
        let partial_tokens = if cut {
            partial_tokens(tokenizer, body)
        } else {
            0
        };
        let complete_text = if partial_tokens == 0 {
            text.clone()
        } else {
            tokenizer.decode(&body[..body.len() - partial_tokens])
        };
        Sampled {
            text,
            count: ids.len(),
            ids: Some(ids),
            cut,
            partial_tokens,
            complete_text,
        }
    }

    /// The tokens before the first `close` (a single special token) in `ids`: all of them
    /// when it is not there. `None` without a tokenizer or a single-token `close`.
    pub fn before(&self, ids: &[u32], close: &str) -> Option<usize> {
        let tokenizer = self.tokenizer()?;
        match tokenizer.encode(close)[..] {
            [id] if !close.is_empty() => {
                Some(ids.iter().position(|&i| i == id).unwrap_or(ids.len()))
            }
            _ => None,
        }
    }

    /// The tokens a reasoning parser counts as reasoning in `ids` (vLLM's
    /// `count_reasoning_tokens`): those after `open` (or from the start when the prompt opened
    /// the reasoning: `open` is not among the ids before an end) up to the first of `ends`, all
    /// of them when no end came. Markers are single special tokens; `None` without a tokenizer.
    pub fn reasoning_tokens(&self, ids: &[u32], open: &str, ends: &[&str]) -> Option<usize> {
        let tokenizer = self.tokenizer()?;
        let single = |marker: &str| match tokenizer.encode(marker)[..] {
            [id] if !marker.is_empty() => Some(id),
            _ => None,
        };
        let end_ids: Vec<u32> = ends.iter().filter_map(|m| single(m)).collect();
        let end = ids
            .iter()
            .position(|id| end_ids.contains(id))
            .unwrap_or(ids.len());
        let start = single(open)
            .and_then(|open| ids[..end].iter().position(|&id| id == open))
            .map_or(0, |at| at + 1);
        Some(end - start)
    }

    /// Where `text` splits into its tokens' texts, as a server streaming one token per delta sends
    /// it: the byte offsets after each piece, a token that ends inside a character joined with the
    /// next. `None` without a tokenizer, or when the tokens' bytes do not spell `text` back.
    pub fn token_ends(&self, text: &str) -> Option<Vec<usize>> {
        let tokenizer = self.tokenizer()?;
        let mut ends = Vec::new();
        let mut at = 0;
        for id in tokenizer.encode(text) {
            at += tokenizer.decode_bytes(&[id]).ok()?.len();
            if at > text.len() {
                return None;
            }
            if text.is_char_boundary(at) {
                ends.push(at);
            }
        }
        (at == text.len()).then_some(ends)
    }

    pub fn decode(&self, ids: &[u32]) -> Option<String> {
        self.tokenizer().map(|t| t.decode(ids))
    }

    /// The text of the first of `ids` as an incremental detokenizer sends it: `""` when the
    /// token ends inside a character (the detokenizer holds partial bytes back).
    pub fn first_token_text(&self, ids: &[u32]) -> Option<String> {
        let tokenizer = self.tokenizer()?;
        let first = tokenizer.decode(&ids[..ids.len().min(1)]);
        Some(if first.ends_with('\u{FFFD}') {
            String::new()
        } else {
            first
        })
    }

    /// Sample `native` (which ends with `stop`) under a `max_tokens` limit.
    pub fn sample(&self, native: &str, stop: &str, max_tokens: Option<usize>) -> Sampled {
        let whole = native.strip_suffix(stop).unwrap_or(native);
        match self.tokenizer() {
            Some(tokenizer) => {
                let ids = tokenizer.encode(native);
                match max_tokens {
                    Some(max) if ids.len() > max => {
                        let kept = ids[..max].to_vec();
                        self.cut_at(tokenizer, &kept, kept.clone(), true)
                    }
                    _ => Sampled::whole(whole.to_string(), Some(ids.clone()), ids.len(), false),
                }
            }
            None => {
                // The stop token counts as one more piece.
                let pieces = whole.split_whitespace().count() + 1;
                match max_tokens {
                    Some(max) if pieces > max => {
                        Sampled::whole(first_pieces(whole, max), None, max, true)
                    }
                    _ => Sampled::whole(whole.to_string(), None, pieces, false),
                }
            }
        }
    }
}

/// `eos_token` of `dir/tokenizer_config.json` (a string, or an added-token object's `content`).
fn eos_token(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("tokenizer_config.json")).ok()?;
    let config: Value = serde_json::from_str(&text).ok()?;
    match config.get("eos_token")? {
        Value::String(s) => Some(s.clone()),
        other => other.get("content")?.as_str().map(str::to_string),
    }
}

/// How many of the last `ids` end inside a character: after them the bytes so far are not
/// UTF-8 (a character is at most 4 bytes, so at most 3 such ids).
fn partial_tokens(tokenizer: &Tokenizer, ids: &[u32]) -> usize {
    (0..ids.len().min(4))
        .find(|&k| {
            tokenizer
                .decode_bytes(&ids[..ids.len() - k])
                .is_ok_and(|bytes| std::str::from_utf8(&bytes).is_ok())
        })
        .unwrap_or(0)
}

/// `text` up to the end of its `n`-th whitespace-separated piece.
fn first_pieces(text: &str, n: usize) -> String {
    if n == 0 {
        return String::new();
    }
    match text.split_whitespace().nth(n - 1) {
        Some(piece) => {
            let end = piece.as_ptr() as usize - text.as_ptr() as usize + piece.len();
            text[..end].to_string()
        }
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_tokenizer_pieces_are_counted_and_cut() {
        let counter = TokenCounter::default();
        let all = counter.sample("a b  c<|im_end|>", "<|im_end|>", None);
        assert_eq!(
            (all.text.as_str(), all.count, all.cut),
            ("a b  c", 4, false)
        );
        let cut = counter.sample("a b  c<|im_end|>", "<|im_end|>", Some(2));
        assert_eq!((cut.text.as_str(), cut.count, cut.cut), ("a b", 2, true));
    }
}
