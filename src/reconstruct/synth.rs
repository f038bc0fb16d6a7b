//! Analysis by synthesis: every candidate token stream is sent forward through the declared
//! server shape (`crate::server::forward`) and kept only if the server would have sent exactly
//! the answer received (text fields, tool calls, `finish_reason`); what the shape is known to
//! destroy (trailing reasoning whitespace, whitespace-only content, stripped arguments) is put
//! back as every variant it could have been, and `usage.completion_tokens` then decides.
//!
//! Counting the variants: Kimi's markers are added tokens, which split the text before BPE, so a
//! variant at one site (next to a marker) changes the count by its own delta, independently of
//! the other sites. The deltas are measured per site, the combinations that reach the reported
//! count are counted with a small knapsack, and the one chosen is re-encoded and re-checked
//! (never trusted from the arithmetic alone).

use crate::completion::Completion;
use crate::model::Profile;
use crate::server::kimi::{ARGUMENT_BEGIN, CALL_END, SECTION_BEGIN};
use crate::server::vllm011_stream::Token;
use crate::server::{
    forward, forward_tokens, parser_traits, ForwardInput, ReadBackRules, ServerShape, Site,
    SiteInput, UsageInput,
};

use super::fidelity::Reason;
use super::literal::Literals;
use super::spellings::hermes_alternatives;

/// Whitespace a server may have stripped at one site: what is tried in its place.
const WHITESPACE: [&str; 8] = ["", " ", "\n", "\n\n", "  ", "\t", " \n", "\n "];

/// How the stream was answered.
pub(super) struct Context<'a> {
    pub profile: &'a Profile,
    pub shape: &'a ServerShape,
    /// The shape's read-back rules ([`crate::server::Quirks::read_back_rules`]).
    pub rules: ReadBackRules,
    pub completion: &'a Completion,
    /// How the answer was asked for, as the server's [`forward`] reads it (`text` and
    /// `first_token` are each candidate's; `cut`: the answer was cut by `max_tokens`, its
    /// `finish_reason` or what the shape shows).
    pub asked: ForwardInput<'a>,
    /// The whitespace around each call's arguments is not in the answer, whatever the shape
    /// says of its arguments: `Some(None)` for every call (a vLLM 0.11 stream whose section
    /// buffer never leaked), `Some(Some(n))` before the first `n` calls' arguments only (what
    /// is left of a cut buffer shows their ends and the later calls whole).
    pub arguments_hidden: Option<Option<usize>>,
    /// Special-token texts the answer shows: each candidate is also tried with them as plain
    /// pieces ([`Literals`]).
    pub literals: Option<&'a Literals>,
}

/// How a candidate text becomes ids: special-token texts as their ids (what `encode` does), or
/// the texts the answer shows as plain pieces.
#[derive(Clone, Copy)]
enum Encoding<'a> {
    Special,
    Plain(&'a Literals),
}

impl Encoding<'_> {
    fn encode(self, cx: &Context, text: &str) -> Vec<u32> {
        match self {
            Encoding::Special => cx.profile.tokenizer.encode(text),
            Encoding::Plain(literals) => literals.encode(&cx.profile.tokenizer, text),
        }
    }
}

/// The outcome over all candidates.
pub(super) struct Synthesis {
    /// The chosen stream (if any candidate was consistent with the answer).
    pub ids: Option<Vec<u32>>,
    /// Streams consistent with the answer and its count.
    pub consistent: u64,
    /// Some candidate agreed with the answer's fields (the count may still have disagreed).
    pub fields_agree: bool,
    /// The first disagreement seen, for the warning.
    pub mismatch: Option<String>,
    /// The destructions that left more than one choice.
    pub open: Vec<Reason>,
    /// Every candidate agreeing with the fields was shorter than the count: the server dropped
    /// tokens it does not show (a cut inside the tool section).
    pub short_by: Option<usize>,
    /// A `length` cut may have ended on partial UTF-8 bytes the detokenizer holds back: the ids
    /// of a consistent text that is that many tokens short (the partial ids themselves unknown).
    pub partial: Option<Vec<u32>>,
}

