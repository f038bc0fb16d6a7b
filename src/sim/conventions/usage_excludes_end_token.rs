//! `usage.completion_tokens` leaves out the end token (DeepInfra and SiliconFlow on real
//! traffic: every finished answer one short of the ids the model wrote). A cut answer has no end
//! token: its count is the same as anyone's.

/// The count such a provider reports for `count` sampled ids (`cut`: `max_tokens` ended them).
pub fn completion_tokens(count: usize, cut: bool) -> usize {
    if cut {
        count
    } else {
        count.saturating_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_finished_answer_is_one_short() {
        assert_eq!(completion_tokens(63, false), 62);
        assert_eq!(completion_tokens(14, true), 14);
        assert_eq!(completion_tokens(0, false), 0);
    }
}
