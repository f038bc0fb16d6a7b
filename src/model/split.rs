//! Splitting text before the BPE: special / added-token literals ([`Literals`]), then the
//! pre-tokenizer's split patterns (tiktoken's `pat_str`, Hugging Face's `Split` regexes) on
//! `regex-automata` instead of fancy-regex ([`FastSplitter`]).
//!
//! The only non-regular part of these patterns is the alternative `\s+(?!\S)`. It is rewritten
//! as two patterns with the same leftmost-first priority (the rewrite `bpe-openai` uses):
//! `\s+$` (a run reaching the end: all of it) and `\s+\s` (a run followed by a non-space: all
//! but its last char, which the splitter gives back).
//!
//! Pieces are found by a fully compiled forward DFA anchored where the previous piece ended:
//! these patterns match at almost every position, so the leftmost match nearly always starts
//! there and one forward pass over the piece's bytes finds it (an unanchored search would also
//! run a reverse pass to find the start, and a lazy DFA checks its cache on every step). The
//! DFA costs 15–50 ms and 0.6–3 MB per pattern at load. Where nothing matches at that position,
//! the unanchored `meta::Regex` finds the next match. Both run the same patterns, so the pieces
//! are the same; exactness is checked against tiktoken-rs / the `tokenizers` crate by property
//! tests and against Python by the parity corpora.

use aho_corasick::AhoCorasick;
use regex_automata::dfa::{dense, Automaton as _, StartKind};
use regex_automata::util::{primitives::StateID, start};
use regex_automata::{Anchored, Input, MatchKind};
use rustc_hash::FxHashMap;

/// Kimi's split pattern (`TikTokenTokenizer.pat_str`, identical in K2, K2.5 and Kimi-Linear; the
/// tokenizer files carry no pattern, so it is written here, next to the splitter it runs on).
/// fancy-regex hands character classes to the `regex` crate, which supports the `&&`
/// intersection, so the pattern is used verbatim (a unit test pins that it compiles and
/// reproduces Python's splits).
pub const KIMI_PATTERN: &str = concat!(
    r"[\p{Han}]+",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"|\s*[\r\n]+",
    r"|\s+(?!\S)",
    r"|\s+",
);

/// Special-token literals and their ids, found in one pass over the text.
///
/// At one position the longest literal wins (literals are tried longest first, leftmost-first):
/// Hugging Face's `AddedVocabulary` matches leftmost-longest; tiktoken tries its set in hash
/// order, which only matters when one literal is a prefix of another (never in Kimi's set).
pub(crate) struct Literals {
    searcher: AhoCorasick,
    /// `ids[pattern]`: the id of the searcher's pattern `pattern`.
    ids: Vec<u32>,
}

/// A stretch of text between literals, or a literal's id.
pub(crate) enum Part<'t> {
    Text(&'t str),
    Literal(u32),
}

impl Literals {
    /// `None` when the searcher cannot be built.
    pub(crate) fn new(by_text: &FxHashMap<String, u32>) -> Option<Self> {
        let mut literals: Vec<(&str, u32)> =
            by_text.iter().map(|(s, &id)| (s.as_str(), id)).collect();
        literals.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        let searcher = AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .build(literals.iter().map(|(s, _)| s))
            .ok()?;
        let ids = literals.iter().map(|&(_, id)| id).collect();
        Some(Self { searcher, ids })
    }

    /// Call `f` on the literals and the non-empty stretches of text around them, in order.
    /// Without literals the whole text is one stretch.
    pub(crate) fn for_each_part<'t>(
        literals: Option<&Self>,
        text: &'t str,
        mut f: impl FnMut(Part<'t>),
    ) {
        let mut start = 0;
        if let Some(literals) = literals {
            for found in literals.searcher.find_iter(text) {
                if found.start() > start {
                    f(Part::Text(&text[start..found.start()]));
                }
                if let Some(&id) = literals.ids.get(found.pattern().as_usize()) {
                    f(Part::Literal(id));
                }
                start = found.end();
            }
        }
        if start < text.len() {
            f(Part::Text(&text[start..]));
        }
    }
}

