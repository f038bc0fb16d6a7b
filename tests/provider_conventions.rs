//! OpenRouter answers under each provider convention measured on real traffic (`usage` without
//! the end token, a generated `<think>`, spaces around special tokens, compact re-serialized
//! arguments, the provider's own tool-call id forms, whitespace stripped at the text fields'
//! boundaries), with the ids the model really
//! saw and wrote: `tests/data/provider_conventions/answers.jsonl`, made by
//! `tests/data/gen/make_provider_conventions.py` from the reference encoder (format:
//! `tests/data/README.md`).
//!
//! Each answer is served back as recorded by a stand-in for OpenRouter (picked by the request's
//! `provider.only`, its messages, tools, `chat_template_kwargs` and `max_tokens`), asked by
//! `draftgen generate --kind openrouter` with the answer's provider and limit, then `build` (no
//! class dropped, so every answer is seen). The permanent rule, asserted: **every sample classed
//! exact has exactly the true prompt and completion ids**, and every other sample says why
//! (`fidelity_reasons`). Per convention and provider the counts are printed — answers, kept
//! (build's default policy), exact, with the true ids (any class), dropped; the counts themselves are not asserted. What
//! inference (`reconstruct/infer/`) must settle is: with thinking on (17 answers a provider),
//! `build.json` adopts for each provider exactly the conventions the data's `convention` flags
//! name (and the negative ones its flags leave: `prompts_think`, `no_spaces_special_tokens`),
//! lists the form of its tool-call ids, every sample it changes names it (`provider_…`), none it
//! explains is left `inconsistent`, and no doubt a negative convention lifts stays; with
//! thinking off (2 answers a provider, below the minimum) nothing. A conversation's turns are
//! rebuilt under their provider's conventions, and an index-only id that is not the model's
//! number is not restored.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use common::run::{output, stderr, RunDir, BIN};
use draftgen::api::ServerKind;
use draftgen::build::Policies;
use draftgen::completion::Completion;
use draftgen::dataset::canonical::canonical_json;
use draftgen::dataset::{Prompt, PromptOptions};
use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::infer::{self, GroupEvidence};
use draftgen::reconstruct::{ExchangeRequest, FidelityClass, ReconstructOptions};
use serde::Deserialize;
use serde_json::{json, Value};

/// `<think>`: the last prompt token of a K2.5 render with thinking on.
const THINK: u32 = 163606;

#[derive(Deserialize)]
struct Answer {
    name: String,
    provider: String,
    convention: Convention,
    profile: String,
    model: String,
    chat_template: String,
    request: Value,
    /// The non-streamed body, or the streamed chunks.
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    chunks: Option<Vec<Value>>,
    /// The boundary where the model wrote whitespace (a whitespace variant of a scenario).
    #[serde(default)]
    whitespace: Option<String>,
    truth: Truth,
}

/// What inference must adopt for one provider's `group` of answers (one thinking and
/// streaming setting) and what it may: the conventions its flags name, exactly; of the
/// whitespace conventions, each boundary it strips where at least [`infer::MIN_ANSWERS`] answers
/// without tool calls had whitespace there (with calls, the count cannot tell that whitespace
/// from whitespace around the arguments, which any OpenRouter upstream may strip), and at most
/// the boundaries it strips (its flags', and the reasoning's end, which vLLM's parser strips for
/// every provider here: several boundaries explain the same count, so a stack stripping them
/// all may be found stripping each).
struct Expected {
    exactly: BTreeSet<String>,
    strips_required: BTreeSet<String>,
    strips_allowed: BTreeSet<String>,
}

impl Expected {
    fn of(group: &[&Answer]) -> Expected {
        let mut e = Expected {
            exactly: BTreeSet::new(),
            strips_required: BTreeSet::new(),
            strips_allowed: BTreeSet::new(),
        };
        let Some(first) = group.first() else {
            return e;
        };
        e.exactly = first
            .convention
            .inferable()
            .into_iter()
            .map(str::to_string)
            .collect();
        if first.convention.strips.is_empty() {
            return e;
        }
        e.strips_allowed.insert("strips_reasoning_end".to_string());
        for boundary in &first.convention.strips {
            let name = format!("strips_{boundary}");
            let shown = group
                .iter()
                .filter(|a| a.whitespace.as_deref() == Some(boundary.as_str()) && !a.has_calls())
                .count() as u64;
            if shown >= infer::MIN_ANSWERS {
                e.strips_required.insert(name.clone());
            }
            e.strips_allowed.insert(name);
        }
        e
    }

