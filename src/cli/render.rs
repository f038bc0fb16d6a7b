//! `draftgen render`: conversations → the model's prompt text and ids, one `{"text", "ids"}`
//! line per input line (`{"text"}` with `--text-only`).
//!
//! A public contract (docs/FORMATS.md): input lines are `{"messages", "tools"?,
//! "add_generation_prompt"?, "chat_template_kwargs"?}`; output order is input order. Bad lines
//! are handled as `reconstruct` handles them: each gets an `error: FILE:LINE: …` on stderr and an
//! `{"error"}` line in its place, the other lines are rendered, and the exit code is 2. A line
//! whose tools the template ignores (DeepSeek-V3's declares none) gets a warning on stderr and a
//! `warnings` list in its output line, so tools are never dropped silently.

use rayon::prelude::*;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::Utf8Error;

use super::io::Output;
use super::model_args::ModelArgs;
use super::UsageError;
use crate::json::Json;
use crate::model::{JsonRenderInput, Profile, Tools};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// JSONL file of `{"messages", "tools"?, "add_generation_prompt"?, "chat_template_kwargs"?}`.
    #[arg(long, value_name = "F.jsonl")]
    input: PathBuf,
    /// Write here instead of stdout.
    #[arg(long, value_name = "F")]
    out: Option<PathBuf>,
    /// Write `{"text"}` lines only: the prompt texts, not tokenized.
    #[arg(long)]
    text_only: bool,
}

/// One output line, serialized straight from the render (no JSON tree in between).
#[derive(serde::Serialize)]
struct Rendered<'a> {
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ids: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

/// The output line in place of a bad input line.
#[derive(serde::Serialize)]
struct ErrorLine<'a> {
    error: &'a str,
}

/// A rendered line: text, ids, warnings.
type Render = (String, Vec<u32>, Vec<String>);

/// One input line, its strings borrowed from the line's text where they have no escapes.
#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    messages: Vec<Json<'a>>,
    /// Kept as text: parsed only when its declaration is not cached (see `model::Tools`).
    #[serde(default, borrow)]
    tools: Option<&'a RawValue>,
    #[serde(default)]
    add_generation_prompt: bool,
    #[serde(default)]
    chat_template_kwargs: Option<Map<String, Value>>,
}

const EXPECTED: &str = r#"{"messages": [...], "tools"?: [...], "add_generation_prompt"?: bool, "chat_template_kwargs"?: {...}}"#;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profile = args.model.load()?;
    // DeepSeek-V3's template has no tools in it at all: a request's tools never reach the prompt.
    let ignores_tools = profile.family.spec().template_ignores_tools;
    let mut input = Chunks::open(&args.input)?;
    let mut out = Output::open(args.out.as_deref())?;
    let mut bad_input = false;
    while let Some(lines) = input.next_chunk()? {
        let chunk: Vec<Result<Render, String>> = lines
            .par_iter()
            .map(|&(line_no, line)| render_line(&args, &profile, ignores_tools, line_no, line))
            .collect();
        // A line that is not a conversation, or that the template refuses
        // (`raise_exception`), is bad input: said where, and the rest goes on.
        for (result, &(line_no, _)) in chunk.iter().zip(&lines) {
            match result {
                Ok((text, ids, warnings)) => {
                    for warning in warnings {
                        eprintln!("warning: {}:{line_no}: {warning}", args.input.display());
                    }
                    let ids = (!args.text_only).then_some(ids.as_slice());
                    out.line(&Rendered {
                        text,
                        ids,
                        warnings,
                    })?;
                }
                Err(error) => {
                    bad_input = true;
                    eprintln!("error: {error}");
                    out.line(&ErrorLine { error })?;
                }
            }
        }
    }
    out.finish()?;
    Ok(if bad_input {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// One input line rendered, or the error line's message (`FILE:LINE: …`).
fn render_line(
    args: &Args,
    profile: &Profile,
    ignores_tools: bool,
    line_no: usize,
    line: Result<&str, Utf8Error>,
) -> Result<Render, String> {
    let at = || format!("{}:{line_no}", args.input.display());
    let line = line.map_err(|e| format!("{}: {e}", at()))?;
    let line: Line =
        serde_json::from_str(line).map_err(|e| format!("{}: {e} (expected {EXPECTED})", at()))?;
    let tools = line.tools.map(RawValue::get);
    if tools.is_some_and(|tools| !tools.starts_with('[')) {
        return Err(format!(
            "{}: tools is not a list (expected {EXPECTED})",
            at()
        ));
    }
    let mut warnings = Vec::new();
    let has_tools = tools.is_some_and(|t| t[1..].trim_start() != "]");
    if ignores_tools && has_tools {
        warnings.push(format!(
            "the {} chat template ignores `tools`: the rendered prompt does not declare them",
            profile.name
        ));
    }
    let input = JsonRenderInput {
        messages: &line.messages,
        tools: tools.map(Tools::Text),
        add_generation_prompt: line.add_generation_prompt,
        chat_template_kwargs: line.chat_template_kwargs.as_ref(),
    };
    let mut text = profile
        .render_json(&input)
        .map_err(|e| format!("{}: {e}", at()))?;
    let ids = if args.text_only {
        Vec::new()
    } else {
        profile.tokenizer.encode(&text)
    };
    text.shrink_to_fit();
    Ok((text, ids, warnings))
}

/// Numbered input lines: the text, or why it is not UTF-8.
type Lines<'a> = Vec<(usize, Result<&'a str, Utf8Error>)>;

/// The input a few MiB of whole lines at a time, read into one reused buffer. Lines are not read
/// through `io::read_jsonl_strict`: each is parsed where it is rendered, borrowing from this
/// buffer, so neither the line texts nor their trees pile up in memory (every page the output
/// does not need is one page fault less; they cost several µs each on the benchmark VM), and a
/// separate checking pass would scan every line twice.
struct Chunks<'p> {
    path: &'p Path,
    reader: BufReader<File>,
    buffer: Vec<u8>,
    /// The number of the buffer's first line.
    first_line: usize,
    /// Lines are added to a chunk until it holds this many bytes.
    chunk_bytes: usize,
}