impl Context<'_> {
    fn end_of_turn(&self) -> &str {
        self.profile.end_of_turn()
    }

    pub(super) fn agrees(&self, text: &str) -> Result<(), String> {
        let eot = self.end_of_turn();
        let other = self.profile.family.rules().other_end_of_turn();
        let ended = [Some(eot), other]
            .into_iter()
            .flatten()
            .filter(|end| !end.is_empty())
            .find_map(|end| text.strip_suffix(end));
        let (body, cut) = match ended {
            Some(body) => (body, false),
            None => (text, true),
        };
        // vLLM 0.11.2 streams the first token alone as reasoning in some cases: its text.
        let stepwise = self.rules.stream_by_token && self.asked.stream;
        let first_token = (self.asked.stream
            && !stepwise
            && self.asked.prompt_closes_reasoning
            && self.rules.first_token_as_reasoning)
            .then(|| {
                let tokenizer = &self.profile.tokenizer;
                let first = tokenizer
                    .encode(body)
                    .first()
                    .map(|&id| tokenizer.decode(&[id]));
                let first = first.unwrap_or_default();
                if first.ends_with('\u{FFFD}') {
                    String::new()
                } else {
                    first
                }
            });
        let input = ForwardInput {
            text: body,
            cut,
            first_token: first_token.as_deref(),
            ..self.asked
        };
        let parsed = if stepwise {
            forward_tokens(self.shape, &input, &self.tokens(body))
        } else {
            forward(self.shape, &input)
        };
        parsed
            .agrees_with(self.shape, self.completion)
            .map_err(|m| m.0)
    }

    /// `text`'s tokens as a server's detokenizer sees them: each one's bytes, and whether it is an
    /// added token.
    fn tokens(&self, text: &str) -> Vec<Token> {
        let tokenizer = &self.profile.tokenizer;
        tokenizer
            .encode(text)
            .into_iter()
            .map(|id| Token {
                bytes: tokenizer.decode_bytes(&[id]).unwrap_or_default(),
                special: tokenizer.is_special(id),
            })
            .collect()
    }

    /// The `usage` counts beside `completion_tokens` that the shape's quirks define
    /// ([`Quirk::usage_agrees`](crate::server::Quirk::usage_agrees)).
    fn usage_counts_agree(&self, text: &str, encoding: Encoding) -> Result<(), String> {
        let input = UsageInput {
            syntax: self.asked.syntax,
            thinking: self.asked.thinking,
            usage: self.completion.usage.as_ref(),
            reasoning_close: self.profile.reasoning_close(),
            count: &|t: &str| match encoding {
                Encoding::Special => self.profile.tokenizer.encode(t).len(),
                // A prefix of `text`: its tokens in the whole text's plain encoding (which
                // occurrences are plain is decided on the whole).
                Encoding::Plain(_) => self.tokens_through(encoding, text, t.len()),
            },
        };
        self.shape.quirks.usage_agrees(text, &input)
    }

    /// How many of `text`'s ids (encoded as `encoding` says) it takes to cover its first
    /// `bytes` bytes.
    fn tokens_through(&self, encoding: Encoding, text: &str, bytes: usize) -> usize {
        let tokenizer = &self.profile.tokenizer;
        let mut covered = 0;
        let mut count = 0;
        for id in encoding.encode(self, text) {
            if covered >= bytes {
                break;
            }
            covered += tokenizer.decode_bytes(&[id]).map_or(0, |b| b.len());
            count += 1;
        }
        count
    }

    /// The sites of `text` where the shape's quirks destroyed whitespace the answer cannot
    /// show ([`Quirk::sites`](crate::server::Quirk::sites)).
    fn sites(&self, text: &str) -> Vec<Site> {
        let input = SiteInput {
            syntax: self.asked.syntax,
            stream: self.asked.stream,
            thinking: self.asked.thinking,
            tools_declared: self.asked.tools_declared,
            cut: self.asked.cut,
            answer: self.completion,
            arguments_hidden: self.arguments_hidden,
        };
        self.shape.quirks.sites(self.shape, &input, text)
    }
}

