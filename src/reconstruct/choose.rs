//! Choosing among candidate token streams with the server's own count.

use crate::completion::Completion;
use crate::model::Profile;

use super::literal::Literals;

pub(super) struct Chosen {
    pub ids: Vec<u32>,
    pub ambiguous: bool,
}

/// `texts[0]` is the most likely form (the one the family's template writes, or for a `length`
/// stop the unfinished reasoning); the others are alternatives the same response could have come
/// from. The one whose length equals `usage.completion_tokens` wins; without a usable count the
/// first is taken and the sample marked ambiguous. Special-token texts the answer shows are
/// tried as their ids and as plain pieces ([`Literals`]).
pub(super) fn by_usage(
    profile: &Profile,
    texts: &[String],
    completion: &Completion,
    literals: Option<&Literals>,
    warnings: &mut Vec<String>,
) -> Chosen {
    let mut candidates: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
    for text in texts {
        let plain = literals.map(|l| l.encode(&profile.tokenizer, text));
        for ids in std::iter::once(profile.tokenizer.encode(text)).chain(plain) {
            if !candidates.contains(&ids) {
                candidates.push(ids);
            }
        }
    }
    let reported = completion
        .usage
        .as_ref()
        .and_then(|u| u.completion_tokens)
        .map(|n| n as usize);

    let matching: Vec<usize> = match reported {
        Some(n) => (0..candidates.len())
            .filter(|&i| candidates[i].len() == n)
            .collect(),
        None => Vec::new(),
    };
    let (index, ambiguous) = match (candidates.len(), matching.as_slice()) {
        (1, _) => (0, false),
        (_, [only]) => (*only, false),
        _ => (0, true),
    };
    if ambiguous {
        let why = match reported {
            None => "the response has no usage.completion_tokens".to_string(),
            Some(n) => format!("usage.completion_tokens = {n} matches no single candidate"),
        };
        warnings.push(format!(
            "ambiguous: {} token streams fit this response and {why}; chose the most likely form",
            candidates.len()
        ));
    }
    let ids = candidates.swap_remove(index);
    if let Some(n) = reported {
        if n != ids.len() {
            warnings.push(format!(
                "completion_tokens: the server counted {n}, the reconstruction has {}",
                ids.len()
            ));
        }
    }
    Chosen { ids, ambiguous }
}
