//! `import`: earlier local generations that already hold the model's output ids, recorded in a
//! run directory as finished work with server ids — so `generate` skips those prompts and `build`
//! takes their ids as they are.
//!
//! Accepted lines (JSONL, one generation per line; the shape is recognised per line):
//! - SGLang (`Engine.generate` / `/generate` output): `output_ids` (+ `prompt_token_ids` or
//!   `input_ids` when present), `text`, `meta_info.finish_reason.type`;
//! - vLLM offline `RequestOutput` dumps: `prompt_token_ids`, `outputs[0].token_ids`,
//!   `outputs[0].text`, `outputs[0].finish_reason`; vLLM server chat completions with
//!   `return_token_ids` (`choices[0].token_ids`, `prompt_token_ids`);
//! - any line with `token_ids` / `output_token_ids` (+ `prompt_token_ids`);
//! - speculators' regeneration rows `{id, input_ids, loss_mask, …}`: the prompt is the ids before
//!   the mask's 1s, the completion the 1s (one span at the end; anything else is refused).
//!
//! A line without prompt ids gets the prompt rendered by the model's template from the prompt's
//! messages (`--prompts`), as the serving stack would have. Lines map to prompts by index (line
//! `i` is prompt `i`) or by an id field (`--by id`); without `--prompts` a line's `id` is the
//! prompt id. A record's origin is `imported` (its endpoint label `import:FILE`), which is how `build`
//! knows its ids are final.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use super::{for_each_prompt_line, BuildError};
use crate::dataset::Prompt;
use crate::journal::record::Origin;
use crate::journal::record::{IMPORTED_RUN_ENDPOINT, IMPORT_ENDPOINT_PREFIX};
use crate::journal::{Manifest, Record, RunDir, Status};
use crate::model::{Profile, RenderInput};

/// How import lines find their prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MatchBy {
    /// Line `i` (counting non-blank lines from 0, per file) is prompt `i` of `--prompts`.
    Index,
    /// The line's id field holds the prompt id.
    Id,
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportSummary {
    pub imported: u64,
    /// Lines whose prompt had already succeeded in the run.
    pub already_finished: u64,
    /// Lines that could not be imported, `FILE:LINE: why`.
    pub errors: Vec<String>,
}

/// One generation as read from a line.
struct Generation {
    id: Option<String>,
    prompt_ids: Option<Vec<u32>>,
    completion_ids: Vec<u32>,
    text: Option<String>,
    finish_reason: Option<String>,
}

/// Import `files` into the run at `run`.
pub fn import(
    profile: &Profile,
    files: &[&Path],
    run: &Path,
    prompts: Option<&Path>,
    by: MatchBy,
    id_field: &str,
) -> Result<ImportSummary, BuildError> {
    let prompts = match prompts {
        Some(path) => Some(read_prompts(path)?),
        None => None,
    };
    let run_dir = RunDir::new(run);
    let manifest = match run_dir
        .read_manifest()
        .map_err(|e| BuildError::Writer(e.to_string()))?
    {
        Some(existing) => existing,
        None => Manifest::new(
            "",
            vec![IMPORTED_RUN_ENDPOINT.to_string()],
            Value::Null,
            json!({"imported": true}),
            "",
        ),
    };
    let (mut journal, mut state) = RunDir::create_or_open(run, &manifest, false)
        .map_err(|e| BuildError::Writer(e.to_string()))?;
    let mut summary = ImportSummary::default();
    for file in files {
        let label = format!("{IMPORT_ENDPOINT_PREFIX}{}", file.display());
        let reader = File::open(file).map_err(|e| BuildError::io(file, e))?;
        let mut index = 0usize;
        for (number, line) in BufReader::new(reader).lines().enumerate() {
            let at = format!("{}:{}", file.display(), number + 1);
            let line = line.map_err(|e| BuildError::io(file, e))?;
            if line.trim().is_empty() {
                continue;
            }
            let this = index;
            index += 1;
            let record =
                match record_of(profile, &line, this, prompts.as_ref(), by, id_field, &label) {
                    Ok(record) => record,
                    Err(e) => {
                        summary.errors.push(format!("{at}: {e}"));
                        continue;
                    }
                };
            if state.get(&record.id).is_some_and(|s| s.succeeded()) {
                summary.already_finished += 1;
                continue;
            }
            let record = Record {
                attempt: state.next_attempt(&record.id),
                ..record
            };
            journal
                .append(&record)
                .map_err(|e| BuildError::Writer(e.to_string()))?;
            state.record(&record);
            summary.imported += 1;
        }
    }
    journal
        .close()
        .map_err(|e| BuildError::Writer(e.to_string()))?;
    Ok(summary)
}

