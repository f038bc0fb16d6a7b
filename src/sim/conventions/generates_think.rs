//! The provider's template ends the prompt before the reasoning opener and the model generates
//! it (AtlasCloud K2.5 on real traffic): the completion holds one token more and the prompt one
//! fewer than a render that ends with `<think>`, and `max_tokens` counts the opener too. The
//! reasoning parser removes a leading opener, so the text fields are the same as from a
//! prompted `<think>`.

/// The opener moved from the end of the prompt's ids to the start of the completion's, where
/// the prompt ends with it.
pub fn move_opener(opener: u32, prompt: &mut Vec<u32>, completion: &mut Vec<u32>) -> bool {
    if prompt.last() != Some(&opener) {
        return false;
    }
    prompt.pop();
    completion.insert(0, opener);
    true
}

/// The answer's budget after the opener: one less than the request's `max_tokens`.
pub fn budget_after_opener(max_tokens: Option<usize>) -> Option<usize> {
    max_tokens.map(|n| n.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opener_moves_from_the_prompt_to_the_completion() {
        let (mut prompt, mut completion) = (vec![1, 2, 9], vec![5, 6]);
        assert!(move_opener(9, &mut prompt, &mut completion));
        assert_eq!((prompt, completion), (vec![1, 2], vec![9, 5, 6]));
        let (mut prompt, mut completion) = (vec![1, 2], vec![5]);
        assert!(!move_opener(9, &mut prompt, &mut completion));
        assert_eq!(budget_after_opener(Some(15)), Some(14));
    }
}