fn with_inserts(text: &str, sites: &[Site], choice: &[usize]) -> String {
    let mut out = String::with_capacity(text.len() + sites.len() * 2);
    let mut last = 0;
    for (site, &option) in sites.iter().zip(choice) {
        out.push_str(&text[last..site.at]);
        out.push_str(WHITESPACE[option]);
        last = site.at;
    }
    out.push_str(&text[last..]);
    out
}

/// Run every candidate text through the shape and the count.
pub(super) fn synthesize(cx: &Context, texts: &[String]) -> Synthesis {
    let reported = cx
        .completion
        .usage
        .as_ref()
        .and_then(|u| u.completion_tokens)
        .map(|n| n as usize);
    let mut search = Search {
        reported,
        out: Synthesis {
            ids: None,
            consistent: 0,
            fields_agree: false,
            mismatch: None,
            open: Vec::new(),
            short_by: None,
            partial: None,
        },
        gaps: Gaps::default(),
        partial_candidates: Vec::new(),
        closes_fit: [false; 2],
    };
    // Each text once (a few long texts: compared, not hashed).
    for (i, text) in texts.iter().enumerate() {
        if !texts[..i].contains(text) {
            search.try_text(cx, text, Encoding::Special);
            search.try_plain(cx, text);
        }
    }
    search.finish(cx)
}

/// The candidates tried so far, and what they said.
struct Search {
    /// `usage.completion_tokens`.
    reported: Option<usize>,
    out: Synthesis,
    gaps: Gaps,
    /// Texts that agree with the fields and are up to three tokens short of a cut's count (a
    /// partial character the detokenizer held back): their ids.
    partial_candidates: Vec<Vec<u32>>,
    /// Some consistent text holds no reasoning close / holds one.
    closes_fit: [bool; 2],
}

impl Search {
    /// The candidate again with the special-token texts the answer shows as plain pieces, where
    /// that is another stream; both fitting the count leaves the sample open.
    fn try_plain(&mut self, cx: &Context, text: &str) {
        let Some(literals) = cx.literals else {
            return;
        };
        let plain = Encoding::Plain(literals);
        if plain.encode(cx, text) == cx.profile.tokenizer.encode(text) {
            return;
        }
        let before = self.out.consistent;
        let special_fit = self.out.ids.is_some();
        self.try_text(cx, text, plain);
        if special_fit
            && self.out.consistent > before
            && !self.out.open.contains(&Reason::SpecialTokenLiteral)
        {
            self.out.open.push(Reason::SpecialTokenLiteral);
        }
    }

    /// One candidate text: its fields and counts, then its whitespace variants against the count.
    fn try_text(&mut self, cx: &Context, text: &str, encoding: Encoding) {
        if let Err(m) = cx
            .agrees(text)
            .and_then(|()| cx.usage_counts_agree(text, encoding))
        {
            self.out.mismatch.get_or_insert(m);
            return;
        }
        self.out.fields_agree = true;
        let mut sites = cx.sites(text);
        sites.sort_by_key(|s| s.at);
        let base = encoding.encode(cx, text);
        let deltas = site_deltas(cx, encoding, text, &sites, base.len());
        let (count, choice) = match self.reported {
            Some(n) => {
                let target = n as i64 - base.len() as i64;
                self.gaps.note(target);
                variants_reaching(cx, text, &sites, &deltas, target)
            }
            None => {
                let all = deltas
                    .iter()
                    .fold(1u64, |acc, d| acc.saturating_mul(d.len() as u64));
                (all, Some(vec![0; sites.len()]))
            }
        };
        if count > 1 {
            self.note_open(&sites, &deltas);
        }
        if let (true, Some(n)) = (cx.asked.cut, self.reported) {
            // Up to three byte tokens of one split character.
            if (1..=3).any(|k| base.len() + k == n) {
                self.partial_candidates.push(base.clone());
            }
        }
        if count == 0 {
            return;
        }
        self.out.consistent = self.out.consistent.saturating_add(count);
        self.note_close(cx, text);
        if self.out.ids.is_none() {
            if let Some(choice) = choice {
                let variant = Variant {
                    text,
                    sites: &sites,
                    choice: &choice,
                };
                self.out.ids = checked_variant(cx, encoding, &variant, base, self.reported);
            }
        }
    }