/// Prompts in file order, and by id.
struct Prompts {
    list: Vec<Prompt>,
    by_id: HashMap<String, usize>,
}

fn read_prompts(path: &Path) -> Result<Prompts, BuildError> {
    let mut list = Vec::new();
    let mut by_id = HashMap::new();
    let expected = "a prompt line written by `draftgen prepare`";
    for_each_prompt_line(path, expected, |prompt: Prompt| {
        by_id.entry(prompt.id.clone()).or_insert(list.len());
        list.push(prompt);
    })?;
    Ok(Prompts { list, by_id })
}

fn record_of(
    profile: &Profile,
    line: &str,
    index: usize,
    prompts: Option<&Prompts>,
    by: MatchBy,
    id_field: &str,
    endpoint: &str,
) -> Result<Record, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let mut generation = generation_of(&value, id_field)?;
    let prompt = match prompts {
        Some(prompts) => Some(prompts.find(&generation, index, by, id_field)?),
        None => None,
    };
    let id = match (prompt, &generation.id) {
        (Some(p), _) => p.id.clone(),
        (None, Some(id)) => id.clone(),
        (None, None) => {
            return Err(format!(
                "no `{id_field}` field; pass --prompts to map lines to prompt ids"
            ))
        }
    };
    let prompt_ids = match (generation.prompt_ids.take(), prompt) {
        (Some(ids), _) => ids,
        (None, Some(p)) => profile
            .render_ids(&RenderInput {
                messages: &p.messages,
                tools: p.tools.as_deref().filter(|t| !t.is_empty()),
                add_generation_prompt: true,
                chat_template_kwargs: None,
            })
            .map_err(|e| format!("rendering the prompt: {e}"))?,
        (None, None) => {
            return Err(
                "no prompt ids (`prompt_token_ids`) and no --prompts to render the prompt from"
                    .into(),
            )
        }
    };
    Ok(imported_record(
        id,
        prompt,
        &generation,
        prompt_ids,
        endpoint,
    ))
}

impl Prompts {
    /// The prompt line `index` (`generation`) answered.
    fn find(
        &self,
        generation: &Generation,
        index: usize,
        by: MatchBy,
        id_field: &str,
    ) -> Result<&Prompt, String> {
        match by {
            MatchBy::Index => self.list.get(index).ok_or_else(|| {
                format!(
                    "line {} has no prompt: --prompts has only {} (matching by index)",
                    index + 1,
                    self.list.len()
                )
            }),
            MatchBy::Id => {
                let id = generation
                    .id
                    .as_deref()
                    .ok_or_else(|| format!("no `{id_field}` field to match a prompt by"))?;
                self.by_id
                    .get(id)
                    .map(|&i| &self.list[i])
                    .ok_or_else(|| format!("id {id:?} is not a prompt of --prompts"))
            }
        }
    }
}

/// The journal record of one imported generation: a success with the ids as a server with
/// `return_token_ids` would have answered them.
fn imported_record(
    id: String,
    prompt: Option<&Prompt>,
    generation: &Generation,
    prompt_ids: Vec<u32>,
    endpoint: &str,
) -> Record {
    let mut request = serde_json::Map::new();
    if let Some(p) = prompt {
        request.insert("messages".into(), json!(p.messages));
        if let Some(tools) = p.tools.as_ref().filter(|t| !t.is_empty()) {
            request.insert("tools".into(), json!(tools));
        }
    }
    let response = json!({
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": generation.text},
            "finish_reason": generation.finish_reason,
            "token_ids": generation.completion_ids,
        }],
        "prompt_token_ids": prompt_ids,
        "usage": {
            "prompt_tokens": prompt_ids.len(),
            "completion_tokens": generation.completion_ids.len(),
        },
    });
    Record {
        id,
        attempt: 1,
        status: Status::Success,
        error_class: None,
        error: None,
        endpoint: endpoint.to_string(),
        http_status: None,
        not_before_ms: None,
        provider: None,
        cost_usd: None,
        prompt_tokens: Some(prompt_ids.len() as u64),
        completion_tokens: Some(generation.completion_ids.len() as u64),
        started_at: chrono::Utc::now().to_rfc3339(),
        latency_ms: 0,
        first_byte_ms: None,
        source: prompt.map(|p| p.source.clone()),
        origin: Origin::Imported,
        usage_flag: None,
        request: Value::Object(request),
        response: Some(response),
    }
}

fn ids(value: Option<&Value>) -> Result<Option<Vec<u32>>, String> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let list = value.as_array().ok_or("token ids are not an array")?;
    list.iter()
        .map(|v| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("{v} is not a token id"))
        })
        .collect::<Result<Vec<u32>, String>>()
        .map(Some)
}

