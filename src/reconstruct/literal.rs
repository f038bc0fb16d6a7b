//! Special-token text the model wrote as plain pieces. A serving tokenizer that meets
//! `<|im_end|>` in an answer's text field cannot say whether the model sampled the special id
//! (printed because the server does not skip special tokens) or the five ordinary tokens that
//! spell it; the end-of-turn token is never printed at all (generation stops on it), and SGLang
//! 0.5.23 prints what the model spelled verbatim (tests/data/server_shapes/
//! kimi_k25_cases_sglang.jsonl). So each candidate is also encoded with the text it shows as
//! plain pieces, and `usage.completion_tokens` decides (the special id is one token, its
//! spelling several); where both fit, the sample is ambiguous.

use crate::completion::Completion;
use crate::model::{Profile, Tokenizer};

/// The special-token texts an answer's text fields show, to be encoded as plain pieces.
pub(super) struct Literals {
    /// Each text, and how many times the fields show it.
    shown: Vec<(String, usize)>,
    /// The family's end-of-turn token: where a stream ends on it, that one is structural.
    end_of_turn: String,
}

impl Literals {
    /// The special-token texts in `completion`'s reasoning and content, if any.
    pub(super) fn shown(profile: &Profile, completion: &Completion) -> Option<Literals> {
        let fields = [
            completion.reasoning.as_deref(),
            completion.content.as_deref(),
        ];
        // Reasoning a server left in `content`: its opener and first close are structure
        // (what `turn::candidates` reads them as), not text the model spelled.
        let close = profile.reasoning_close().unwrap_or_default();
        let open = close.replacen("</", "<", 1);
        let left_in_content = completion.reasoning.is_none()
            && !close.is_empty()
            && completion
                .content
                .as_deref()
                .is_some_and(|c| c.contains(close));
        let mut shown: Vec<(String, usize)> = Vec::new();
        for field in fields.into_iter().flatten() {
            for marker in profile.tokenizer.special_tokens_in(field) {
                let mut n = field.matches(marker).count();
                if left_in_content
                    && (marker == close || (marker == open && field.starts_with(&open)))
                {
                    n -= 1;
                }
                if n == 0 {
                    continue;
                }
                match shown.iter_mut().find(|(m, _)| m == marker) {
                    Some((_, count)) => *count += n,
                    None => shown.push((marker.to_string(), n)),
                }
            }
        }
        (!shown.is_empty()).then(|| Literals {
            shown,
            end_of_turn: profile.end_of_turn().to_string(),
        })
    }

    /// `text`'s ids with the shown texts as plain pieces. Of a shown text's occurrences, those
    /// the fields do not account for are structure and stay special: the last ones for the
    /// end-of-turn token (where the stream ends), the first ones for any other (the reasoning's
    /// close before the content).
    pub(super) fn encode(&self, tokenizer: &Tokenizer, text: &str) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        let mut stretch_start = 0;
        for (at, special) in self.special_spans(tokenizer, text) {
            ids.extend(tokenizer.encode_ordinary(&text[stretch_start..at]));
            ids.extend(tokenizer.encode(special));
            stretch_start = at + special.len();
        }
        ids.extend(tokenizer.encode_ordinary(&text[stretch_start..]));
        ids
    }

    /// The occurrences of special-token texts in `text` that stay special: (offset, text), in
    /// order, leftmost-longest as the tokenizer matches them.
    fn special_spans<'t>(&self, tokenizer: &'t Tokenizer, text: &str) -> Vec<(usize, &'t str)> {
        let mut found: Vec<(usize, &str)> = tokenizer
            .special_tokens_in(text)
            .into_iter()
            .flat_map(|m| text.match_indices(m).map(move |(at, _)| (at, m)))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.len().cmp(&a.1.len())));
        let mut spans: Vec<(usize, &str)> = Vec::with_capacity(found.len());
        for (at, m) in found {
            if spans.last().is_none_or(|&(a, l)| at >= a + l.len()) {
                spans.push((at, m));
            }
        }
        for (literal, shown) in &self.shown {
            let places: Vec<usize> = (0..spans.len())
                .filter(|&i| spans[i].1 == literal)
                .collect();
            let structural = places.len().saturating_sub(*shown);
            let plain: Vec<usize> = if *literal == self.end_of_turn {
                places[..places.len() - structural].to_vec()
            } else {
                places[structural..].to_vec()
            };
            for i in plain.into_iter().rev() {
                spans.remove(i);
            }
        }
        spans
    }
}
