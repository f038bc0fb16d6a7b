//! Tool calls carry `index` (SGLang, OpenRouter).

use serde_json::Value;

use crate::server::quirk::{Evidence, Quirk, Seen};

#[derive(Debug, Clone, Copy)]
pub struct IndexesCalls;

impl Quirk for IndexesCalls {
    fn name(&self) -> &'static str {
        "indexes_calls"
    }

    /// Whether a non-streamed answer's calls carry `index` (a streamed one is assembled by
    /// draftgen, which keeps `index` whatever the server).
    fn evidence(&self, seen: &Seen) -> Evidence {
        let calls = seen.body["choices"][0]["message"]
            .get("tool_calls")
            .and_then(Value::as_array);
        let Some(calls) = calls.filter(|c| !c.is_empty() && !seen.stream) else {
            return Evidence::Silent;
        };
        if calls
            .iter()
            .all(|c| c.get("index").is_some_and(Value::is_u64))
        {
            Evidence::Shows("tool calls carry `index`")
        } else {
            Evidence::Contradicts("tool calls lack `index`")
        }
    }
}
