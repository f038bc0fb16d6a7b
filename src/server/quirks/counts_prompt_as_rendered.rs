//! `usage.prompt_tokens` is the length of the prompt rendered from the request with the model's
//! own template, so a different count means the server rendered another prompt (llama.cpp b8204's
//! generic tool handler replaces the system message): the rebuilt prompt ids are not what the
//! model saw. Measured for llama.cpp (54 of 54 equal without tools, tests/real_server_e2e.rs).

use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;

#[derive(Debug, Clone, Copy)]
pub struct CountsPromptAsRendered;

impl Quirk for CountsPromptAsRendered {
    fn name(&self) -> &'static str {
        "counts_prompt_as_rendered"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.prompt_count_is_render = true;
    }

    fn reason(&self) -> Option<&'static str> {
        Some("prompt_tokens_disagree")
    }
}
