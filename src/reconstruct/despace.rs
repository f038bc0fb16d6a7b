//! Undo the spaces some detokenizers put around added tokens.
//!
//! vLLM's default `spaces_between_special_tokens=True` joins the pieces of the decoded stream
//! with `" "` wherever an added token sits, so `ok</think>1` arrives as `ok </think> 1` and
//! `<|tool_call_end|><|tool_calls_section_end|>` as `<|tool_call_end|> <|tool_calls_section_end|>`
//! (vLLM #33457). The inverse removes exactly one space on each side of every marker, and the
//! single joining space between two adjacent markers. It is only applied when the endpoint is
//! declared to insert spaces: a space next to a marker is otherwise real model output.

/// Remove the inserted spaces from `text`, whose added tokens' literals sit at `spans` (byte
/// ranges, left to right: [`Tokenizer::special_spans`](crate::model::Tokenizer::special_spans)).
///
/// `marker_before`/`marker_after` say whether an added token sat right before/after this text in
/// the stream but is not part of it (a parser cut it out, like the `</think>` between reasoning
/// and content).
pub fn despace(
    text: &str,
    spans: impl IntoIterator<Item = (usize, usize)>,
    marker_before: bool,
    marker_after: bool,
) -> String {
    let pieces = split_at_spans(text, spans);
    let mut out = String::with_capacity(text.len());
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Marker(m) => out.push_str(m),
            Piece::Text(t) => {
                let after_marker = if i == 0 {
                    marker_before
                } else {
                    matches!(pieces[i - 1], Piece::Marker(_))
                };
                let before_marker = if i + 1 == pieces.len() {
                    marker_after
                } else {
                    matches!(pieces[i + 1], Piece::Marker(_))
                };
                if after_marker && before_marker && *t == " " {
                    continue; // the one space that joined two markers
                }
                let mut t: &str = t;
                if after_marker {
                    t = t.strip_prefix(' ').unwrap_or(t);
                }
                if before_marker {
                    t = t.strip_suffix(' ').unwrap_or(t);
                }
                out.push_str(t);
            }
        }
    }
    out
}

#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Marker(&'a str),
}

/// `text` cut into markers (at `spans`) and the text between them.
fn split_at_spans(text: &str, spans: impl IntoIterator<Item = (usize, usize)>) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (from, to) in spans {
        if start < from {
            pieces.push(Piece::Text(&text[start..from]));
        }
        pieces.push(Piece::Marker(&text[from..to]));
        start = to;
    }
    if start < text.len() {
        pieces.push(Piece::Text(&text[start..]));
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn markers() -> Vec<String> {
        [
            "<think>",
            "</think>",
            "<|tool_call_end|>",
            "<|tool_calls_section_end|>",
            "<|tool_call_begin|>",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// `despace` of `text` with the markers found leftmost-longest (as the tokenizer does).
    fn despace_with(text: &str, before: bool, after: bool) -> String {
        let searcher = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(markers())
            .unwrap();
        let spans = searcher.find_iter(text).map(|m| (m.start(), m.end()));
        despace(text, spans, before, after)
    }

    /// `despace` of a text with no marker beside it.
    fn inside(text: &str) -> String {
        despace_with(text, false, false)
    }

    #[test]
    fn removes_one_space_each_side() {
        assert_eq!(inside("ok </think> 1"), "ok</think>1");
        assert_eq!(inside(" <think> ok </think> 1"), "<think>ok</think>1");
        // real spaces beyond the inserted one stay
        assert_eq!(inside("a  </think>  b"), "a </think> b");
    }

    #[test]
    fn adjacent_markers_share_one_space() {
        assert_eq!(
            inside("<|tool_call_end|> <|tool_calls_section_end|>"),
            "<|tool_call_end|><|tool_calls_section_end|>"
        );
        // a real space between two markers arrives as three
        assert_eq!(
            inside("<|tool_call_end|>   <|tool_calls_section_end|>"),
            "<|tool_call_end|> <|tool_calls_section_end|>"
        );
    }

    #[test]
    fn boundaries_cut_by_a_parser() {
        assert_eq!(despace_with("reasoning ", false, true), "reasoning");
        assert_eq!(despace_with(" answer", true, false), "answer");
        assert_eq!(inside("plain text"), "plain text");
    }
}