    /// A consistent text with the reasoning's close beside one without: the answer cannot show
    /// which the model wrote (a tool section opened from the reasoning ends it too).
    fn note_close(&mut self, cx: &Context, text: &str) {
        let Some(close) = cx.profile.reasoning_close() else {
            return;
        };
        self.closes_fit[usize::from(text.contains(close))] = true;
        let reason = Reason::ReasoningCloseNotShown;
        if self.closes_fit == [true, true] && !self.out.open.contains(&reason) {
            self.out.open.push(reason);
        }
    }

    /// Several variants fit: the reasons of the sites whose whitespace the count left free.
    fn note_open(&mut self, sites: &[Site], deltas: &[Vec<i64>]) {
        let open = &mut self.out.open;
        for (site, d) in sites.iter().zip(deltas) {
            let target_free = d.len() > 1;
            match Reason::named(site.reason) {
                Some(reason) if target_free && !open.contains(&reason) => open.push(reason),
                _ => {}
            }
        }
        if self.reported.is_none() && !open.contains(&Reason::NoUsage) {
            open.push(Reason::NoUsage);
        }
    }

    /// What all the candidates say together, with what a cut or hermes' spellings hide beside
    /// the chosen stream.
    fn finish(self, cx: &Context) -> Synthesis {
        let Search {
            mut out,
            gaps,
            partial_candidates,
            ..
        } = self;
        settle_partial(cx, partial_candidates, &mut out);
        if out.consistent == 0 && out.fields_agree && !gaps.any_longer_or_equal {
            out.short_by = gaps.shortest;
        }
        if out.consistent > 0 && out.ids.is_none() {
            // The arithmetic promised a variant the re-check refused: trust neither.
            out.consistent = 0;
        }
        if cx.asked.cut {
            count_cut_hidden(cx, &mut out);
        }
        count_hidden_spellings(cx, &mut out);
        out
    }
}

/// How far the candidates' lengths fall short of the reported count.
#[derive(Default)]
struct Gaps {
    /// The smallest shortfall of a candidate shorter than the count.
    shortest: Option<usize>,
    /// Some candidate was as long as the count, or longer.
    any_longer_or_equal: bool,
}

impl Gaps {
    /// A candidate `target` tokens short of the count (negative: longer).
    fn note(&mut self, target: i64) {
        if target < 0 {
            self.any_longer_or_equal = true;
        } else {
            let gap = target as usize;
            self.shortest = Some(self.shortest.map_or(gap, |g| g.min(gap)));
            if gap == 0 {
                self.any_longer_or_equal = true;
            }
        }
    }
}

/// Per site, the token delta of each whitespace option (the first, nothing, is 0): from the
/// stretch between special literals that holds the site where the tokenizer encodes stretches
/// alone ([`Tokenizer::insert_deltas`](crate::model::Tokenizer::insert_deltas)), else from the
/// whole text with each insert.
fn site_deltas(
    cx: &Context,
    encoding: Encoding,
    text: &str,
    sites: &[Site],
    base_len: usize,
) -> Vec<Vec<i64>> {
    sites
        .iter()
        .enumerate()
        .map(|(i, site)| {
            if let Encoding::Special = encoding {
                let tokenizer = &cx.profile.tokenizer;
                if let Some(deltas) = tokenizer.insert_deltas(text, site.at, &WHITESPACE) {
                    return deltas;
                }
            }
            (0..WHITESPACE.len())
                .map(|o| {
                    if o == 0 {
                        return 0;
                    }
                    let mut choice = vec![0; sites.len()];
                    choice[i] = o;
                    encoding
                        .encode(cx, &with_inserts(text, sites, &choice))
                        .len() as i64
                        - base_len as i64
                })
                .collect()
        })
        .collect()
}

