//! [`PromptList`]: the prompts of a run, kept compact from the moment they are read.
//!
//! A run holds its pending prompts from start to end, so each is kept as what a request needs:
//! the id, and the messages and tools as their serialized JSON (one allocation each), not a
//! `Prompt` with `Value` trees and metadata. [`PromptList::read_jsonl`] builds the list
//! one line at a time, so a large prompts file is never held parsed in full (50,000 prompts: about
//! 10 MB instead of 50).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::value::RawValue;

use crate::api::json_limits;
use crate::dataset::{DatasetError, Prompt};
use sha2::{Digest, Sha256};

use crate::journal::{PromptsFile, SkippedLine};

/// One prompt as the engine keeps it.
#[derive(Debug)]
pub(crate) struct CompactPrompt {
    pub id: Box<str>,
    /// The prompt's dataset, journaled with every attempt (`Record::source`).
    pub source: Box<str>,
    pub messages: Box<RawValue>,
    /// `None` for no tools (or an empty list).
    pub tools: Option<Box<RawValue>>,
    /// The messages with the dataset's own system text (`Prompt::system_with_tools`), sent
    /// instead of `messages` when tools are not sent as a parameter.
    pub messages_with_system_tools: Option<Box<RawValue>>,
    /// The prompt's own request options (`Prompt::request_options`).
    pub options: Option<Box<serde_json::Map<String, serde_json::Value>>>,
}

impl CompactPrompt {
    /// `prompt`'s request-relevant parts and its source; its metadata is dropped here. The JSON is
    /// serde_json's serialization of the messages and tools, so request bodies are byte-identical
    /// to serializing [`crate::api::build_body`].
    fn new(prompt: Prompt) -> serde_json::Result<Self> {
        let messages_with_system_tools = match &prompt.system_with_tools {
            Some(_) => Some(serde_json::value::to_raw_value(
                &prompt.messages_to_send(false),
            )?),
            None => None,
        };
        let options = prompt
            .request_options
            .as_ref()
            .map(|o| Box::new(o.fields()))
            .filter(|o| !o.is_empty());
        let tools = match prompt.tools.filter(|t| !t.is_empty()) {
            Some(tools) => Some(serde_json::value::to_raw_value(&tools)?),
            None => None,
        };
        Ok(CompactPrompt {
            messages: serde_json::value::to_raw_value(&prompt.messages)?,
            tools,
            messages_with_system_tools,
            options,
            id: prompt.id.into_boxed_str(),
            source: prompt.source.into_boxed_str(),
        })
    }

    /// The messages to send through an endpoint that sends tools as a parameter or not.
    pub fn messages_for(&self, tools_as_parameter: bool) -> &RawValue {
        match (&self.messages_with_system_tools, tools_as_parameter) {
            (Some(messages), false) => messages,
            _ => &self.messages,
        }
    }

    /// Same as [`prompt_tokens_estimate`](super::budget::prompt_tokens_estimate) of the prompt:
    /// that counts the serialized messages and tools, which is what is held here.
    pub fn prompt_tokens(&self) -> u64 {
        let chars = self.messages.get().len() + self.tools.as_ref().map_or(0, |t| t.get().len());
        (chars as u64).div_ceil(4)
    }
}

/// The prompts of a run, in input order (duplicates are dropped by the engine).
#[derive(Debug, Default)]
pub struct PromptList {
    pub(crate) items: Vec<CompactPrompt>,
    /// Lines of the file read that are not prompts (skipped; the run reports them).
    pub(crate) skipped: Vec<SkippedLine>,
    /// The file the prompts were read from (recorded in the run's manifest).
    pub(crate) file: Option<PromptsFile>,
}

