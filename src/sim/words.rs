//! A small deterministic text generator: plausible sentences from a fixed word list, with some
//! non-ASCII words (Latin accents, Cyrillic, Greek, CJK) so tokenization is exercised beyond ASCII.

use rand::Rng;

const WORDS: &[&str] = &[
    "the",
    "model",
    "answer",
    "first",
    "check",
    "value",
    "because",
    "result",
    "tokens",
    "server",
    "request",
    "simple",
    "consider",
    "then",
    "we",
    "need",
    "to",
    "compute",
    "total",
    "and",
    "of",
    "is",
    "a",
    "in",
    "list",
    "function",
    "returns",
    "step",
    "data",
    "each",
    "weather",
    "city",
    "number",
    "string",
    "should",
    "could",
    "maybe",
    "careful",
    "output",
    "input",
    "file",
    "line",
    "user",
    "asks",
    "about",
    "this",
    "that",
    "so",
    "with",
    "for",
    "sum",
    "two",
    "three",
    "seven",
    "café",
    "naïve",
    "Straße",
    "données",
    "façade",
    "jalapeño",
    "привет",
    "мир",
    "λόγος",
    "δεδομένα",
    "東京",
    "数据",
    "模型",
    "こんにちは",
    "résumé",
    "über",
    "años",
    "coöperate",
];

/// `count` words as sentences: capitalized, punctuated, occasionally split into paragraphs.
pub fn sentences(rng: &mut impl Rng, count: usize) -> String {
    let mut out = String::new();
    let mut sentence_left = 0usize;
    for i in 0..count {
        let word = WORDS[rng.random_range(0..WORDS.len())];
        if sentence_left == 0 {
            if i > 0 {
                out.push_str(if rng.random_bool(0.15) { "\n\n" } else { " " });
            }
            sentence_left = rng.random_range(4..14);
            out.push_str(&capitalize(word));
        } else {
            out.push(' ');
            out.push_str(word);
        }
        sentence_left -= 1;
        if sentence_left == 0 || i + 1 == count {
            out.push(['.', '.', '.', '?', '!', ':'][rng.random_range(0..6)]);
            sentence_left = 0;
        } else if rng.random_bool(0.05) {
            out.push(',');
        }
    }
    out
}

/// A few words joined by spaces, for string arguments.
pub fn phrase(rng: &mut impl Rng, words: usize) -> String {
    (0..words.max(1))
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
