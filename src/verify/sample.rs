//! One successful journal record → what it contributes to the figures ([`SampleFigures`]).
//!
//! The fidelity class is the one `build` gives the record (its endpoint's shape and its
//! provider's inferred conventions, [`crate::build::Providers`], as `build` reads them). The reference compare and the usage
//! cross-check need the ids rebuilt **from the text alone**: when the server also returned its
//! own ids, the record is reconstructed a second time with those ids removed from the answer, so
//! what is compared is what a text-only provider would have given us.

use serde_json::Value;

use super::compare::compare;
use super::figures::{call_id_form, SampleFigures, SampleTrust};
use crate::build::ReadRecord;
use crate::journal::Record;
use crate::model::Profile;
use crate::reconstruct::infer::Convention;
use crate::reconstruct::{reconstruct, ReconstructOptions};

/// Check one successful record. `file_reference`: the `--reference` ids for this record's id
/// (`None` when no file was given); `use_file`: a file was given (it overrides server ids).
/// Errors are short reasons; the caller adds the location.
pub fn check_record(
    profile: &Profile,
    options: &ReconstructOptions,
    conventions: &[&'static dyn Convention],
    record: &Record,
    source: Option<String>,
    use_file: bool,
    file_reference: Option<&[u32]>,
) -> Result<SampleFigures, String> {
    let read = ReadRecord::of(record)?;
    let row = read.row_under(profile, options, conventions, source)?.row;
    let (response, completion) = (read.response, &read.completion);

    // Prompt and completion ids from the text alone.
    let text_ids: Option<(usize, Vec<u32>)> =
        if completion.completion_token_ids.is_some() || completion.prompt_token_ids.is_some() {
            read.request.as_ref().ok().and_then(|request| {
                reconstruct(profile, request, &without_server_ids(response), options)
                    .ok()
                    .map(|r| (r.prompt_ids.len(), r.completion_ids))
            })
        } else {
            let prompt_len = row.prompt_len as usize;
            Some((
                prompt_len,
                row.input_ids[prompt_len.min(row.input_ids.len())..].to_vec(),
            ))
        };

    let reference: Option<&[u32]> = if use_file {
        file_reference
    } else {
        completion.completion_token_ids.as_deref()
    };
    let comparison = match (&text_ids, reference) {
        (Some((_, ours)), Some(reference)) => Some(compare(&profile.tokenizer, ours, reference)),
        _ => None,
    };
    let usage = completion.usage.as_ref();
    let prompt_usage = usage
        .and_then(|u| u.prompt_tokens)
        .zip(text_ids.as_ref().map(|(p, _)| *p));
    let completion_usage = usage
        .and_then(|u| u.completion_tokens)
        .zip(text_ids.as_ref().map(|(_, c)| c.len()));
    let trust = SampleTrust {
        reasons: row.fidelity_reasons.clone(),
        tool_calls: row.has_tool_calls,
        call_id_form: completion
            .tool_calls
            .first()
            .map(|call| call_id_form(call.id.as_deref())),
    };
    Ok(SampleFigures {
        id: row.id,
        source: row.source,
        provider: row.provider,
        fidelity: row.fidelity_class,
        prompt_len: row.prompt_len as usize,
        completion_len: row.completion_len as usize,
        comparison,
        prompt_usage,
        completion_usage,
        trust,
    })
}

/// `response` without the server's own token ids (vLLM/SGLang `token_ids` and
/// `prompt_token_ids`, llama.cpp `__verbose`), as a text-only server would have sent it.
pub fn without_server_ids(response: &Value) -> Value {
    let mut response = response.clone();
    if let Some(body) = response.as_object_mut() {
        body.remove("prompt_token_ids");
        body.remove("__verbose");
        if let Some(Value::Array(choices)) = body.get_mut("choices") {
            for choice in choices.iter_mut().filter_map(Value::as_object_mut) {
                choice.remove("token_ids");
                choice.remove("prompt_token_ids");
            }
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::Completion;

    #[test]
    fn stripping_removes_every_id_field_completion_reads() {
        let body = serde_json::json!({"prompt_token_ids": [1], "__verbose": {"tokens": [3]},
            "choices": [{"token_ids": [5], "prompt_token_ids": [1],
                         "message": {"content": "x"}, "finish_reason": "stop"}]});
        let c = Completion::from_response(&without_server_ids(&body)).expect("parse");
        assert_eq!(c.completion_token_ids, None);
        assert_eq!(c.prompt_token_ids, None);
        assert_eq!(c.content.as_deref(), Some("x"));
    }
}