impl PromptList {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add one prompt (compacted at once).
    pub fn push(&mut self, prompt: Prompt) -> serde_json::Result<()> {
        self.items.push(CompactPrompt::new(prompt)?);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Lines that were skipped because they are not prompts, each naming file:line and why.
    pub fn skipped_lines(&self) -> &[SkippedLine] {
        &self.skipped
    }

    /// Read a `prompts.jsonl` written by `prepare`, one line at a time; blank lines are skipped.
    /// A line that is not a prompt is set aside in [`PromptList::skipped_lines`] and reading goes
    /// on (one bad line must not keep the other prompts from running); only an unreadable file is
    /// an error.
    pub fn read_jsonl(path: impl AsRef<Path>) -> Result<PromptList, DatasetError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| DatasetError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut list = PromptList::new();
        let mut hasher = Sha256::new();
        let mut reader = BufReader::new(file);
        let mut line = String::new();
        let mut line_no = 0u64;
        loop {
            line.clear();
            line_no += 1;
            let bad = |message: String| DatasetError::PromptsFile {
                path: path.to_path_buf(),
                line: line_no,
                message,
            };
            if reader
                .read_line(&mut line)
                .map_err(|e| bad(e.to_string()))?
                == 0
            {
                break;
            }
            hasher.update(line.as_bytes());
            if line.trim().is_empty() {
                continue;
            }
            let pushed = fits_a_record(&line).and_then(|()| {
                serde_json::from_str::<Prompt>(&line)
                    .and_then(|p| list.push(p))
                    .map_err(|e| e.to_string())
            });
            if let Err(reason) = pushed {
                list.skipped.push(SkippedLine {
                    file: path.display().to_string(),
                    line: line_no,
                    reason,
                });
            }
        }
        list.file = Some(PromptsFile {
            path: std::fs::canonicalize(path)
                .unwrap_or_else(|_| path.to_path_buf())
                .display()
                .to_string(),
            sha256: hex::encode(hasher.finalize()),
        });
        Ok(list)
    }

    /// [`PromptList::read_jsonl`] that fails on the first line that is not a prompt (`--strict`).
    pub fn read_jsonl_strict(path: impl AsRef<Path>) -> Result<PromptList, DatasetError> {
        let path = path.as_ref();
        let list = PromptList::read_jsonl(path)?;
        match list.skipped.first() {
            Some(first) => Err(DatasetError::PromptsFile {
                path: path.to_path_buf(),
                line: first.line,
                message: first.reason.clone(),
            }),
            None => Ok(list),
        }
    }
}

impl TryFrom<Vec<Prompt>> for PromptList {
    type Error = serde_json::Error;

    fn try_from(prompts: Vec<Prompt>) -> serde_json::Result<Self> {
        let mut list = PromptList::new();
        list.items.reserve(prompts.len());
        for prompt in prompts {
            list.push(prompt)?;
        }
        Ok(list)
    }
}

/// A prompt whose request a journal record can hold: the body sits one level down in its record,
/// so a prompt nested as deep as the readers' limit would journal a line no reader parses.
fn fits_a_record(line: &str) -> Result<(), String> {
    match json_limits::check(line, usize::MAX) {
        Err(json_limits::Refused::TooDeep) => Err(format!(
            "nests deeper than {} levels: its journal record could not be read back",
            json_limits::MAX_ANSWER_DEPTH
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_too_deep_for_its_journal_record_is_a_named_skip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("prompts.jsonl");
        let deep = format!("{}1{}", "[".repeat(124), "]".repeat(124));
        let line = format!(
            r#"{{"id": "d", "source": "s", "messages": [{{"role": "user", "content": "hi", "x": {deep}}}]}}"#
        );
        std::fs::write(&path, format!("{line}\n")).expect("write");
        let list = PromptList::read_jsonl(&path).expect("read");
        assert_eq!(list.len(), 0);
        assert_eq!(list.skipped_lines().len(), 1);
        assert!(list.skipped_lines()[0].reason.contains("nests deeper"));
    }

    #[test]
    fn reads_line_by_line_and_names_a_bad_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("prompts.jsonl");
        let prompt = |id: &str| {
            format!(
                r#"{{"id": "{id}", "source": "s", "messages": [{{"role": "user", "content": "hi"}}], "tools": []}}"#
            )
        };
        std::fs::write(&path, format!("{}\n\n{}\n", prompt("a"), prompt("b"))).expect("write");
        let list = PromptList::read_jsonl(&path).expect("read");
        assert_eq!(list.len(), 2);
        assert_eq!(&*list.items[1].id, "b");
        assert_eq!(
            list.items[0].messages.get(),
            r#"[{"role":"user","content":"hi"}]"#
        );
        assert!(
            list.items[0].tools.is_none(),
            "an empty tool list is no tools"
        );

        std::fs::write(
            &path,
            format!(
                "{}\n{{\"id\": 3}}\n{}\nnot json\n",
                prompt("a"),
                prompt("b")
            ),
        )
        .expect("write");
        let list = PromptList::read_jsonl(&path).expect("read");
        assert_eq!(list.len(), 2, "the good lines around the bad ones are kept");
        let skipped: Vec<String> = list.skipped_lines().iter().map(|s| s.to_string()).collect();
        assert_eq!(skipped.len(), 2);
        assert!(
            skipped[0].contains("prompts.jsonl:2: not a prompt"),
            "{skipped:?}"
        );
        assert!(skipped[1].contains("prompts.jsonl:4: "), "{skipped:?}");
        let err = PromptList::read_jsonl_strict(&path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("prompts.jsonl:2:"), "{err}");
    }
}
