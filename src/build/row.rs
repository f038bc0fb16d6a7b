//! [`Row`]: one training sample as `build` writes it (the output contract in
//! docs/FORMATS.md), and how one journal record becomes one.
//!
//! A record from `generate` goes through [`reconstruct`](crate::reconstruct::reconstruct), which
//! renders the prompt and rebuilds the completion, and takes the server's own ids when the record
//! has them. A record written by `draftgen import` already holds the model's ids (an earlier
//! local generation): its ids are taken as they are, with no render involved.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::completion::Completion;
use crate::journal::record::Origin;
use crate::journal::Record;
use crate::model::Profile;
use crate::reconstruct::infer::{self, Convention};
use crate::reconstruct::{ExchangeRequest, Fidelity, FidelityClass, Reason, ReconstructOptions};

/// One sample, in the column order of the Parquet schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The prompt id (multi-turn: the conversation's prompt id, one row per conversation).
    pub id: String,
    /// Prompt + completion (multi-turn: the whole conversation).
    pub input_ids: Vec<u32>,
    /// 0 on prompt, history and tool results; 1 on every model-produced token, end token included.
    pub loss_mask: Vec<u8>,
    /// Tokens before the first masked token.
    pub prompt_len: u32,
    /// Number of 1s in `loss_mask`.
    pub completion_len: u32,
    pub source: Option<String>,
    pub provider: Option<String>,
    pub finish_reason: Option<String>,
    pub has_tool_calls: bool,
    pub fidelity_class: FidelityClass,
    pub fidelity_reasons: Vec<Reason>,
    /// Assistant turns in the sample (1 unless multi-turn).
    pub turns: u32,
}

impl Row {
    /// A single-turn row: `prompt` then `completion`, masked on the completion.
    pub fn single(
        id: String,
        prompt: Vec<u32>,
        completion: &[u32],
        fidelity: Fidelity,
        meta: RowMeta,
    ) -> Row {
        let prompt_len = prompt.len();
        // One allocation of the final size (extending `prompt` would regrow and copy it).
        let mut input_ids = Vec::with_capacity(prompt_len + completion.len());
        input_ids.extend_from_slice(&prompt);
        input_ids.extend_from_slice(completion);
        let mut loss_mask = vec![0u8; prompt_len];
        loss_mask.resize(input_ids.len(), 1);
        Row {
            id,
            input_ids,
            loss_mask,
            prompt_len: prompt_len as u32,
            completion_len: completion.len() as u32,
            source: meta.source,
            provider: meta.provider,
            finish_reason: meta.finish_reason,
            has_tool_calls: meta.has_tool_calls,
            fidelity_class: fidelity.class,
            fidelity_reasons: fidelity.reasons,
            turns: 1,
        }
    }

    /// Keep the first `max_len` tokens, ids and mask together, and recount the lengths.
    pub fn cut(&mut self, max_len: usize) {
        self.input_ids.truncate(max_len);
        self.loss_mask.truncate(max_len);
        self.recount();
    }

    /// `prompt_len` and `completion_len` from the mask.
    pub fn recount(&mut self) {
        self.prompt_len = self
            .loss_mask
            .iter()
            .position(|&m| m == 1)
            .unwrap_or(self.loss_mask.len()) as u32;
        self.completion_len = self.loss_mask.iter().filter(|&&m| m == 1).count() as u32;
    }
}

/// The descriptive columns of a row.
#[derive(Debug, Clone, Default)]
pub struct RowMeta {
    pub source: Option<String>,
    pub provider: Option<String>,
    pub finish_reason: Option<String>,
    pub has_tool_calls: bool,
}

/// A built row and where its ids came from.
#[derive(Debug)]
pub struct BuiltRow {
    pub row: Row,
    /// The completion ids are the server's own (returned with the answer, or imported).
    pub server_ids: bool,
}

/// A record's answer and request, each read once: what its row is built from, and what verify
/// checks beside it.
pub struct ReadRecord<'a> {
    pub record: &'a Record,
    pub response: &'a Value,
    pub completion: Completion,
    /// The request as the server rendered it; an imported record's row does not read it.
    pub request: Result<ExchangeRequest, String>,
}