/// Pattern index of `\s+\s` in the rewritten pattern set.
const LOOKAHEAD_PATTERN: usize = 2;

pub(crate) struct FastSplitter {
    /// Leftmost-first forward DFA, searched anchored at the end of the previous piece; `None`
    /// if it could not be built (the meta regex then does all the work).
    dfa: Option<dense::DFA<Vec<u32>>>,
    /// The same patterns, unanchored: the next match where none starts at the current position.
    regex: regex_automata::meta::Regex,
    /// Pattern index of `\s+\s`, whose matches give their last char back; `None` when the
    /// pattern has no `\s+(?!\S)` alternative (and is then compiled as is).
    lookahead: Option<usize>,
    /// The pattern is Kimi's: pieces of ASCII text are found without the DFA (`kimi_ascii.rs`).
    kimi_ascii: bool,
}

impl FastSplitter {
    /// `None` when the pattern has look-around other than one `\s+(?!\S)` alternative, or does
    /// not compile.
    pub(crate) fn new(pattern: &str) -> Option<Self> {
        const LOOKAHEAD: &str = r"|\s+(?!\S)|";
        let has_lookaround = |p: &str| ["(?=", "(?!", "(?<"].iter().any(|l| p.contains(l));
        let (patterns, lookahead) = match pattern.find(LOOKAHEAD) {
            Some(at) => {
                let (before, after) = (&pattern[..at], &pattern[at + LOOKAHEAD.len()..]);
                if has_lookaround(before) || has_lookaround(after) {
                    return None;
                }
                (
                    vec![before, r"\s+$", r"\s+\s", after],
                    Some(LOOKAHEAD_PATTERN),
                )
            }
            // No look-around at all: the pattern is regular as written.
            None if !has_lookaround(pattern) => (vec![pattern], None),
            None => return None,
        };
        let regex = regex_automata::meta::Regex::new_many(&patterns).ok()?;
        let dfa = dense::DFA::builder()
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .start_kind(StartKind::Anchored),
            )
            .build_many(&patterns)
            .ok();
        Some(Self {
            dfa,
            regex,
            lookahead,
            kimi_ascii: pattern == KIMI_PATTERN,
        })
    }

    /// Call `f` on each piece of `text`, as fancy-regex's `find_iter` with the original pattern
    /// (text no alternative matches is dropped, as tiktoken does).
    pub(crate) fn for_each_piece<'t>(&self, text: &'t str, mut f: impl FnMut(&'t str)) {
        self.for_each_match(text, |piece, _| f(piece));
    }

    /// Call `f` on consecutive stretches of `text` that each split alone into the pieces they
    /// hold in the whole text: for Kimi's pattern, cut before every space that follows a
    /// non-whitespace char (no alternative takes a space but as its first char, and a run of
    /// whitespace cannot start at a non-whitespace char, so a piece starts at that space; the
    /// pattern has no look-behind, and its one look-ahead sees whitespace only); other patterns
    /// get the whole text. Repeated stretches (a word and its space) can then be cached whole,
    /// without running the splitter on them.
    pub(crate) fn for_each_stretch<'t>(&self, text: &'t str, mut f: impl FnMut(&'t str)) {
        if !self.kimi_ascii {
            if !text.is_empty() {
                f(text);
            }
            return;
        }
        let mut start = 0;
        let bytes = text.as_bytes();
        for at in memchr::memchr_iter(b' ', bytes) {
            if at == start {
                continue;
            }
            let after_non_space = match bytes[at - 1] {
                // `\s` in ASCII: tab, line feed, vertical tab, form feed, carriage return, space.
                b @ 0..=0x7f => !matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' '),
                _ => text[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| !c.is_whitespace()),
            };
            if after_non_space {
                f(&text[start..at]);
                start = at;
            }
        }
        if start < text.len() {
            f(&text[start..]);
        }
    }

    /// Call `f` on the matches and on the unmatched stretches between them, in order: Hugging
    /// Face's `Split` pre-tokenizer with the `Isolated` behaviour.
    pub(crate) fn for_each_piece_isolated<'t>(&self, text: &'t str, mut f: impl FnMut(&'t str)) {
        let mut last = 0;
        self.for_each_match(text, |piece, start| {
            if start > last {
                f(&text[last..start]);
            }
            f(piece);
            last = start + piece.len();
        });
        if last < text.len() {
            f(&text[last..]);
        }
    }

    /// `f(match, start)` for each match, leftmost-first, non-overlapping.
    fn for_each_match<'t>(&self, text: &'t str, mut f: impl FnMut(&'t str, usize)) {
        let mut start = 0;
        while start < text.len() {
            let Some((found, mut end, pattern)) = self.next_match(text, start) else {
                break;
            };
            if Some(pattern) == self.lookahead {
                // Give back the look-ahead char (whitespace, so its length is its UTF-8 width).
                end -= text[..end].chars().next_back().map_or(0, char::len_utf8);
            }
            if end <= found {
                // Cannot happen for these patterns (every alternative consumes a char); step
                // over one char rather than loop forever.
                start = found + text[found..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            f(&text[found..end], found);
            start = end;
        }
    }

    /// The leftmost-first match at or after `start`: (start, end, pattern index).
    fn next_match(&self, text: &str, start: usize) -> Option<(usize, usize, usize)> {
        if self.kimi_ascii {
            // Pattern 0 (the alternatives before the look-ahead): the end is the piece's own.
            if let Some(end) = super::kimi_ascii::piece_end(text.as_bytes(), start) {
                return Some((start, end, 0));
            }
        }
        if let Some(dfa) = &self.dfa {
            if let Some((end, pattern)) = anchored_match(dfa, text.as_bytes(), start) {
                return Some((start, end, pattern));
            }
        }
        let found = self.regex.search(&Input::new(text).range(start..))?;
        Some((found.start(), found.end(), found.pattern().as_usize()))
    }
}

/// The leftmost-first match starting at `at`: (end, pattern index). `None` when none starts
/// there (or the DFA hit a quit byte, which these patterns do not have).
///
/// `Automaton::try_search_fwd` minus what these short matches make expensive: it looks up the
/// matched pattern at every match state (every byte of `\p{L}+`), this loop only at the end.
/// As there, a match state entered on the byte at `i` means a match ending at `i`.
fn anchored_match(dfa: &dense::DFA<Vec<u32>>, text: &[u8], at: usize) -> Option<(usize, usize)> {
    let config = start::Config::new()
        .anchored(Anchored::Yes)
        .look_behind(at.checked_sub(1).and_then(|i| text.get(i).copied()));
    let mut sid = dfa.start_state(&config).ok()?;
    let mut last: Option<(usize, StateID)> = None;
    let mut ended = false;
    for (i, &byte) in text.iter().enumerate().skip(at) {
        sid = dfa.next_state(sid, byte);
        if dfa.is_special_state(sid) {
            if dfa.is_match_state(sid) {
                last = Some((i, sid));
            } else if dfa.is_dead_state(sid) {
                ended = true;
                break;
            } else if dfa.is_quit_state(sid) {
                return None;
            }
            // Otherwise an accelerated state: stepping through it is just slower.
        }
    }
    if !ended {
        sid = dfa.next_eoi_state(sid);
        if dfa.is_match_state(sid) {
            last = Some((text.len(), sid));
        }
    }
    last.map(|(end, sid)| (end, dfa.match_pattern(sid, 0).as_usize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::assets::assets_root;
    use proptest::prelude::*;
    use std::sync::OnceLock;

    /// Every split pattern the fast paths run (Kimi's, and the `Split` regexes of the Qwen3 and
    /// DeepSeek-V3 `tokenizer.json` when the shared assets are present), each as our splitter
    /// and as fancy-regex (what tiktoken and the `tokenizers` crate run).
    fn splitters() -> &'static [(FastSplitter, fancy_regex::Regex)] {
        static SPLITTERS: OnceLock<Vec<(FastSplitter, fancy_regex::Regex)>> = OnceLock::new();
        SPLITTERS.get_or_init(|| {
            let mut patterns = vec![KIMI_PATTERN.to_string()];
            for model in ["qwen3", "deepseek-v3"] {
                let Some(root) = assets_root() else { break };
                let path = root.join(model).join("tokenizer.json");
                let Ok(text) = std::fs::read_to_string(path) else {
                    continue;
                };
                let json: serde_json::Value = serde_json::from_str(&text).expect("tokenizer.json");
                let steps = json["pre_tokenizer"]["pretokenizers"].as_array().cloned();
                for step in steps.unwrap_or_default() {
                    if let Some(regex) = step["pattern"]["Regex"].as_str() {
                        patterns.push(regex.to_string());
                    }
                }
            }
            patterns
                .iter()
                .map(|p| {
                    let fast = FastSplitter::new(p).expect("fast splitter");
                    assert!(fast.dfa.is_some(), "no DFA for {p}");
                    (fast, fancy_regex::Regex::new(p).expect("fancy-regex"))
                })
                .collect()
        })
    }

    fn check(text: &str) {
        for (fast, reference) in splitters() {
            let mut ours = Vec::new();
            fast.for_each_match(text, |piece, start| ours.push((start, start + piece.len())));
            let want: Vec<(usize, usize)> = reference
                .find_iter(text)
                .map(|m| m.map(|m| (m.start(), m.end())).expect("fancy-regex match"))
                .collect();
            assert_eq!(ours, want, "{text:?} with {}", reference.as_str());
            // Stretch by stretch, each split alone: the same pieces.
            let mut stretched = Vec::new();
            let mut offset = 0;
            fast.for_each_stretch(text, |stretch| {
                fast.for_each_match(stretch, |piece, start| {
                    stretched.push((offset + start, offset + start + piece.len()))
                });
                offset += stretch.len();
            });
            assert_eq!(offset, text.len(), "{text:?}");
            assert_eq!(
                stretched,
                want,
                "stretches of {text:?} with {}",
                reference.as_str()
            );
        }
    }

    #[test]
    fn edge_cases_split_as_fancy_regex() {
        for text in [
            "",
            " ",
            "a",
            "   x",
            "x   ",
            "x \n\n y",
            "\r\n\r\n  \t",
            "it's I'LL 'd",
            "12345 ١٢٣٤ Ⅻ",
            "中文日本語カタカナ ひらがな",
            "e\u{301} \u{301}\u{301}x",
            "!!! ?!\n\n... --x",
            "\u{a0}\u{3000}\u{2028}\u{85}x",
        ] {
            check(text);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        #[test]
        fn adversarial_unicode_splits_as_fancy_regex(
            parts in prop::collection::vec(prop_oneof![
                any::<char>().prop_map(String::from),
                any::<String>(),
                "[ \t\r\n\u{a0}\u{3000}\u{85}\u{2028}]{1,4}",
                "[\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}]{1,4}",
                prop::sample::select(vec!["'s", "'T", "'re", "'LL", "中文", "123", "?!", "😀"])
                    .prop_map(str::to_string),
            ], 0..24)
        ) {
            check(&parts.concat());
        }

        /// Mostly ASCII (the Kimi pattern's ASCII path), with the non-ASCII chars that continue
        /// its runs (letters, digits, spaces, symbols, `ſ` that `(?i)s` matches) at its edges.
        #[test]
        fn mostly_ascii_splits_as_fancy_regex(
            parts in prop::collection::vec(prop_oneof![
                "[ -~]{1,6}",
                "[ \t\r\n\x0b\x0c]{1,4}",
                "[a-zA-Z]{1,5}",
                "[0-9]{1,5}",
                "[\x00-\x1f\x7f]",
                prop::sample::select(vec![
                    "'s", "'S", "'t", "'re", "'rE", "'ve", "'VE", "'m", "'ll", "'Ll", "'d", "'",
                    "'r", "'l", "'ſ", "é", "É", "²", "٣", "\u{a0}", "\u{85}", "\u{2028}", "—",
                    "中", "K", " ", "  ", "\n", "\r\n",
                ])
                .prop_map(str::to_string),
            ], 0..24)
        ) {
            check(&parts.concat());
        }
    }
}