    /// What is wrong with `adopted` (`None`: nothing).
    fn check(&self, adopted: &BTreeSet<String>) -> Option<String> {
        let (strips, others): (BTreeSet<String>, BTreeSet<String>) = adopted
            .iter()
            .cloned()
            .partition(|n| n.starts_with("strips_"));
        let ok = others == self.exactly
            && self.strips_required.is_subset(&strips)
            && strips.is_subset(&self.strips_allowed);
        (!ok).then(|| {
            format!(
                "adopted {adopted:?}; want exactly {:?} and of the whitespace conventions {:?} ⊆ adopted ⊆ {:?}",
                self.exactly, self.strips_required, self.strips_allowed
            )
        })
    }
}

#[derive(Deserialize)]
struct Convention {
    name: String,
    think_generated: bool,
    usage_counts_end_token: bool,
    spaces_around_special_tokens: bool,
    /// `model`, `compact_ascii` or `compact`.
    arguments: String,
    /// `functions.NAME:N`, `NAME:N`, `index` or `call_random`.
    ids: String,
    /// The boundaries whose whitespace the stack strips (`reasoning_start`, `content_start`,
    /// `content_end_before_calls`, `content_end`).
    #[serde(default)]
    strips: Vec<String>,
}

impl Convention {
    /// The conventions of `reconstruct::infer` this provider's answers were made under (the
    /// data's own flags).
    fn inferable(&self) -> BTreeSet<&'static str> {
        let mut names = BTreeSet::new();
        if !self.usage_counts_end_token {
            names.insert("usage_excludes_end_token");
        }
        if self.think_generated {
            names.insert("generates_think");
        } else {
            names.insert("prompts_think");
        }
        if self.spaces_around_special_tokens {
            names.insert("spaces_special_tokens");
        } else {
            names.insert("no_spaces_special_tokens");
        }
        if self.arguments != "model" {
            names.insert("compacts_arguments");
        }
        match self.ids.as_str() {
            "NAME:N" => {
                names.insert("ids_without_prefix");
            }
            "index" => {
                names.insert("ids_index_only");
            }
            "call_random" => {
                names.insert("ids_minted");
            }
            _ => {}
        }
        names
    }
}

#[derive(Deserialize)]
struct Truth {
    prompt_ids: Vec<u32>,
    completion_ids: Vec<u32>,
}

impl Answer {
    /// What the stand-in answers it for: the provider asked for and what decides the answer.
    fn key(request: &Value) -> String {
        canonical_json(&json!({
            "provider": request.pointer("/provider/only/0"),
            "messages": request["messages"],
            "tools": request["tools"],
            "chat_template_kwargs": request.get("chat_template_kwargs"),
            "max_tokens": request.get("max_tokens"),
            "stream": request["stream"].as_bool().unwrap_or(false),
        }))
    }

    /// The answer's own `id` (each recorded answer has its own).
    fn answer_id(&self) -> &str {
        let first = match (&self.response, &self.chunks) {
            (Some(body), _) => body,
            (None, Some(chunks)) => chunks.first().expect("a chunk"),
            (None, None) => panic!("{}: neither response nor chunks", self.name),
        };
        first["id"].as_str().expect("an answer id")
    }

    fn stream(&self) -> bool {
        self.chunks.is_some()
    }

    /// A text field of the answer starts with a space (the doubt `no_spaces_special_tokens`
    /// lifts).
    fn starts_spaced(&self) -> bool {
        let spaced = |t: &str| t.starts_with(' ');
        match (&self.response, &self.chunks) {
            (Some(body), _) => ["reasoning", "content"].iter().any(|f| {
                body.pointer(&format!("/choices/0/message/{f}"))
                    .and_then(Value::as_str)
                    .is_some_and(spaced)
            }),
            (None, Some(chunks)) => ["reasoning", "content"].iter().any(|f| {
                let text: String = chunks
                    .iter()
                    .filter_map(|c| c.pointer(&format!("/choices/0/delta/{f}")))
                    .filter_map(Value::as_str)
                    .collect();
                spaced(&text)
            }),
            (None, None) => false,
        }
    }

