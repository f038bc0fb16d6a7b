//! A `length` cut inside a call's id gives a bogus call named after the id text so far
//! (vLLM 0.33: `kimi::unfinished_call`; kimi_k25/vllm-0.33.0/*/cut_call_id). Without it such a
//! call is dropped.

use crate::completion::{Arguments, Completion};
use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct BogusCallForCutId;

impl Quirk for BogusCallForCutId {
    fn name(&self) -> &'static str {
        "bogus_call_for_cut_id"
    }

    /// The answer's last call can be the bogus one: named after the id text so far, id
    /// `functions.{that text}:N`, no arguments. (A call cut right after its argument opener looks
    /// the same when the id text was `NAME`: the reconstruction adds the candidate, never
    /// substitutes it, and the count and the forward check decide.) With spaces around added
    /// tokens the text so far starts with the joining space, which the model did not write.
    fn cut_call_id_text(&self, answer: &Completion, spaces: bool) -> Option<String> {
        let last = answer.tool_calls.last()?;
        let no_arguments = match &last.arguments {
            Arguments::Raw(a) => a.is_empty() || a == "{}",
            Arguments::Object(v) => v.as_object().is_some_and(|o| o.is_empty()),
        };
        let header = last
            .id
            .as_deref()?
            .strip_prefix("functions.")?
            .rsplit_once(':')?
            .0;
        let header = if spaces {
            header.strip_prefix(' ').unwrap_or(header)
        } else {
            header
        };
        (no_arguments && !header.is_empty() && header.trim() == last.name)
            .then(|| header.to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::{BogusCallForCutId, DropsIncompleteCall};
    use crate::completion::Completion;
    use crate::server::Quirks;

    fn answer(call: Value) -> Completion {
        Completion::from_response(&json!({
            "choices": [{"index": 0, "finish_reason": "length",
                "message": {"role": "assistant", "content": "Let me check.", "tool_calls": [call]}}],
        }))
        .unwrap()
    }

    #[test]
    fn the_bogus_call_of_a_cut_id_gives_back_the_id_text() {
        // kimi_k25/vllm-0.33.0/nonstream/{nospaces,spaces}/cut_call_id/001: the model had
        // written `functions` after `<|tool_call_begin|>`.
        // As in vLLM 0.33's list.
        let quirks = Quirks::new(&[&BogusCallForCutId]);
        let plain = answer(json!({"id": "functions.functions:0", "type": "function",
            "function": {"name": "functions", "arguments": "{}"}}));
        assert_eq!(
            quirks.cut_call_id_text(&plain, false).as_deref(),
            Some("functions")
        );
        let spaced = answer(json!({"id": "functions. functions:0", "type": "function",
            "function": {"name": "functions", "arguments": "{}"}}));
        assert_eq!(
            quirks.cut_call_id_text(&spaced, true).as_deref(),
            Some("functions")
        );
        // A call with arguments is not one; one without could be either (the id text
        // `get_weather`, or a call cut right after its argument opener): both are candidates.
        let real = answer(json!({"id": "functions.get_weather:0", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo"}}));
        assert_eq!(quirks.cut_call_id_text(&real, false), None);
        // A server that drops such a call (SGLang) shows nothing of it.
        let drops = Quirks::new(&[&DropsIncompleteCall]);
        assert_eq!(drops.cut_call_id_text(&plain, false), None);
    }
}