impl<'a> ReadRecord<'a> {
    pub fn of(record: &'a Record) -> Result<ReadRecord<'a>, String> {
        let response = record.response.as_ref().ok_or("no response body")?;
        let completion = Completion::from_response(response).map_err(|e| e.to_string())?;
        Ok(ReadRecord {
            record,
            response,
            completion,
            request: read_request(&record.request),
        })
    }

    /// The row. Errors are short reasons; the caller adds the location.
    pub fn row(
        &self,
        profile: &Profile,
        options: &ReconstructOptions,
        source: Option<String>,
    ) -> Result<BuiltRow, String> {
        self.row_under(profile, options, &[], source)
    }

    /// The row, rebuilt under the provider's inferred `conventions` (those that apply to it).
    pub fn row_under(
        &self,
        profile: &Profile,
        options: &ReconstructOptions,
        conventions: &[&'static dyn Convention],
        source: Option<String>,
    ) -> Result<BuiltRow, String> {
        let (record, completion) = (self.record, &self.completion);
        let meta = RowMeta {
            source,
            provider: record.provider.clone().or(completion.provider.clone()),
            finish_reason: completion.finish_reason.clone(),
            has_tool_calls: !completion.tool_calls.is_empty(),
        };
        if record.origin() == Origin::Imported {
            return imported_row(record, completion, meta);
        }
        let request = self.request.as_ref().map_err(Clone::clone)?;
        let server_ids = completion.completion_token_ids.is_some();
        let answer = infer::Answer {
            profile,
            request,
            completion,
            options,
        };
        let (r, _) = infer::rebuild(&answer, conventions).map_err(|e| e.to_string())?;
        let row = Row::single(
            record.id.clone(),
            r.prompt_ids,
            &r.completion_ids,
            r.fidelity,
            meta,
        );
        Ok(BuiltRow { row, server_ids })
    }
}

/// One successful record → one row. Errors are short reasons; the caller adds the location.
pub fn row_of(
    profile: &Profile,
    options: &ReconstructOptions,
    record: &Record,
    source: Option<String>,
) -> Result<BuiltRow, String> {
    ReadRecord::of(record)?.row(profile, options, source)
}

/// An imported generation: the ids as recorded, nothing rebuilt.
fn imported_row(
    record: &Record,
    completion: &Completion,
    meta: RowMeta,
) -> Result<BuiltRow, String> {
    let prompt = completion
        .prompt_token_ids
        .clone()
        .ok_or("imported record without prompt_token_ids")?;
    let answer = completion
        .completion_token_ids
        .as_deref()
        .ok_or("imported record without completion token ids")?;
    let mut fidelity = Fidelity::new(FidelityClass::ExactByServerIds);
    fidelity.because(Reason::ServerIds);
    let row = Row::single(record.id.clone(), prompt, answer, fidelity, meta);
    Ok(BuiltRow {
        row,
        server_ids: true,
    })
}

/// The request body as the server rendered it. [`ExchangeRequest`] reads only what shapes the render and
/// the answer — the messages, the `tools` parameter (tools left in the system prompt were never
/// declared to the template), `chat_template_kwargs`, `stream` (a streamed answer is checked
/// against the server's streaming shape; tests/replay_e2e.rs) and `max_tokens` (a vLLM 0.11 cut
/// says `tool_calls`, told from a finished answer by the limit) — straight from the body, nothing
/// else of it copied — and the reasoning effort (`reasoning_effort`, OpenRouter's
/// `reasoning.effort`), which servers hand the template as the `reasoning_effort` kwarg where the
/// request's kwargs do not set it (vLLM's harmony system message, gpt-oss's template:
/// `Reasoning: high`).
pub fn read_request(body: &Value) -> Result<ExchangeRequest, String> {
    let mut request = ExchangeRequest::deserialize(body).map_err(|e| format!("request: {e}"))?;
    let effort = body
        .get("reasoning_effort")
        .or_else(|| body.pointer("/reasoning/effort"))
        .and_then(Value::as_str)
        .filter(|e| ["low", "medium", "high"].contains(e));
    if let Some(effort) = effort {
        let kwargs = request
            .chat_template_kwargs
            .get_or_insert_with(Default::default);
        kwargs
            .entry("reasoning_effort")
            .or_insert_with(|| effort.into());
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasoning_effort_reaches_the_template() {
        let body = |extra: Value| {
            let mut body = serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]});
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            read_request(&body).unwrap().chat_template_kwargs
        };
        let effort = |kwargs: Option<serde_json::Map<String, Value>>| {
            kwargs.and_then(|k| k.get("reasoning_effort").cloned())
        };
        let high = Some(Value::from("high"));
        assert_eq!(
            effort(body(serde_json::json!({"reasoning": {"effort": "high"}}))),
            high
        );
        assert_eq!(
            effort(body(serde_json::json!({"reasoning_effort": "high"}))),
            high
        );
        // The request's own kwarg wins; no effort, no kwarg.
        let both = serde_json::json!({"reasoning_effort": "high",
                                      "chat_template_kwargs": {"reasoning_effort": "low"}});
        assert_eq!(effort(body(both)), Some(Value::from("low")));
        assert_eq!(body(serde_json::json!({})), None);
    }

    #[test]
    fn cut_truncates_ids_and_mask_together() {
        let mut row = Row::single(
            "a".into(),
            vec![1, 2, 3],
            &[4, 5, 6, 7],
            Fidelity::new(FidelityClass::Unique),
            RowMeta::default(),
        );
        assert_eq!(row.loss_mask, vec![0, 0, 0, 1, 1, 1, 1]);
        assert_eq!((row.prompt_len, row.completion_len), (3, 4));
        row.cut(5);
        assert_eq!(row.input_ids, vec![1, 2, 3, 4, 5]);
        assert_eq!(row.loss_mask, vec![0, 0, 0, 1, 1]);
        assert_eq!((row.prompt_len, row.completion_len), (3, 2));
        row.cut(2);
        assert_eq!((row.prompt_len, row.completion_len), (2, 0));
    }
}