    /// A text field as the answer sent it (a stream's deltas joined); `None` when absent or
    /// empty.
    fn field(&self, f: &str) -> Option<String> {
        let text = match (&self.response, &self.chunks) {
            (Some(body), _) => body
                .pointer(&format!("/choices/0/message/{f}"))
                .and_then(Value::as_str)
                .map(str::to_string),
            (None, Some(chunks)) => Some(
                chunks
                    .iter()
                    .filter_map(|c| c.pointer(&format!("/choices/0/delta/{f}")))
                    .filter_map(Value::as_str)
                    .collect(),
            ),
            (None, None) => None,
        };
        text.filter(|t| !t.is_empty())
    }

    /// The answer has `boundary` (`strips_reasoning_start`, …) with no whitespace there: where a
    /// stripping convention changes the reading.
    fn bare_at(&self, convention: &str) -> bool {
        let (field, start) = match convention {
            "strips_reasoning_start" => (self.field("reasoning"), true),
            "strips_reasoning_end" => (self.field("reasoning"), false),
            "strips_content_start" => (self.field("content"), true),
            "strips_content_end_before_calls" if self.has_calls() => (self.field("content"), false),
            "strips_content_end" if !self.has_calls() => (self.field("content"), false),
            _ => (None, false),
        };
        let edge = field.and_then(|t| {
            if start {
                t.chars().next()
            } else {
                t.chars().next_back()
            }
        });
        edge.is_some_and(|c| !c.is_whitespace())
    }

    /// The answer sends tool calls.
    fn has_calls(&self) -> bool {
        let calls = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|c| !c.is_empty());
        match (&self.response, &self.chunks) {
            (Some(body), _) => calls(body.pointer("/choices/0/message/tool_calls")),
            (None, Some(chunks)) => chunks
                .iter()
                .any(|c| calls(c.pointer("/choices/0/delta/tool_calls"))),
            (None, None) => false,
        }
    }

    /// The answer as OpenRouter sends it: a JSON body, or SSE events (a keep-alive comment
    /// first, as OpenRouter sends while the provider works) ending in `[DONE]`.
    fn served(&self) -> Served {
        match (&self.response, &self.chunks) {
            (Some(body), _) => Served::Body(body.clone()),
            (None, chunks) => {
                let mut sse = String::from(": OPENROUTER PROCESSING\n\n");
                for chunk in chunks.iter().flatten() {
                    sse.push_str(&format!("data: {chunk}\n\n"));
                }
                sse.push_str("data: [DONE]\n\n");
                Served::Events(sse)
            }
        }
    }

    /// The run setting a prompt cannot carry itself.
    fn thinking(&self) -> bool {
        self.request.pointer("/chat_template_kwargs/thinking") != Some(&Value::Bool(false))
    }

    fn max_tokens(&self) -> Option<u32> {
        self.request["max_tokens"]
            .as_u64()
            .map(|n| u32::try_from(n).expect("a small limit"))
    }

    /// The label of the answer's provider and convention in the printed table.
    fn group(&self) -> String {
        format!(
            "{} ({}, {})",
            self.convention.name,
            self.provider,
            if self.stream() {
                "stream"
            } else {
                "non-stream"
            }
        )
    }
}

fn answers() -> Vec<Answer> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/provider_conventions/answers.jsonl");
    let text = std::fs::read_to_string(&path).expect("answers.jsonl");
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// What the stand-in sends for one recorded answer.
#[derive(Clone)]
enum Served {
    Body(Value),
    Events(String),
}

/// The recorded answers of each request, answered in turn (one request, several recordings:
/// a sampling model answers a repeated request anew).
#[derive(Default)]
struct Recorded {
    by_key: HashMap<String, (Vec<Served>, AtomicUsize)>,
}

async fn chat(State(recorded): State<Arc<Recorded>>, Json(request): Json<Value>) -> Response {
    match recorded.by_key.get(&Answer::key(&request)) {
        Some((answers, next)) => {
            match &answers[next.fetch_add(1, Ordering::Relaxed) % answers.len()] {
                Served::Body(body) => Json(body.clone()).into_response(),
                Served::Events(sse) => {
                    ([(header::CONTENT_TYPE, "text/event-stream")], sse.clone()).into_response()
                }
            }
        }
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"code": 404, "message": "no recorded answer for this request"}})),
        )
            .into_response(),
    }
}

/// The stand-in for OpenRouter, serving `answers` as recorded.
fn serve(answers: &[&Answer]) -> String {
    let mut recorded = Recorded::default();
    for a in answers {
        recorded
            .by_key
            .entry(Answer::key(&a.request))
            .or_insert_with(|| (Vec::new(), AtomicUsize::new(0)))
            .0
            .push(a.served());
    }
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(Arc::new(recorded));
    common::servers::serve(app)
}