fn string(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_string)
}

/// Recognise the line's shape.
fn generation_of(v: &Value, id_field: &str) -> Result<Generation, String> {
    let id = v
        .get(id_field)
        .or_else(|| v.pointer("/meta_info/id"))
        .and_then(|id| match id {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
    // speculators: input_ids + loss_mask.
    if let (Some(input), Some(mask)) = (v.get("input_ids"), v.get("loss_mask")) {
        let input = ids(Some(input))?.unwrap_or_default();
        let mask: Vec<u64> = mask
            .as_array()
            .ok_or("loss_mask is not an array")?
            .iter()
            .map(|m| m.as_u64().ok_or("loss_mask holds a non-integer"))
            .collect::<Result<_, _>>()?;
        if mask.len() != input.len() {
            return Err(format!(
                "{} input_ids but {} loss_mask entries",
                input.len(),
                mask.len()
            ));
        }
        let start = mask.iter().position(|&m| m == 1).unwrap_or(mask.len());
        if mask[start..].iter().any(|&m| m != 1) || mask[..start].iter().any(|&m| m != 0) {
            return Err("loss_mask is not 0…0 1…1 (one completion at the end); multi-span rows cannot be imported as one generation".into());
        }
        return Ok(Generation {
            id,
            prompt_ids: Some(input[..start].to_vec()),
            completion_ids: input[start..].to_vec(),
            text: None,
            finish_reason: string(v.pointer("/metadata/finish_reason")),
        });
    }
    // vLLM RequestOutput: outputs[0].
    if let Some(output) = v.pointer("/outputs/0") {
        return Ok(Generation {
            id,
            prompt_ids: ids(v.get("prompt_token_ids"))?,
            completion_ids: ids(output.get("token_ids"))?.ok_or("outputs[0] has no token_ids")?,
            text: string(output.get("text")),
            finish_reason: string(output.get("finish_reason")),
        });
    }
    // vLLM server chat completion with return_token_ids.
    if let Some(choice) = v.pointer("/choices/0") {
        return Ok(Generation {
            id,
            prompt_ids: ids(v.get("prompt_token_ids").or(choice.get("prompt_token_ids")))?,
            completion_ids: ids(choice.get("token_ids"))?
                .ok_or("choices[0] has no token_ids (was return_token_ids set?)")?,
            text: string(choice.pointer("/message/content")),
            finish_reason: string(choice.get("finish_reason")),
        });
    }
    // SGLang and anything flat.
    let completion_ids = ids(v.get("output_ids"))?
        .or(ids(v.get("token_ids"))?)
        .or(ids(v.get("output_token_ids"))?)
        .ok_or("no output ids (`output_ids`, `token_ids`, `output_token_ids`, `outputs[0].token_ids`, `choices[0].token_ids` or `input_ids`+`loss_mask`)")?;
    let finish_reason = v
        .pointer("/meta_info/finish_reason/type")
        .or_else(|| v.pointer("/meta_info/finish_reason"))
        .or_else(|| v.get("finish_reason"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Generation {
        id,
        prompt_ids: ids(v.get("prompt_token_ids"))?.or(ids(v.get("input_ids"))?),
        completion_ids,
        text: string(v.get("text")),
        finish_reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let g = generation_of(
            &json!({"text": "hi", "output_ids": [5, 6], "meta_info": {"id": "r1", "finish_reason": {"type": "stop"}}}),
            "id",
        )
        .expect("sglang");
        assert_eq!(
            (g.id.as_deref(), g.completion_ids.as_slice()),
            (Some("r1"), &[5, 6][..])
        );
        assert_eq!(g.finish_reason.as_deref(), Some("stop"));
        let g = generation_of(
            &json!({"prompt_token_ids": [1], "outputs": [{"token_ids": [2, 3], "finish_reason": "length"}]}),
            "id",
        )
        .expect("vllm");
        assert_eq!(g.prompt_ids, Some(vec![1]));
        let g = generation_of(
            &json!({"id": "x", "input_ids": [1, 2, 3], "loss_mask": [0, 1, 1]}),
            "id",
        )
        .expect("speculators");
        assert_eq!(
            (g.prompt_ids, g.completion_ids),
            (Some(vec![1]), vec![2, 3])
        );
        assert!(generation_of(
            &json!({"input_ids": [1, 2, 3], "loss_mask": [1, 0, 1]}),
            "id"
        )
        .is_err());
        assert!(generation_of(&json!({"text": "no ids"}), "id").is_err());
    }
}
