//! OpenRouter in front of a Kimi provider (measured on real OpenRouter answers): the upstream's Kimi parsers split the
//! text, then OpenRouter reshapes it — `message.reasoning` plus `reasoning_details`, empty
//! reasoning left out, the upstream's tool-call ids passed through, `content` `""` when empty,
//! `finish_reason` normalized. What the upstream strips is the upstream's business; taken here
//! as the raw parser's (arguments stripped, nothing else).

use super::quirk::Quirks;
use super::quirks::{
    DropsCutSection, DropsEmptyReasoning, DropsIncompleteCall, EmptyContentAsString,
    FinishToolCalls, IndexesCalls, PassesUpstreamCallIds, StripsArguments, StripsStreamedArguments,
};
use super::{ReasoningField, ServerShape, Versions};
use crate::api::ServerKind;

pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::OpenRouter,
    version: "",
    known: true,
    parses: true,
    reasoning_field: ReasoningField::Reasoning,
    reasoning_details: true,
    versions: Versions::Newest,
    quirks: Quirks::new(&[
        &DropsEmptyReasoning,
        &EmptyContentAsString,
        &PassesUpstreamCallIds,
        &StripsArguments,
        &StripsStreamedArguments,
        &DropsIncompleteCall,
        &DropsCutSection,
        &IndexesCalls,
        &FinishToolCalls,
    ]),
};