/// The K2.5 template the data was rendered with; draftgen's built-in stands in when the assets
/// do not hold it (as in tests/server_shapes.rs).
fn template_file(name: &str) -> Option<PathBuf> {
    let path = common::assets().join(name);
    (path.exists() || !name.ends_with("kimi-k2.5-style.jinja")).then_some(path)
}

/// `generate` + `build` of `answers` (one thinking and streaming setting); the built samples by
/// answer name, and the conventions `build.json` says were adopted, by provider.
fn run(
    answers: &[&Answer],
    thinking: bool,
    stream: bool,
) -> (HashMap<String, Value>, BTreeMap<String, BTreeSet<String>>) {
    run_editing(answers, thinking, stream, |_| Vec::new())
}

/// [`run`], with `edit` given the run's journal records (and their segment) before `build`:
/// what it returns is appended. A sample whose id no answer was served for is keyed by its id.
fn run_editing(
    answers: &[&Answer],
    thinking: bool,
    stream: bool,
    edit: impl FnOnce(&[Value]) -> Vec<Value>,
) -> (HashMap<String, Value>, BTreeMap<String, BTreeSet<String>>) {
    let dir = RunDir::new();
    let base_url = serve(answers);
    let mut prompt_of = HashMap::new();
    dir.write_prompts(answers.iter().enumerate().map(|(i, a)| {
        let mut prompt = Prompt::new(
            "provider_conventions",
            a.request["messages"].as_array().expect("messages").clone(),
            a.request["tools"].as_array().cloned(),
            Value::Null,
        );
        prompt.id = format!("answer-{i:03}");
        prompt.request_options = Some(Box::new(PromptOptions {
            provider: Some(json!({"only": [a.provider], "allow_fallbacks": false})),
            max_tokens: a.max_tokens(),
            ..PromptOptions::default()
        }));
        prompt_of.insert(a.answer_id(), i);
        serde_json::to_value(&prompt).expect("a prompt")
    }));
    let mut generate = dir.generate(&base_url);
    generate
        .args(["--kind", "openrouter", "--model", "moonshotai/kimi-k2.5"])
        .args(["--max-tokens", "4096", "--concurrency", "8"]);
    if stream {
        generate.arg("--stream");
    }
    if !thinking {
        let config = dir.join("run.toml");
        std::fs::write(
            &config,
            "[request]\nchat_template_kwargs = { thinking = false }\n",
        )
        .expect("run.toml");
        generate.arg("--config").arg(&config);
    }
    let out = output(&mut generate);
    assert!(out.status.success(), "generate: {}", stderr(&out));
    let added = edit(&dir.journal());
    if !added.is_empty() {
        let segment = dir.run().join("journal").join("999999.jsonl");
        let lines: String = added.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(&segment, lines).expect("a journal segment");
    }
    let first = answers[0];
    let built = dir.join("built");
    let mut build = std::process::Command::new(BIN);
    build
        .args(["build", "--jsonl", "--drop-class", "none"])
        .arg("--model")
        .arg(common::assets().join(&first.model))
        .args(["--profile", &first.profile])
        .arg("--run")
        .arg(dir.run())
        .arg("--out")
        .arg(&built);
    if let Some(template) = template_file(&first.chat_template) {
        build.arg("--chat-template").arg(template);
    }
    let out = output(&mut build);
    assert!(out.status.success(), "build: {}", stderr(&out));
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(built.join("build.json")).expect("build.json"),
    )
    .expect("build.json is JSON");
    let mut adopted = BTreeMap::new();
    for p in info["providers"].as_array().into_iter().flatten() {
        eprintln!(
            "thinking {thinking}, stream {stream}: {} {} answers, adopted {}",
            p["provider"], p["answers"], p["conventions"]
        );
        let names = p["conventions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["name"].as_str().expect("a convention name").to_string())
            .collect();
        let provider = p["provider"].as_str().expect("a provider").to_string();
        // The form of the ids its answers sent, as the data made them.
        let made = answers.iter().find(|a| a.provider == provider).map(|a| {
            match a.convention.ids.as_str() {
                "index" => "N",
                "call_random" => "other",
                form => form,
            }
        });
        let forms: Vec<&str> = p["call_id_forms"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(form, _)| form.as_str())
            .collect();
        assert_eq!(forms, Vec::from_iter(made), "{provider}: call_id_forms");
        // OpenRouter carries every answer's reasoning in `reasoning` (the data's answers with
        // thinking on all reason; with it off none do).
        let evaluated = p["evidence_answers"].as_u64().unwrap_or_default();
        let want = if thinking && evaluated > 0 {
            json!({ "reasoning": evaluated })
        } else {
            Value::Null
        };
        assert_eq!(p["reasoning_fields"], want, "{provider}: reasoning_fields");
        adopted.insert(provider, names);
    }
    // prompt id -> the answer that was served for it (its own `id`, from the journal).
    let mut answer_of = HashMap::new();
    for record in dir.journal() {
        if let (Some(prompt), Some(served)) =
            (record["id"].as_str(), record["response"]["id"].as_str())
        {
            if let Some(&i) = prompt_of.get(served) {
                answer_of.insert(prompt.to_string(), answers[i].name.clone());
            }
        }
    }
    let samples = common::run::jsonl(&built.join("samples.jsonl"))
        .into_iter()
        .map(|sample| {
            let prompt = sample["id"].as_str().expect("a sample id");
            let name = answer_of
                .get(prompt)
                .cloned()
                .unwrap_or_else(|| prompt.to_string());
            (name, sample)
        })
        .collect();
    (samples, adopted)
}