/// How many variants of `text` add up to `target` more tokens, and one of them.
fn variants_reaching(
    cx: &Context,
    text: &str,
    sites: &[Site],
    deltas: &[Vec<i64>],
    target: i64,
) -> (u64, Option<Vec<usize>>) {
    let (count, choice) = combinations(deltas, target);
    if cx.rules.stream_by_token && cx.asked.stream && count > 1 && count <= MOST_CHECKED {
        // A stream modelled step by step: send every variant forward and count only those that
        // give this answer (a whitespace the answer does not show directly may still move where
        // the section buffer was cut).
        let agreeing: Vec<Vec<usize>> = every_combination(deltas, target)
            .into_iter()
            .filter(|c| cx.agrees(&with_inserts(text, sites, c)).is_ok())
            .collect();
        (agreeing.len() as u64, agreeing.into_iter().next())
    } else {
        (count, choice)
    }
}

/// One whitespace variant of a candidate text: an option per site.
struct Variant<'a> {
    text: &'a str,
    sites: &'a [Site],
    choice: &'a [usize],
}

/// The ids of the variant, if they have the reported length and the variant gives the answer
/// (never trusted from the arithmetic alone). The plain variant is the candidate text itself,
/// which [`Search::try_text`] has sent forward already: its ids are `base`, and it agrees.
fn checked_variant(
    cx: &Context,
    encoding: Encoding,
    variant: &Variant,
    base: Vec<u32>,
    reported: Option<usize>,
) -> Option<Vec<u32>> {
    let Variant {
        text,
        sites,
        choice,
    } = *variant;
    if choice.iter().all(|&o| o == 0) {
        return reported.is_none_or(|n| n == base.len()).then_some(base);
    }
    let variant = with_inserts(text, sites, choice);
    let ids = encoding.encode(cx, &variant);
    let counted = reported.is_none_or(|n| n == ids.len());
    (counted && cx.agrees(&variant).is_ok()).then_some(ids)
}

/// A held-back partial character is only considered where nothing else explains the count,
/// where the answer shows the replacement character, or where the stream that fits ends on the
/// reasoning's close (the one token a partial character would look like).
fn settle_partial(cx: &Context, partial_candidates: Vec<Vec<u32>>, out: &mut Synthesis) {
    let Some(first) = partial_candidates.into_iter().next() else {
        return;
    };
    let shows_replacement = [
        cx.completion.content.as_deref(),
        cx.completion.reasoning.as_deref(),
    ]
    .into_iter()
    .flatten()
    .any(|t| t.trim_end().ends_with('\u{FFFD}'));
    let ends_on_close = out.ids.as_ref().is_some_and(|ids| {
        let close = cx.profile.reasoning_close().unwrap_or("\u{0}");
        cx.profile.tokenizer.decode(ids).ends_with(close)
    });
    if out.consistent == 0 || shows_replacement || ends_on_close {
        out.partial = Some(first);
    }
}

/// A cut answer: the streams its cut tail and section could hide beside the chosen one.
fn count_cut_hidden(cx: &Context, out: &mut Synthesis) {
    let Some(ids) = &out.ids else {
        return;
    };
    let hidden = hidden_tail_tokens(cx, ids) + hidden_section_whitespace(cx, ids);
    if hidden > 0 {
        out.consistent = out.consistent.saturating_add(hidden);
        let reason = if ends_inside_a_call(cx, ids) {
            Reason::CutInsideToolSection
        } else {
            Reason::CutAfterToolCall
        };
        if !out.open.contains(&reason) {
            out.open.push(reason);
        }
    }
}

