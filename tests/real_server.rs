//! Against a real server's own token ids: llama.cpp `llama-server` serving SmolLM2-135M-Instruct,
//! recorded by `tests/data/gen/real_llama_cpp.py` (requests sent by `draftgen generate --kind
//! llamacpp`). The expected ids are the server's: the prompt as its `/apply-template` +
//! `/tokenize` gave it, the completion as `__verbose.tokens` (every sampled id) of the
//! non-streaming run. llama.cpp sends no ids when streaming; the streaming run used the same seed,
//! so wherever it sampled the same text its answer (assembled from chunks by draftgen) is checked
//! against the non-streaming ids.
//!
//! A reply rebuilt from text alone can differ from what the model sampled in exactly two ways,
//! both documented in tests/data/README.md: the model sampled a non-canonical BPE split
//! of the same bytes, or `max_tokens` cut a character in half (its partial bytes never reach the
//! text). Every other difference is a failure. Where the server sends its ids, draftgen must use
//! them and say that the text disagreed.

mod common;

use std::path::Path;

use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Exchange {
    id: String,
    stream: bool,
    server_prompt_text: String,
    server_prompt_ids: Vec<u32>,
    request: ExchangeRequest,
    response: Value,
}

fn exchanges() -> Vec<Exchange> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/real_server/llama_cpp_smollm2.jsonl");
    let text = std::fs::read_to_string(&path).expect("recorded exchanges");
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 1))
        })
        .collect()
}

fn smollm2() -> Profile {
    let root = common::assets();
    Profile::load(&root.join("smollm2-135m-instruct"), &LoadOptions::default())
        .expect("SmolLM2 profile")
}

fn server_completion_ids(response: &Value) -> Option<Vec<u32>> {
    let ids = response["__verbose"]["tokens"].as_array()?;
    let ids: Vec<u32> = ids
        .iter()
        .map(|id| id.as_u64().expect("token id") as u32)
        .collect();
    (!ids.is_empty()).then_some(ids)
}

fn content(response: &Value) -> Option<&str> {
    response["choices"][0]["message"]["content"].as_str()
}

/// The response as a server without `return_tokens` would have sent it.
fn text_only(response: &Value) -> Value {
    let mut response = response.clone();
    if let Some(body) = response.as_object_mut() {
        body.remove("__verbose");
    }
    response
}

#[test]
fn prompts_render_to_the_servers_own_ids() {
    let profile = smollm2();
    let exchanges = exchanges();
    assert!(exchanges.len() >= 40, "too few recorded exchanges");
    for ex in &exchanges {
        let input = ex.request.render_input();
        let text = profile.render(&input).expect("render");
        assert_eq!(
            text, ex.server_prompt_text,
            "{} (stream={}): rendered prompt text",
            ex.id, ex.stream
        );
        let ids = profile.render_ids(&input).expect("render ids");
        assert_eq!(ids, ex.server_prompt_ids, "{}: prompt ids", ex.id);
        let counted = ex.response["usage"]["prompt_tokens"].as_u64();
        assert_eq!(
            counted,
            Some(ids.len() as u64),
            "{}: usage.prompt_tokens",
            ex.id
        );
    }
}

#[test]
fn completions_rebuilt_from_text_match_the_sampled_ids() {
    let profile = smollm2();
    let options = ReconstructOptions::default();
    let exchanges = exchanges();
    let (mut exact, mut non_canonical, mut cut_character) = (0, 0, 0);
    let mut unpaired_streams = 0;
    let mut failures = Vec::new();
    for ex in &exchanges {
        // The sampled ids: this answer's own, or for a streamed answer those of the same prompt's
        // non-streamed answer when both runs sampled the same text.
        let sampled = if ex.stream {
            assert_eq!(
                server_completion_ids(&ex.response),
                None,
                "{}: streamed answers carry no ids",
                ex.id
            );
            let twin = exchanges
                .iter()
                .find(|other| !other.stream && other.id == ex.id)
                .expect("the non-streamed answer to the same prompt");
            if content(&twin.response) != content(&ex.response) {
                unpaired_streams += 1;
                continue;
            }
            server_completion_ids(&twin.response).expect("__verbose.tokens")
        } else {
            server_completion_ids(&ex.response).expect("__verbose.tokens")
        };
        assert_eq!(
            ex.response["usage"]["completion_tokens"].as_u64(),
            Some(sampled.len() as u64),
            "{}: __verbose.tokens is every sampled id",
            ex.id
        );
        let rebuilt = reconstruct(&profile, &ex.request, &text_only(&ex.response), &options)
            .expect("reconstruct from text");
        assert_eq!(rebuilt.prompt_ids, ex.server_prompt_ids, "{}", ex.id);

        // With the server's ids in the response, they are what the sample gets, and a sample
        // whose text disagreed with them says so.
        if !ex.stream {
            let with_ids = reconstruct(&profile, &ex.request, &ex.response, &options)
                .expect("reconstruct with server ids");
            assert_eq!(with_ids.completion_ids, sampled, "{}", ex.id);
            let warned = with_ids
                .warnings
                .iter()
                .any(|w| w.contains("server token ids differ"));
            assert_eq!(
                warned,
                rebuilt.completion_ids != sampled,
                "{}: {:?}",
                ex.id,
                with_ids.warnings
            );
        }
        if rebuilt.completion_ids == sampled {
            exact += 1;
            continue;
        }
        let sampled_bytes = profile.tokenizer.decode_bytes(&sampled).expect("decode");
        let rebuilt_bytes = profile
            .tokenizer
            .decode_bytes(&rebuilt.completion_ids)
            .expect("decode");
        let finish = ex.response["choices"][0]["finish_reason"].as_str();
        if sampled_bytes == rebuilt_bytes {
            non_canonical += 1;
        } else if finish == Some("length")
            && sampled_bytes.starts_with(&rebuilt_bytes)
            && std::str::from_utf8(&sampled_bytes).is_err()
        {
            cut_character += 1;
        } else {
            failures.push(format!(
                "{} (stream={}): rebuilt {:?}\n  sampled {:?}",
                ex.id,
                ex.stream,
                String::from_utf8_lossy(&rebuilt_bytes),
                String::from_utf8_lossy(&sampled_bytes)
            ));
        }
    }
    eprintln!(
        "exact {exact}, non-canonical split {non_canonical}, character cut by max_tokens \
         {cut_character}, streamed answers that sampled other text {unpaired_streams}"
    );
    assert!(
        unpaired_streams * 2 <= exchanges.len() / 2,
        "most streamed answers must be checkable: {unpaired_streams} sampled other text"
    );
    assert!(
        failures.is_empty(),
        "real divergences:\n{}",
        failures.join("\n")
    );
    assert!(
        exact * 10 >= (exact + non_canonical + cut_character) * 8,
        "fewer than 80% exact: {exact} exact, {non_canonical} non-canonical, {cut_character} cut"
    );
}