/// What an adopted convention must do to one sample of its provider: name it where it
/// changed the reading, and leave no answer it explains `inconsistent`; a provider with no
/// convention adopted names none.
fn inference_failures(
    a: &Answer,
    sample: &Value,
    adopted: &BTreeMap<String, BTreeSet<String>>,
    class: FidelityClass,
    reasons: &[String],
) -> Vec<String> {
    let mut failures = Vec::new();
    let adopted = adopted.get(&a.provider).cloned().unwrap_or_default();
    let named: BTreeSet<&str> = reasons
        .iter()
        .filter_map(|r| r.strip_prefix("provider_"))
        .collect();
    for name in &named {
        if !adopted.contains(*name) {
            failures.push(format!(
                "{}: names provider_{name}, which was not adopted for {}",
                a.name, a.provider
            ));
        }
    }
    let finished = sample["finish_reason"].as_str() != Some("length");
    // Each adopted convention, and whether it changes this answer's reading (the end token's
    // count only where the answer has an end token).
    let changes = |name: &str| match name {
        "usage_excludes_end_token" => finished,
        "ids_without_prefix" | "ids_index_only" | "ids_minted" | "compacts_arguments" => {
            a.has_calls()
        }
        // It lifts a doubt only where a text field begins with a space.
        "no_spaces_special_tokens" => a.starts_spaced(),
        // Only where the count is one fewer than the render (no such answer of its providers).
        "prompts_think" => false,
        name if name.starts_with("strips_") => a.bare_at(name),
        _ => true,
    };
    for name in adopted.iter().filter(|n| changes(n)) {
        if !named.contains(name.as_str()) {
            failures.push(format!(
                "{}: rebuilt without its provider's adopted {name}",
                a.name
            ));
        }
    }
    if adopted.contains("no_spaces_special_tokens")
        && reasons
            .iter()
            .any(|r| r == "upstream_may_space_special_tokens")
    {
        failures.push(format!(
            "{}: its provider's answers show no spaces around added tokens, yet the doubt stays",
            a.name
        ));
    }
    if !adopted.is_empty() && class == FidelityClass::Inconsistent {
        failures.push(format!(
            "{}: inconsistent although {} explains its provider's answers (reasons {reasons:?})",
            a.name,
            adopted.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    failures
}

/// The profile the data was rendered with.
fn profile_of(first: &Answer) -> Profile {
    Profile::load(
        &common::assets().join(&first.model),
        &LoadOptions {
            profile: Some(first.profile.clone()),
            chat_template: template_file(&first.chat_template),
        },
    )
    .expect("the Kimi K2.5 profile")
}

/// Inference on its own, no server: each provider's non-streamed thinking answers (17) as one
/// group adopt exactly the conventions the data was made under, and the first 7 of them, below
/// the minimum, adopt nothing.
#[test]
fn each_providers_answers_settle_exactly_its_conventions() {
    let answers = answers();
    let profile = profile_of(&answers[0]);
    let options = ReconstructOptions {
        kind: ServerKind::OpenRouter,
        ..ReconstructOptions::default()
    };
    let mut groups: BTreeMap<&str, Vec<&Answer>> = BTreeMap::new();
    for a in answers.iter().filter(|a| a.thinking() && !a.stream()) {
        groups.entry(&a.provider).or_default().push(a);
    }
    for (provider, group) in groups {
        let mut all = GroupEvidence::default();
        let mut few = GroupEvidence::default();
        for (i, a) in group.iter().enumerate() {
            let request: ExchangeRequest =
                serde_json::from_value(a.request.clone()).expect("a chat request");
            let completion =
                Completion::from_response(a.response.as_ref().expect("a body")).expect("an answer");
            let answer = infer::Answer {
                profile: &profile,
                request: &request,
                completion: &completion,
                options: &options,
            };
            let evidence = infer::evidence_of(&answer).expect("evidence");
            all.add(&evidence);
            if i < 7 {
                few.add(&evidence);
            }
        }
        let names = |e: &GroupEvidence| -> BTreeSet<&'static str> {
            e.adopted().iter().map(|c| c.name()).collect()
        };
        let adopted: BTreeSet<String> = names(&all).into_iter().map(str::to_string).collect();
        if let Some(wrong) = Expected::of(&group).check(&adopted) {
            panic!("{provider}: {wrong}: {:?}", all.tallies);
        }
        assert!(names(&few).is_empty(), "{provider}: {:?}", few.tallies);
    }
}

#[derive(Default)]
struct Counts {
    answers: usize,
    kept: usize,
    exact: usize,
    /// Samples of any class whose ids are the true ones.
    right: usize,
    dropped: usize,
    by_class: BTreeMap<String, usize>,
    reasons: BTreeMap<String, usize>,
}

#[test]
fn every_sample_classed_exact_has_the_true_ids_under_every_provider_convention() {
    let answers = answers();
    assert!(!answers.is_empty(), "no answers in answers.jsonl");
    // The data's prompts are draftgen's own render (the true prompt of a provider whose model
    // generates `<think>` lacks it): otherwise every comparison below is of another prompt.
    let profile = profile_of(&answers[0]);
    for a in &answers {
        let request: ExchangeRequest =
            serde_json::from_value(a.request.clone()).expect("a chat request");
        let rendered = profile.render_ids(&request.render_input()).expect("render");
        let mut want = a.truth.prompt_ids.clone();
        if a.convention.think_generated {
            want.push(THINK);
        }
        assert_eq!(
            rendered, want,
            "{}: draftgen's render is not the reference's",
            a.name
        );
    }

    let policies = Policies::default();
    let mut table: BTreeMap<String, Counts> = BTreeMap::new();
    let mut failures = Vec::new();
    for (thinking, stream) in [(true, false), (false, false), (true, true), (false, true)] {
        let group: Vec<&Answer> = answers
            .iter()
            .filter(|a| a.thinking() == thinking && a.stream() == stream)
            .collect();
        let (samples, adopted) = run(&group, thinking, stream);
        // What inference must settle, facts of the data: with thinking on, each provider has 17
        // answers (at least 11 of which each convention changes, above infer::MIN_ANSWERS: the
        // id forms change the 11 with tool calls; Fireworks and Trimmer also the whitespace
        // variants), and exactly the conventions its answers were made under are adopted
        // ([`expected`]); with thinking off, 2 answers each: below the minimum, nothing is
        // inferred.
        let mut by_provider: BTreeMap<String, Vec<&Answer>> = BTreeMap::new();
        for a in &group {
            by_provider.entry(a.provider.clone()).or_default().push(a);
        }
        assert_eq!(
            adopted.keys().collect::<Vec<_>>(),
            by_provider.keys().collect::<Vec<_>>(),
            "thinking {thinking}, stream {stream}: providers"
        );
        for (provider, answers) in &by_provider {
            let got = &adopted[provider];
            let wrong = if thinking {
                Expected::of(answers).check(got)
            } else {
                (!got.is_empty()).then(|| format!("adopted {got:?} below the minimum"))
            };
            if let Some(wrong) = wrong {
                panic!("thinking {thinking}, stream {stream}: {provider}: {wrong}");
            }
        }
        for a in group {
            let counts = table.entry(a.group()).or_default();
            counts.answers += 1;
            let Some(sample) = samples.get(&a.name) else {
                failures.push(format!("{}: no sample built (not accounted for)", a.name));
                continue;
            };
            let class_name = sample["fidelity_class"].as_str().unwrap_or_default();
            let class = FidelityClass::ALL
                .into_iter()
                .find(|c| c.name() == class_name)
                .unwrap_or_else(|| panic!("{}: unknown class {class_name:?}", a.name));
            let reasons: Vec<String> =
                serde_json::from_value(sample["fidelity_reasons"].clone()).unwrap_or_default();
            *counts.by_class.entry(class_name.to_string()).or_default() += 1;
            failures.extend(inference_failures(a, sample, &adopted, class, &reasons));
            if policies.drop_classes.contains(&class) {
                counts.dropped += 1;
            } else {
                counts.kept += 1;
            }
            let ids: Vec<u32> =
                serde_json::from_value(sample["input_ids"].clone()).expect("input_ids");
            let prompt_len = sample["prompt_len"].as_u64().expect("prompt_len") as usize;
            let (prompt, completion) = ids.split_at(prompt_len.min(ids.len()));
            let right = prompt == a.truth.prompt_ids.as_slice()
                && completion == a.truth.completion_ids.as_slice();
            counts.right += usize::from(right);
            if class.is_exact() {
                if right {
                    counts.exact += 1;
                } else {
                    failures.push(format!(
                        "{}: classed {class_name} but its ids are not the model's ({} + {} ids, true {} + {}; reasons {reasons:?})",
                        a.name,
                        prompt.len(),
                        completion.len(),
                        a.truth.prompt_ids.len(),
                        a.truth.completion_ids.len(),
                    ));
                }
            } else {
                if reasons.is_empty() {
                    failures.push(format!("{}: classed {class_name} with no reason", a.name));
                }
                for r in reasons {
                    *counts.reasons.entry(r).or_default() += 1;
                }
            }
        }
    }
    eprintln!("\n| convention (provider) | answers | kept | exact | true ids (any class) | dropped | classes | reasons of the non-exact |");
    eprintln!("|---|---|---|---|---|---|---|---|");
    for (group, c) in &table {
        eprintln!(
            "| {group} | {} | {} | {} | {} | {} | {:?} | {:?} |",
            c.answers, c.kept, c.exact, c.right, c.dropped, c.by_class, c.reasons
        );
    }
    assert!(
        failures.is_empty(),
        "{} answers broke the rule:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A conversation's turns are each rebuilt under their own provider group's conventions: two
/// DeepInfra answers (its count leaves out the end token) journaled again as the two turns of
/// one conversation, beside the provider's single-turn answers that settle its conventions,
/// build into one row that names the convention, is not `inconsistent`, and holds the last
/// turn's true ids.
#[test]
fn a_conversations_turns_are_rebuilt_under_their_providers_conventions() {
    let answers = answers();
    let group: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.thinking() && !a.stream() && a.provider == "DeepInfra")
        .collect();
    let pick = |label: &str| {
        *group
            .iter()
            .find(|a| a.name.ends_with(&format!("/{label}")))
            .expect(label)
    };
    let turns = [pick("news_call"), pick("final_answer_after_tool")];
    let served: Vec<String> = turns.iter().map(|a| a.answer_id().to_string()).collect();
    let (samples, adopted) = run_editing(&group, true, false, |journal| {
        served
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let mut record = journal
                    .iter()
                    .find(|r| r["response"]["id"].as_str() == Some(id))
                    .expect("the served answer's record")
                    .clone();
                record["id"] = Value::from(format!("conv:turn{}/{}", i + 1, served.len()));
                record
            })
            .collect()
    });
    assert!(
        adopted["DeepInfra"].contains("usage_excludes_end_token"),
        "{adopted:?}"
    );
    let row = samples.get("conv").expect("the conversation's row");
    let reasons: Vec<String> =
        serde_json::from_value(row["fidelity_reasons"].clone()).unwrap_or_default();
    assert!(
        reasons
            .iter()
            .any(|r| r == "provider_usage_excludes_end_token"),
        "{reasons:?}"
    );
    assert_ne!(row["fidelity_class"], "inconsistent", "{reasons:?}");
    let ids: Vec<u32> = serde_json::from_value(row["input_ids"].clone()).expect("input_ids");
    let last = turns[1];
    let want = [
        last.truth.prompt_ids.as_slice(),
        last.truth.completion_ids.as_slice(),
    ]
    .concat();
    assert_eq!(ids, want, "the last turn's true ids");
}

/// A conversation's turns count as their provider's answers for inference: seven finished
/// DeepInfra answers alone are below the minimum and settle nothing; two of them journaled
/// again as the two turns of a conversation (as in the test above) bring the provider's
/// evidence to nine, and its count without the end token is adopted.
#[test]
fn a_conversations_turns_are_evidence_of_their_provider() {
    let answers = answers();
    let turn_labels = ["news_call", "final_answer_after_tool"];
    let is_turn = |a: &Answer| {
        turn_labels
            .iter()
            .any(|l| a.name.ends_with(&format!("/{l}")))
    };
    let deepinfra = || {
        answers
            .iter()
            .filter(|a| a.thinking() && !a.stream() && a.provider == "DeepInfra")
    };
    let mut finished: Vec<&Answer> = deepinfra().filter(|a| is_turn(a)).collect();
    finished.extend(
        deepinfra()
            .filter(|a| !is_turn(a))
            .filter(|a| {
                a.response
                    .as_ref()
                    .and_then(|r| r.pointer("/choices/0/finish_reason"))
                    .and_then(Value::as_str)
                    != Some("length")
            })
            .take(5),
    );
    assert_eq!(finished.len(), 7);
    let (_, alone) = run(&finished, true, false);
    assert!(alone["DeepInfra"].is_empty(), "{alone:?}");
    let served: Vec<String> = finished[..2]
        .iter()
        .map(|a| a.answer_id().to_string())
        .collect();
    let (_, adopted) = run_editing(&finished, true, false, |journal| {
        served
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let mut record = journal
                    .iter()
                    .find(|r| r["response"]["id"].as_str() == Some(id))
                    .expect("the served answer's record")
                    .clone();
                record["id"] = Value::from(format!("conv:turn{}/{}", i + 1, served.len()));
                record
            })
            .collect()
    });
    assert!(
        adopted["DeepInfra"].contains("usage_excludes_end_token"),
        "{adopted:?}"
    );
}