/// Count, beside the stream the synthesis chose, the other spellings hermes hides
/// ([`hermes_alternatives`]) that have the same length and give the same answer through the
/// shape: each is another consistent stream, so the sample is ambiguous, never `unique`.
fn count_hidden_spellings(cx: &Context, out: &mut Synthesis) {
    if !parser_traits(cx.asked.syntax).rewrites_calls {
        return;
    }
    let Some(ids) = &out.ids else {
        return;
    };
    let tokenizer = &cx.profile.tokenizer;
    let text = tokenizer.decode(ids);
    let mut seen = std::collections::HashSet::new();
    for (alt, reason) in hermes_alternatives(&text) {
        if alt == text || !seen.insert(alt.clone()) {
            continue;
        }
        if tokenizer.encode(&alt).len() != ids.len() || cx.agrees(&alt).is_err() {
            continue;
        }
        out.consistent = out.consistent.saturating_add(1);
        if !out.open.contains(&reason) {
            out.open.push(reason);
        }
    }
}

/// How many tokens the cut tail of `ids` can hold that the answer does not show: each of the
/// last [`TAIL_PROBED`] ordinary tokens is swapped for another token, and the last token (a
/// marker too) for whitespace, and the stream sent forward again; a swap that gives the same
/// answer (with the same count, by construction) is a stream the answer cannot tell from this
/// one. The whitespace swap is the marker the parsers skip or hold back at a cut: whitespace
/// after a section opener instead of its first call's opener (Kimi, DeepSeek-V3), a space or
/// newline where a call's close was (Kimi's streamed arguments drop it beside the joining space,
/// DeepSeek-V3's and hermes' stream parsers show an unclosed call as a closed one).
fn hidden_tail_tokens(cx: &Context, ids: &[u32]) -> u64 {
    let tokenizer = &cx.profile.tokenizer;
    let probes: Vec<u32> = ["x", "7"]
        .iter()
        .filter_map(|p| tokenizer.encode(p).first().copied())
        .collect();
    let mut hidden = 0;
    for at in ids.len().saturating_sub(TAIL_PROBED)..ids.len() {
        if tokenizer.is_special(ids[at]) {
            continue;
        }
        for &probe in probes.iter().filter(|&&p| p != ids[at]) {
            let mut twin = ids.to_vec();
            twin[at] = probe;
            if cx.agrees(&tokenizer.decode(&twin)).is_ok() {
                hidden += 1;
            }
        }
    }
    let whitespace: Vec<u32> = [" ", "\n"]
        .iter()
        .filter_map(|w| tokenizer.encode(w).first().copied())
        .collect();
    if let Some((&last, kept)) = ids.split_last() {
        for &probe in whitespace.iter().filter(|&&w| w != last) {
            let mut twin = kept.to_vec();
            twin.push(probe);
            if cx.agrees(&tokenizer.decode(&twin)).is_ok() {
                hidden += 1;
            }
        }
    }
    hidden
}

/// For a stream modelled step by step ([`ReadBackRules::stream_by_token`]) cut
/// inside the tool section: how many streams of the same length the answer cannot tell from
/// `ids` because they hold whitespace where the section's parser sends nothing until the section
/// closes (after the opener, between calls) or skips it (before the arguments), with as many
/// tokens fewer at the cut. Each is built and sent forward: only those giving the same answer
/// count. (Other shapes flag every cut the answer reports as `tool_calls`, see
/// `classify::cut_hidden_by_tool_calls`.)
fn hidden_section_whitespace(cx: &Context, ids: &[u32]) -> u64 {
    if !(cx.rules.stream_by_token
        && cx.asked.stream
        && parser_traits(cx.asked.syntax).stream_ported)
    {
        return 0;
    }
    let tokenizer = &cx.profile.tokenizer;
    let text = tokenizer.decode(ids);
    let Some(section) = text.find(SECTION_BEGIN) else {
        return 0;
    };
    let mut sites = vec![section + SECTION_BEGIN.len()];
    for marker in [CALL_END, ARGUMENT_BEGIN] {
        let mut from = section;
        while let Some(at) = text[from..].find(marker) {
            from += at + marker.len();
            sites.push(from);
        }
    }
    let mut hidden = 0;
    for at in sites {
        for ws in [" ", "\n"] {
            let twin = format!("{}{ws}{}", &text[..at], &text[at..]);
            let twin_ids = tokenizer.encode(&twin);
            let Some(extra) = twin_ids.len().checked_sub(ids.len()) else {
                continue;
            };
            let same_length = &twin_ids[..twin_ids.len() - extra];
            // (Whitespace may merge into the next token: then no token is dropped at the cut.)
            if same_length == ids {
                continue;
            }
            if cx.agrees(&tokenizer.decode(same_length)).is_ok() {
                hidden += 1;
            }
        }
    }
    hidden
}

