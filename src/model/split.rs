//! The pre-tokenizer's split patterns (tiktoken's `pat_str`, Hugging Face's `Split` regexes) on
//! `regex-automata` instead of fancy-regex.
//!
//! The only non-regular part of these patterns is the alternative `\s+(?!\S)`. It is rewritten
//! as two patterns with the same leftmost-first priority (the rewrite `bpe-openai` uses):
//! `\s+$` (a run reaching the end: all of it) and `\s+\s` (a run followed by a non-space: all
//! but its last char, which the splitter gives back).
//!
//! Pieces are found by a forward lazy DFA anchored where the previous piece ended: these
//! patterns match at almost every position, so the leftmost match nearly always starts there
//! and one forward pass over the piece's bytes finds it (an unanchored search would also run a
//! reverse pass to find the start). Where nothing matches at that position, the unanchored
//! `meta::Regex` finds the next match. Both run the same patterns, so the pieces are the same;
//! exactness is checked against tiktoken-rs / the `tokenizers` crate by property tests and
//! against Python by the parity corpora.

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::{Anchored, Input, MatchKind};

/// Pattern index of `\s+\s` in the rewritten pattern set.
const LOOKAHEAD_PATTERN: usize = 2;

pub(crate) struct FastSplitter {
    /// Leftmost-first forward DFA, searched anchored at the end of the previous piece.
    dfa: DFA,
    /// The same patterns, unanchored: the next match where none starts at the current position.
    regex: regex_automata::meta::Regex,
    /// Pattern index of `\s+\s`, whose matches give their last char back; `None` when the
    /// pattern has no `\s+(?!\S)` alternative (and is then compiled as is).
    lookahead: Option<usize>,
}

/// A thread's working memory for one [`FastSplitter`]'s lazy DFA.
pub(crate) type SplitCache = Cache;

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
        let dfa = DFA::builder()
            .configure(DFA::config().match_kind(MatchKind::LeftmostFirst))
            .build_many(&patterns)
            .ok()?;
        Some(Self {
            dfa,
            regex,
            lookahead,
        })
    }

    pub(crate) fn create_cache(&self) -> SplitCache {
        self.dfa.create_cache()
    }

    /// Call `f` on each piece of `text`, as fancy-regex's `find_iter` with the original pattern
    /// (text no alternative matches is dropped, as tiktoken does).
    pub(crate) fn for_each_piece<'t>(
        &self,
        text: &'t str,
        cache: &mut SplitCache,
        mut f: impl FnMut(&'t str),
    ) {
        self.for_each_match(text, cache, |piece, _| f(piece));
    }

    /// Call `f` on the matches and on the unmatched stretches between them, in order: Hugging
    /// Face's `Split` pre-tokenizer with the `Isolated` behaviour.
    pub(crate) fn for_each_piece_isolated<'t>(
        &self,
        text: &'t str,
        cache: &mut SplitCache,
        mut f: impl FnMut(&'t str),
    ) {
        let mut last = 0;
        self.for_each_match(text, cache, |piece, start| {
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
    fn for_each_match<'t>(
        &self,
        text: &'t str,
        cache: &mut SplitCache,
        mut f: impl FnMut(&'t str, usize),
    ) {
        let mut start = 0;
        while start < text.len() {
            let Some((found, mut end, pattern)) = self.next_match(text, start, cache) else {
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
    fn next_match(
        &self,
        text: &str,
        start: usize,
        cache: &mut SplitCache,
    ) -> Option<(usize, usize, usize)> {
        let anchored = Input::new(text)
            .range(start..)
            .anchored(Anchored::Yes)
            .earliest(false);
        match self.dfa.try_search_fwd(cache, &anchored) {
            Ok(Some(half)) => return Some((start, half.offset(), half.pattern().as_usize())),
            Ok(None) => {}
            // The lazy DFA gave up (it never does with the default configuration): the meta
            // regex answers the same question.
            Err(_) => {}
        }
        let found = self.regex.search(&Input::new(text).range(start..))?;
        Some((found.start(), found.end(), found.pattern().as_usize()))
    }
}