/// Ids numbered per answer where the conversation has earlier calls (`"0"` for the model's
/// `functions.calculate_area:1`) are not the model's N: such an answer contradicts
/// `ids_index_only`, and rebuilt under it the convention is not applied (the ids are renumbered
/// and the sample says so), while DeepInfra's own `"1"` is restored exactly.
#[test]
fn an_index_that_is_not_the_models_number_contradicts_ids_index_only() {
    let answers = answers();
    let profile = profile_of(&answers[0]);
    let options = ReconstructOptions {
        kind: ServerKind::OpenRouter,
        ..ReconstructOptions::default()
    };
    let a = answers
        .iter()
        .find(|a| a.name == "usage_excludes_end_token/DeepInfra/nonstream/second_call_after_tool")
        .expect("the answer");
    let request: ExchangeRequest =
        serde_json::from_value(a.request.clone()).expect("a chat request");
    let sent = Completion::from_response(a.response.as_ref().expect("a body")).expect("an answer");
    assert_eq!(sent.tool_calls[0].id.as_deref(), Some("1"));
    let index = infer::CONVENTIONS
        .iter()
        .position(|c| c.name() == "ids_index_only")
        .expect("ids_index_only");
    let conventions = [
        infer::convention("usage_excludes_end_token").expect("a convention"),
        infer::convention("ids_index_only").expect("a convention"),
    ];
    let read = |completion: &Completion| {
        let answer = infer::Answer {
            profile: &profile,
            request: &request,
            completion,
            options: &options,
        };
        let evidence = infer::evidence_of(&answer).expect("evidence")[index];
        let (rebuilt, applied) = infer::rebuild(&answer, &conventions).expect("a rebuild");
        (evidence, rebuilt, applied)
    };
    let (evidence, rebuilt, applied) = read(&sent);
    assert_eq!(evidence, infer::Evidence::Explains);
    assert!(applied.contains(&"ids_index_only"), "{applied:?}");
    assert_eq!(rebuilt.completion_ids, a.truth.completion_ids);

    let mut per_answer = sent.clone();
    per_answer.tool_calls[0].id = Some("0".to_string());
    let (evidence, rebuilt, applied) = read(&per_answer);
    assert_eq!(evidence, infer::Evidence::Contradicts);
    assert!(!applied.contains(&"ids_index_only"), "{applied:?}");
    assert!(!rebuilt.fidelity.class.is_exact(), "{:?}", rebuilt.fidelity);
}
