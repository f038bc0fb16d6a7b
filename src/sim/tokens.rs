//! Token counting for the simulator: the real tokenizer of `--model` when given (shared in an
//! `Arc`, encoded per request), else whitespace-separated pieces as a rough stand-in.

use std::path::Path;
use std::sync::Arc;

use crate::model::{ModelError, Tokenizer};

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
}

#[derive(Clone, Default)]
pub struct TokenCounter {
    tokenizer: Option<Arc<Tokenizer>>,
}

impl TokenCounter {
    pub fn load(model_dir: Option<&Path>) -> Result<Self, ModelError> {
        let tokenizer = match model_dir {
            Some(dir) => Some(Arc::new(Tokenizer::from_dir(dir)?)),
            None => None,
        };
        Ok(TokenCounter { tokenizer })
    }

    pub fn has_tokenizer(&self) -> bool {
        self.tokenizer.is_some()
    }

    pub fn encode(&self, text: &str) -> Option<Vec<u32>> {
        self.tokenizer.as_ref().map(|t| t.encode(text))
    }

    /// Tokens in `text`, or whitespace-separated pieces without a tokenizer.
    pub fn count(&self, text: &str) -> usize {
        match &self.tokenizer {
            Some(t) => t.encode(text).len(),
            None => text.split_whitespace().count(),
        }
    }

    /// Sample `native` (which ends with `stop`) under a `max_tokens` limit.
    pub fn sample(&self, native: &str, stop: &str, max_tokens: Option<usize>) -> Sampled {
        let whole = native.strip_suffix(stop).unwrap_or(native);
        match &self.tokenizer {
            Some(tokenizer) => {
                let ids = tokenizer.encode(native);
                match max_tokens {
                    Some(max) if ids.len() > max => {
                        let kept = ids[..max].to_vec();
                        Sampled {
                            text: tokenizer.decode(&kept),
                            count: kept.len(),
                            ids: Some(kept),
                            cut: true,
                        }
                    }
                    _ => Sampled {
                        text: whole.to_string(),
                        count: ids.len(),
                        ids: Some(ids),
                        cut: false,
                    },
                }
            }
            None => {
                // The stop token counts as one more piece.
                let pieces = whole.split_whitespace().count() + 1;
                match max_tokens {
                    Some(max) if pieces > max => Sampled {
                        text: first_pieces(whole, max),
                        ids: None,
                        count: max,
                        cut: true,
                    },
                    _ => Sampled {
                        text: whole.to_string(),
                        ids: None,
                        count: pieces,
                        cut: false,
                    },
                }
            }
        }
    }
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
