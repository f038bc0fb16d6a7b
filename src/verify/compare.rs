//! Reference compare: the completion ids rebuilt from the answer's text against reference ids
//! (the server's own, or `--reference FILE`).
//!
//! Equal ids are `exact`. Different ids can still be the same text: a model may sample a
//! non-canonical split of the same bytes (`"ab"` as `"a" + "b"`), which no rebuild from text can
//! see and which is harmless to train on — `bpe_benign`. A `length` cut inside a multi-byte
//! character leaves the reference ending in a partial-byte token that the text cannot carry (the
//! server drops it or shows U+FFFD) — `truncated_mid_character`. Anything else is `divergent`,
//! reported at its first differing position with decoded context on both sides.

use crate::model::Tokenizer;

/// Tokens of context decoded on each side of the first difference.
const CONTEXT_TOKENS: usize = 12;

/// How rebuilt ids relate to the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    Exact,
    BpeBenign,
    TruncatedMidCharacter,
    Divergent(Divergence),
}

/// Where and how two id streams first differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// First token position where the ids differ.
    pub position: usize,
    /// Decoded text from a few tokens before `position` to a few after: ours, then the reference.
    pub ours: String,
    pub reference: String,
}

/// Compare `ours` (rebuilt from text) with `reference`.
pub fn compare(tokenizer: &Tokenizer, ours: &[u32], reference: &[u32]) -> Comparison {
    if ours == reference {
        return Comparison::Exact;
    }
    if let (Ok(ob), Ok(rb)) = (
        tokenizer.decode_bytes(ours),
        tokenizer.decode_bytes(reference),
    ) {
        if ob == rb {
            return Comparison::BpeBenign;
        }
        let partial = incomplete_tail(&rb);
        if partial > 0 && strip_replacement_chars(&ob) == &rb[..rb.len() - partial] {
            return Comparison::TruncatedMidCharacter;
        }
    }
    Comparison::Divergent(divergence(tokenizer, ours, reference))
}

fn divergence(tokenizer: &Tokenizer, ours: &[u32], reference: &[u32]) -> Divergence {
    let position = ours
        .iter()
        .zip(reference)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(reference.len()));
    let context = |ids: &[u32]| {
        let lo = position.saturating_sub(CONTEXT_TOKENS);
        let hi = (position + CONTEXT_TOKENS).min(ids.len());
        let before = tokenizer.decode(&ids[lo..position.min(ids.len())]);
        let after = tokenizer.decode(&ids[position.min(ids.len())..hi]);
        format!("{before}\u{2502}{after}")
    };
    Divergence {
        position,
        ours: context(ours),
        reference: context(reference),
    }
}

/// Bytes at the end of `bytes` that start a UTF-8 character but do not complete it (0 when the
/// text ends on a character boundary).
pub fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead byte
        }
        let needed = match byte {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

/// `bytes` without the U+FFFD replacement characters a server shows a partial character as.
fn strip_replacement_chars(bytes: &[u8]) -> &[u8] {
    const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();
    let mut end = bytes;
    while let Some(rest) = end.strip_suffix(REPLACEMENT) {
        end = rest;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_tails() {
        assert_eq!(incomplete_tail(b"abc"), 0);
        assert_eq!(incomplete_tail("é".as_bytes()), 0);
        assert_eq!(incomplete_tail(&"é".as_bytes()[..1]), 1);
        assert_eq!(incomplete_tail(&"€".as_bytes()[..2]), 2);
        assert_eq!(incomplete_tail(&"𝄞".as_bytes()[..3]), 3);
        assert_eq!(incomplete_tail("a𝄞".as_bytes()), 0);
        assert_eq!(strip_replacement_chars("ab\u{FFFD}".as_bytes()), b"ab");
    }
}
