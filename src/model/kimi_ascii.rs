//! Kimi's split pattern (`split.rs`, `KIMI_PATTERN`) on ASCII text, without the DFA.
//!
//! Most chat text is ASCII, and there the pattern's alternatives come down to a few byte runs:
//! letters (an optional prefix that is not `\r`, `\n`, a letter or a digit, then uppercase, then
//! lowercase letters, then an optional contraction), up to three digits, symbols (an optional
//! space, then symbols, then newlines), and whitespace (up to its last newline; else all of it at
//! the end, all but its last char before a non-space, or the one char). Where a decision depends
//! on a byte outside ASCII (a Unicode letter, digit, symbol or space may continue a run there,
//! and `(?i)` folds `s` with `ſ`), [`piece_end`] answers `None` and the DFA decides: the pieces
//! are the pattern's either way (split.rs tests both against fancy-regex).

const UPPER: u8 = 1;
const LOWER: u8 = 2;
const DIGIT: u8 = 4;
/// `\s`: tab, line feed, vertical tab, form feed, carriage return, space.
const SPACE: u8 = 8;
/// `\r` and `\n`.
const NEWLINE: u8 = 16;
/// Not ASCII: the DFA decides.
const HIGH: u8 = 32;
const LETTER: u8 = UPPER | LOWER;

static CLASS: [u8; 256] = classes();

const fn classes() -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'A'..=b'Z' => UPPER,
            b'a'..=b'z' => LOWER,
            b'0'..=b'9' => DIGIT,
            b'\r' | b'\n' => SPACE | NEWLINE,
            b'\t' | 0x0b | 0x0c | b' ' => SPACE,
            0x80..=0xff => HIGH,
            _ => 0,
        };
        b += 1;
    }
    table
}

fn class(text: &[u8], at: usize) -> Option<u8> {
    text.get(at).map(|&b| CLASS[b as usize])
}

/// The end of the piece starting at `at`, or `None` where the text outside ASCII decides.
pub(crate) fn piece_end(text: &[u8], at: usize) -> Option<usize> {
    let c = class(text, at)?;
    if c & HIGH != 0 {
        return None;
    }
    if c & LETTER != 0 {
        return letters(text, at);
    }
    if c & (NEWLINE | DIGIT) == 0 {
        // The letters' optional prefix.
        match class(text, at + 1) {
            Some(next) if next & HIGH != 0 => return None,
            Some(next) if next & LETTER != 0 => return letters(text, at + 1),
            _ => {}
        }
    }
    if c & DIGIT != 0 {
        return digits(text, at);
    }
    if c & SPACE == 0 || text[at] == b' ' {
        let from = at + usize::from(text[at] == b' ');
        let end = run(text, from, |k| k & (LETTER | DIGIT | SPACE) == 0)?;
        if end > from {
            let newlines = text[end..]
                .iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
            return Some(end + newlines);
        }
    }
    spaces(text, at)
}

/// The end of the run of bytes whose class passes `keep` from `at`; `None` if a byte outside
/// ASCII ends it.
fn run(text: &[u8], at: usize, keep: impl Fn(u8) -> bool) -> Option<usize> {
    let mut end = at;
    while let Some(k) = class(text, end) {
        if k & HIGH != 0 {
            return None;
        }
        if !keep(k) {
            break;
        }
        end += 1;
    }
    Some(end)
}

/// Uppercase then lowercase letters from `at` (at least one), then a contraction.
fn letters(text: &[u8], at: usize) -> Option<usize> {
    let upper = run(text, at, |k| k & UPPER != 0)?;
    let end = run(text, upper, |k| k & LOWER != 0)?;
    if text.get(end) != Some(&b'\'') {
        return Some(end);
    }
    let folded = |i: usize| match class(text, i) {
        Some(k) if k & HIGH != 0 => None,
        Some(k) if k & LETTER != 0 => Some(Some(text[i] | 0x20)),
        _ => Some(None),
    };
    Some(match folded(end + 1)? {
        Some(b's' | b't' | b'm' | b'd') => end + 2,
        Some(first @ (b'r' | b'v' | b'l')) => {
            let second = if first == b'l' { b'l' } else { b'e' };
            match folded(end + 2)? {
                Some(b) if b == second => end + 3,
                _ => end,
            }
        }
        _ => end,
    })
}

/// `\p{N}{1,3}`.
fn digits(text: &[u8], at: usize) -> Option<usize> {
    let mut end = at + 1;
    while end < at + 3 {
        match class(text, end) {
            Some(k) if k & DIGIT != 0 => end += 1,
            Some(k) if k & HIGH != 0 => return None,
            _ => break,
        }
    }
    Some(end)
}

/// Whitespace from `at`: to its last newline (`\s*[\r\n]+`), else all of it at the end of the
/// text (`\s+$`), all but its last char before a non-space (`\s+(?!\S)`), or its one char.
fn spaces(text: &[u8], at: usize) -> Option<usize> {
    let end = run(text, at, |k| k & SPACE != 0)?;
    if let Some(last) = text[at..end]
        .iter()
        .rposition(|&b| b == b'\r' || b == b'\n')
    {
        return Some(at + last + 1);
    }
    Some(if end == text.len() || end - at < 2 {
        end
    } else {
        end - 1
    })
}
