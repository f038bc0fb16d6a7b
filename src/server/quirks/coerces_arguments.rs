//! Non-streamed arguments whose value types do not match the declared schema are coerced and
//! re-serialized with `json.dumps` (vLLM 0.33's parser engine; kimi_k25/vllm-0.33.0/nonstream/
//! */schema_mismatch in tests/data/server_shapes). The simulator applies it with the request's
//! schemas (`sim::coerce`); the consistency check accepts a coerced spelling of the model's
//! arguments (`Parsed::agrees_with`).

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct CoercesArguments;

impl Quirk for CoercesArguments {
    fn name(&self) -> &'static str {
        "coerces_arguments"
    }

    fn reason(&self) -> Option<&'static str> {
        Some("arguments_reserialized")
    }
}
