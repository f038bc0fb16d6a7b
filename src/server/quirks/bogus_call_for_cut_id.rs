//! A `length` cut inside a call's id gives a bogus call named after the id text so far
//! (vLLM 0.33: `kimi::unfinished_call`; kimi_k25/vllm-0.33.0/*/cut_call_id). Without it such a
//! call is dropped.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct BogusCallForCutId;

impl Quirk for BogusCallForCutId {
    fn name(&self) -> &'static str {
        "bogus_call_for_cut_id"
    }
}