impl<'p> Chunks<'p> {
    fn open(path: &'p Path) -> anyhow::Result<Self> {
        Self::with_chunk_bytes(path, 4 << 20)
    }

    fn with_chunk_bytes(path: &'p Path, chunk_bytes: usize) -> anyhow::Result<Self> {
        let file = File::open(path)
            .map_err(|e| UsageError(format!("{}: cannot open: {e}", path.display())))?;
        Ok(Self {
            path,
            reader: BufReader::new(file),
            buffer: Vec::new(),
            first_line: 1,
            chunk_bytes,
        })
    }

    /// The next chunk's non-blank lines with their 1-based numbers (`\n` or `\r\n` ends a
    /// line); `None` at the end of the input.
    fn next_chunk(&mut self) -> anyhow::Result<Option<Lines<'_>>> {
        self.first_line += memchr::memchr_iter(b'\n', &self.buffer).count();
        self.buffer.clear();
        while self.buffer.len() < self.chunk_bytes {
            let read = self
                .reader
                .read_until(b'\n', &mut self.buffer)
                .map_err(|e| {
                    let line = self.first_line + memchr::memchr_iter(b'\n', &self.buffer).count();
                    UsageError(format!("{}:{line}: cannot read: {e}", self.path.display()))
                })?;
            if read == 0 {
                break;
            }
        }
        if self.buffer.is_empty() {
            return Ok(None);
        }
        let body = self.buffer.strip_suffix(b"\n").unwrap_or(&self.buffer);
        let first_line = self.first_line;
        Ok(Some(
            body.split(|&b| b == b'\n')
                .enumerate()
                .map(|(index, line)| {
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    (first_line + index, std::str::from_utf8(line))
                })
                .filter(|(_, line)| !line.as_ref().is_ok_and(|l| l.trim().is_empty()))
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_number_lines_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        std::fs::write(&path, b"a\r\n\nbb\n  \nccc\n\xff\nd").unwrap();
        let mut chunks = Chunks::with_chunk_bytes(&path, 4).unwrap();
        let mut seen = Vec::new();
        while let Some(lines) = chunks.next_chunk().unwrap() {
            for (number, line) in lines {
                seen.push((number, line.map(str::to_string).map_err(|_| ())));
            }
        }
        let want: Vec<(usize, Result<String, ()>)> = vec![
            (1, Ok("a".into())),
            (3, Ok("bb".into())),
            (5, Ok("ccc".into())),
            (6, Err(())),
            (7, Ok("d".into())),
        ];
        assert_eq!(seen, want);
    }
}