/// How far back a cut may hide ordinary tokens (a parser holds back a partial marker, an
/// unfinished call's header, the text between two calls).
const TAIL_PROBED: usize = 4;

/// The stream ends inside an unfinished call (after the last call opener, no call close; the
/// family's [`ToolGrammar`](crate::model::family::ToolGrammar)).
fn ends_inside_a_call(cx: &Context, ids: &[u32]) -> bool {
    let Some(grammar) = cx.profile.family.spec().tool_grammar else {
        return false;
    };
    let text = cx.profile.tokenizer.decode(ids);
    match (
        text.rfind(grammar.call_begin()),
        text.rfind(grammar.call_end),
    ) {
        (Some(o), Some(c)) => o > c,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Most variants of one text sent forward one by one (beyond it, the count is the knapsack's).
const MOST_CHECKED: u64 = 16;

/// Every choice (one option per site) whose deltas sum to `target`, plainest first.
fn every_combination(deltas: &[Vec<i64>], target: i64) -> Vec<Vec<usize>> {
    fn walk(deltas: &[Vec<i64>], t: i64, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        let Some((first, rest)) = deltas.split_first() else {
            if t == 0 {
                out.push(prefix.clone());
            }
            return;
        };
        for (option, d) in first.iter().enumerate() {
            prefix.push(option);
            walk(rest, t - d, prefix, out);
            prefix.pop();
        }
    }
    let mut out = Vec::new();
    walk(deltas, target, &mut Vec::new(), &mut out);
    out
}

/// How many choices (one option per site) sum to `target`, and the first of them (options in
/// order of preference: no whitespace first).
fn combinations(deltas: &[Vec<i64>], target: i64) -> (u64, Option<Vec<usize>>) {
    use std::collections::HashMap;
    // ways[i][t]: number of ways for sites i.. to sum to t.
    fn ways(deltas: &[Vec<i64>], i: usize, t: i64, memo: &mut HashMap<(usize, i64), u64>) -> u64 {
        if i == deltas.len() {
            return u64::from(t == 0);
        }
        if let Some(&w) = memo.get(&(i, t)) {
            return w;
        }
        let mut total = 0u64;
        for &d in &deltas[i] {
            total = total.saturating_add(ways(deltas, i + 1, t - d, memo));
        }
        memo.insert((i, t), total);
        total
    }
    let mut memo = HashMap::new();
    let count = ways(deltas, 0, target, &mut memo);
    if count == 0 {
        return (0, None);
    }
    let mut choice = Vec::with_capacity(deltas.len());
    let mut t = target;
    for i in 0..deltas.len() {
        let pick = (0..deltas[i].len())
            .find(|&o| ways(deltas, i + 1, t - deltas[i][o], &mut memo) > 0)
            .unwrap_or(0);
        t -= deltas[i][pick];
        choice.push(pick);
    }
    (count, Some(choice))
}

#[cfg(test)]
mod tests {
    use super::combinations;

    #[test]
    fn knapsack_counts_and_picks_the_plainest() {
        // two sites, options "", " ", "\n" with deltas 0, 1, 1
        let d = vec![vec![0, 1, 1], vec![0, 1, 1]];
        assert_eq!(combinations(&d, 0), (1, Some(vec![0, 0])));
        assert_eq!(combinations(&d, 1).0, 4);
        assert_eq!(combinations(&d, 2).0, 4);
        assert_eq!(combinations(&d, 3), (0, None));
    }
}
