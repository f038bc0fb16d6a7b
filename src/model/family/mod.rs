//! One file per model family: its template quirks, pre-processing and native output syntax.
//!
//! A family is data ([`FamilySpec`]: markers, built-in template, thinking switch, the syntax
//! servers parse, what history keeps, the native twins of its known chat templates, its
//! K2-Vendor-Verifier threshold) plus the few functions that differ ([`FamilyRules`]: detection,
//! the tokenizer's pre-processing of the template context, the native completion text of a turn,
//! native tool-call ids), both in the family's file, which also defines its [`Family`] handle
//! (`Family::QWEN3`, …) and lists it in its `FAMILIES`. [`Profile`] and the rest of the crate ask
//! the family through these and never branch on which family it is.
//!
//! **How a family is found.** Every `*.rs` file in this directory but `mod.rs` is a family file,
//! and nothing else is: `build.rs` declares each as a module of this one and collects their
//! `FAMILIES` into `FILES`, from which [`Family::all`] is made (ordered by
//! [`FamilySpec::detect_order`]). So adding a family is adding its file (spec + `FamilyRules`
//! impl + `Family` const + `FAMILIES` + tests); no list anywhere else names it, and a family's
//! helper modules live in a folder of its name (`kimi/`). Why a build script and not a
//! distributed slice (`linkme`) or a proc macro that globs the directory (`automod`): a slice
//! still needs the `mod` line in this file, and a globbing macro is not re-run when a file is
//! added (cargo does not know it read the directory), while a build script says
//! `rerun-if-changed` on the directory. The cost: rustfmt follows only `mod` items it can see,
//! so `cargo fmt` skips the family files; `.ci/run` formats them explicitly
//! (`rustfmt --check src/model/family/*.rs`), and so should you after editing one.
//!
//! [`Profile`]: crate::model::Profile

include!(concat!(env!("OUT_DIR"), "/families.rs"));

use serde_json::{Map, Value};
use std::sync::LazyLock;

use super::native::NativeTwin;
use super::ModelError;
use crate::completion::ToolCall;

/// What the model wrote in one assistant turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    pub reasoning: Option<String>,
    /// Whether the model closed its reasoning (`</think>`) before going on.
    pub reasoning_closed: bool,
    pub content: String,
    /// Tool calls with their ids already in the family's native form.
    pub tool_calls: Vec<ToolCall>,
    /// Whether the turn ended with the end-of-turn token (false for `finish_reason: length`).
    pub end_of_turn: bool,
}

/// What a family's token stream looks like, and what else is known about the family.
#[derive(Debug, Clone, Copy)]
pub struct FamilySpec {
    /// The profile name (`--profile`).
    pub name: &'static str,
    /// When detection asks this family, lower first (ties: file name, then the order of the
    /// file's `FAMILIES`), which is also the order `--profile` lists the names in. A family whose
    /// tokens include another's markers must ask before it: Kimi's tokenizer also has ChatML's
    /// `<|im_start|>` that Qwen3 looks for.
    pub detect_order: u8,
    /// The template used when the model directory has none.
    pub builtin_template: Option<&'static str>,
    /// The token that ends an assistant turn; `None`: the tokenizer's `eos_token`.
    pub end_of_turn: Option<&'static str>,
    /// The marker that closes reasoning, for thinking families.
    pub reasoning_close: Option<&'static str>,
    /// The marker that opens the native tool-call syntax.
    pub tool_section_begin: Option<&'static str>,
    /// The `chat_template_kwargs` switch that turns thinking on or off, and its default;
    /// `None`: the family never thinks, or always does ([`FamilySpec::always_thinks`]).
    pub thinking_switch: Option<(&'static str, bool)>,
    /// The model thinks whatever the request says (K2-Thinking).
    pub always_thinks: bool,
    /// The output syntax a server's reasoning and tool parsers read; `None`: none known (the
    /// server returns the text as `content`).
    pub syntax: Option<Syntax>,
    /// The serving detokenizer can put a space around every added token (the slow,
    /// tiktoken-based Kimi tokenizer under vLLM's `spaces_between_special_tokens`); fast
    /// tokenizers never do.
    pub detokenizer_spaces: bool,
    /// History keeps `content: null` on an assistant message with tool calls, as transformers 4
    /// did (DeepSeek-V3's template renders the calls only then; transformers 5 drops the key).
    pub keeps_null_content_with_tool_calls: bool,
    /// The template never renders a request's `tools` (DeepSeek-V3's has none).
    pub template_ignores_tools: bool,
    /// Hand-written twins of the family's known chat templates (`model/native.rs`), each used
    /// only for the template source it was written from.
    pub native_twins: &'static [NativeTwin],
    /// The ToolCall-Trigger Similarity (F1) a provider is held to (`verify/audit/k2vv.rs`).
    pub k2vv: K2vvThreshold,
    /// Where in the tool syntax a `length` cut can fall; `None`: no tool syntax known.
    pub tool_grammar: Option<ToolGrammar>,
    /// Markers only this family writes: another family's answer holding them did not come from
    /// this model.
    pub distinctive_markers: &'static [&'static str],
}

/// A family's tool-call syntax: its markers, and where a `length` cut can fall in it (the
/// reconstruction's cut tails, the audit's markers out of place).
#[derive(Debug, Clone, Copy)]
pub struct ToolGrammar {
    /// What opens the tool section.
    pub section_begin: &'static str,
    /// What the grammar puts right after the opener (`""`: nothing forced).
    pub first_call: &'static str,
    /// What closes one call.
    pub call_end: &'static str,
    /// What closes a call's arguments before `call_end` (`""`: nothing).
    pub arguments_end: &'static str,
    /// What closes the section (`""`: it has no close of its own).
    pub section_end: &'static str,
    /// What may follow a call's close.
    pub next_call: &'static [&'static str],
    /// Every tool-call marker (the audit looks for them where text should be).
    pub markers: &'static [&'static str],
    /// The markers that open a call.
    pub openers: &'static [&'static str],
}

impl ToolGrammar {
    /// The marker that opens one call: the one the grammar forces after the section's opener,
    /// or the opener itself where it forces nothing (hermes: each call is its own section).
    pub fn call_begin(&self) -> &'static str {
        if self.first_call.is_empty() {
            self.section_begin
        } else {
            self.first_call
        }
    }
}

/// A family's K2-Vendor-Verifier F1 threshold and where it comes from (the report says which).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct K2vvThreshold {
    pub tool_call_f1_min: f64,
    /// Which published threshold it is, e.g. "K2-0905 at temperature 0.6 (…)".
    pub basis: &'static str,
}

impl K2vvThreshold {
    /// For a thinking family without a published threshold of its own: K2-Thinking's.
    pub const BORROWED_FROM_K2_THINKING: K2vvThreshold = K2vvThreshold {
        tool_call_f1_min: 0.73,
        basis: "K2-Thinking's (none published for this family)",
    };
    /// For any other family without a published threshold of its own: K2-0905's.
    pub const BORROWED_FROM_K2_0905: K2vvThreshold = K2vvThreshold {
        tool_call_f1_min: 0.80,
        basis: "K2-0905's (none published for this family)",
    };
}

/// The model family's output syntax, which decides which parsers a server runs on it: the key
/// `server::forward` dispatches on and `server::parser_traits` maps to what those parsers do
/// (nothing else asks which syntax it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// Kimi K2/K2.5: `kimi_k2` reasoning and tool parsers; call ids are in the token stream.
    #[default]
    Kimi,
    /// Qwen3: `qwen3` reasoning + `hermes` tool parser; arguments re-serialized, ids random.
    Hermes,
    /// DeepSeek-V3: `deepseek_v3` tool parser, no reasoning; ids random.
    DeepseekV3,
    /// DeepSeek-V3.1: `deepseek_v31` tool parser, `deepseek_v3` reasoning parser; ids random.
    DeepseekV31,
    /// DeepSeek-V3.2: `deepseek_v32` tool parser (DSML calls, values converted by their `string`
    /// attribute and the schema), `deepseek_v3` reasoning parser; ids random.
    DeepseekV32,
    /// Qwen3-Coder: `qwen3_coder` tool parser (XML calls, values converted by the schema), no
    /// reasoning; ids random.
    Qwen3Coder,
    /// gpt-oss: the harmony parser on the token stream (channels, `to=functions.NAME`); ids random.
    Harmony,
    /// Llama 3.1/3.3: vLLM's `llama3_json` tool parser, no reasoning; arguments re-serialized,
    /// ids random.
    Llama3Json,
}

impl Syntax {
    /// The syntax `family` writes, if servers know one ([`FamilySpec::syntax`]).
    pub fn of(family: Family) -> Option<Syntax> {
        family.spec().syntax
    }

    /// Whether the model writes call ids into its token stream.
    pub fn ids_in_stream(self) -> bool {
        self == Syntax::Kimi
    }

    /// The name of vLLM's tool parser for it (`--tool-call-parser`), which warnings name.
    pub fn tool_parser(self) -> &'static str {
        match self {
            Syntax::Kimi => "kimi_k2",
            Syntax::Hermes => "hermes",
            Syntax::DeepseekV3 => "deepseek_v3",
            Syntax::DeepseekV31 => "deepseek_v31",
            Syntax::DeepseekV32 => "deepseek_v32",
            Syntax::Qwen3Coder => "qwen3_coder",
            Syntax::Harmony => "openai",
            Syntax::Llama3Json => "llama3_json",
        }
    }
}

/// What one family does differently, as functions (the data is its [`FamilySpec`]). Each
/// family's file implements it; the defaults are what a family without native rules does.
pub trait FamilyRules: Sync {
    fn spec(&self) -> &'static FamilySpec;

    /// Whether the model directory is this family's, from `config.json`'s `model_type`, the
    /// text of `tokenizer_config.json` and the template source (each may be empty).
    fn detect(&self, _model_type: &str, _tokenizer_config: &str, _template: &str) -> bool {
        false
    }

    /// The family tokenizer's own pre-processing before the template runs: puts `tools` (and
    /// whatever else the family's `apply_chat_template` adds) into the template's context.
    fn prepare_context(&self, tools: Option<&[Value]>, context: &mut Map<String, Value>) {
        context.insert(
            "tools".into(),
            tools.map_or(Value::Null, |t| Value::Array(t.to_vec())),
        );
    }

    /// The exact text the model generated for `turn` after the generation prompt, written in the
    /// family's native syntax; `None`: isolate it from the template's render instead (see
    /// [`Profile::completion_text`](crate::model::Profile::completion_text)).
    fn completion_text(
        &self,
        _thinking: bool,
        _turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        None
    }

    /// Whether a request with these `chat_template_kwargs` has the model think, where the
    /// family's template reads more than [`FamilySpec::thinking_switch`]; `None`: the switch
    /// decides.
    fn thinking(&self, _kwargs: Option<&Map<String, Value>>) -> Option<bool> {
        None
    }

    /// Whether `model_id` names one of this family's models, as OpenRouter and Hugging Face
    /// write ids (`deepseek/deepseek-chat-v3.1`, `deepseek-ai/DeepSeek-V3.1`).
    fn detect_model_id(&self, _model_id: &str) -> bool {
        false
    }

    /// The native id of the conversation's n-th tool call; `None`: the token stream has no ids.
    fn native_tool_call_id(&self, _name: &str, _n: usize) -> Option<String> {
        None
    }

    /// Whether a request's JSON-string tool-call arguments are parsed into objects before the
    /// template runs, as vLLM does before it renders (`_postprocess_messages` in
    /// `vllm/renderers/chat_utils/chat_message.py`): for templates that read them as objects
    /// (`arguments | items`) or write objects anew (`arguments | tojson`).
    fn template_reads_argument_objects(&self) -> bool {
        false
    }

    /// A token besides [`FamilySpec::end_of_turn`] that ends a turn the model finished (the
    /// server stops on it too, and shows neither).
    fn other_end_of_turn(&self) -> Option<&'static str> {
        None
    }

    /// Other texts the model may have written for the turn written as `text` (its completion
    /// text) that the servers' parser reads alike: the reconstruction tries each too, and the
    /// count decides between them or leaves the sample ambiguous.
    fn call_spellings(&self, _text: &str) -> Vec<String> {
        Vec::new()
    }

    /// Whether `id` has the family's native form (families without ids accept any).
    fn is_native_tool_call_id(&self, _id: &str) -> bool {
        true
    }

    /// The tokens besides the end-of-turn token that end an earlier assistant turn where the
    /// template writes it into history (gpt-oss: `<|end|>` after an answer, `<|call|>` after a
    /// call; its end-of-turn `<|return|>` only ends the last turn).
    fn history_turn_ends(&self) -> &'static [&'static str] {
        &[]
    }

    /// Why the serving stack `stack` (as far as the rebuild knows it) may have rendered this
    /// request's prompt otherwise than the template, in a way its token count cannot show;
    /// `None`: the template's render is that stack's (or every stack's).
    fn prompt_doubt(
        &self,
        _messages: &[Value],
        _tools: Option<&[Value]>,
        _stack: PromptStack,
    ) -> Option<&'static str> {
        None
    }
}

/// Which serving stack rendered a request's prompt, as far as the rebuild knows it: a family's
/// [`FamilyRules::prompt_doubt`] doubts only where the stack could be one that renders otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptStack {
    /// vLLM: declared, or the shape a provider's answers show.
    Vllm,
    /// SGLang: declared, or shown.
    Sglang,
    /// llama.cpp, which renders the chat template it was given.
    LlamaCpp,
    /// Not known: an undeclared server, or a router whose upstream stacks vary (OpenRouter).
    Unknown,
}

/// A model family: a handle on its rules, compared and hashed by its name. Each family's file
/// defines its own (`Family::QWEN3`, `Family::KIMI_K25`, …); [`Family::all`] lists them.
#[derive(Clone, Copy)]
pub struct Family(&'static dyn FamilyRules);

impl PartialEq for Family {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Family {}

impl std::hash::Hash for Family {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Family({})", self.name())
    }
}

/// Every registered family, in detection order.
static ALL: LazyLock<Vec<Family>> = LazyLock::new(|| {
    let mut all: Vec<Family> = FILES
        .iter()
        .flat_map(|(_, families)| families.iter().copied())
        .collect();
    // Stable: ties keep the file order and each file's own order.
    all.sort_by_key(|f| f.spec().detect_order);
    all
});

impl Family {
    /// The handle on `rules` (what a family's file writes for its `Family` const).
    pub const fn new(rules: &'static dyn FamilyRules) -> Family {
        Family(rules)
    }

    /// Every family draftgen knows, in the order detection asks them.
    pub fn all() -> &'static [Family] {
        &ALL
    }

    /// The family's rules.
    pub fn rules(self) -> &'static dyn FamilyRules {
        self.0
    }

    pub fn spec(self) -> &'static FamilySpec {
        self.rules().spec()
    }

    /// The syntax servers parse in this family's output ([`FamilySpec::syntax`]).
    pub fn syntax(self) -> Option<Syntax> {
        self.spec().syntax
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The family named `name` (`kimi-k2.5`, `qwen3`, …).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().iter().copied().find(|f| f.name() == name)
    }

    /// The names `--profile` accepts, for error messages.
    pub fn names() -> String {
        let names: Vec<&str> = Self::all().iter().map(|f| f.name()).collect();
        names.join(", ")
    }

    /// The family whose rules recognize `model_id` ([`FamilyRules::detect_model_id`]), first in
    /// detection order; `None`: no family claims it.
    pub fn from_model_id(model_id: &str) -> Option<Self> {
        Self::all()
            .iter()
            .copied()
            .find(|f| f.rules().detect_model_id(model_id))
    }

    /// Guess the family from `config.json` and `tokenizer_config.json` (either may be absent)
    /// and the template text that will be used: the first family in [`Family::all`] whose
    /// rules recognize them, else [`Family::GENERIC`].
    pub fn detect(
        config: Option<&Value>,
        tokenizer_config: Option<&Value>,
        template: Option<&str>,
    ) -> Self {
        let model_type = config
            .and_then(|c| c.get("model_type"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let tokenizer_text = tokenizer_config.map(Value::to_string).unwrap_or_default();
        let template = template.unwrap_or_default();
        Self::all()
            .iter()
            .copied()
            .find(|f| f.rules().detect(model_type, &tokenizer_text, template))
            .unwrap_or(Family::GENERIC)
    }

    /// What the family writes before a call's name, learned from its own writer (a turn of one
    /// call and nothing else): Kimi's section and call markers, harmony's
    /// `<|channel|>commentary to=functions.`, Llama's `{"name": "`. A call left in a server's
    /// text starts so. `None` where the family's writer does not write turns.
    pub fn call_opener(self) -> Option<String> {
        const NAME: &str = "draftgen_probe_tool";
        let turn = AssistantTurn {
            tool_calls: vec![ToolCall {
                id: self.rules().native_tool_call_id(NAME, 0),
                name: NAME.to_string(),
                arguments: crate::completion::Arguments::Object(Value::Object(Map::new())),
            }],
            ..AssistantTurn::default()
        };
        let text = self.rules().completion_text(false, &turn)?.ok()?;
        let opener = text[..text.find(NAME)?].trim();
        (!opener.is_empty()).then(|| opener.to_string())
    }

    /// Whether this request has the model think, from `chat_template_kwargs`.
    pub fn thinking_enabled(self, kwargs: Option<&Map<String, Value>>) -> bool {
        let spec = self.spec();
        if spec.always_thinks {
            return true;
        }
        if let Some(thinking) = self.rules().thinking(kwargs) {
            return thinking;
        }
        match spec.thinking_switch {
            Some((key, default)) => match kwargs.and_then(|k| k.get(key)) {
                // The templates test `is false`: only a literal `false` switches it off.
                Some(Value::Bool(false)) => false,
                Some(Value::Bool(true)) => true,
                _ => default,
            },
            None => false,
        }
    }
}

/// For the family files' tests: `family` claims each id of `ids` ([`Family::from_model_id`]),
/// and none of `others`.
#[cfg(test)]
fn assert_model_ids(family: Family, ids: &[&str], others: &[&str]) {
    for id in ids {
        assert_eq!(Family::from_model_id(id), Some(family), "{id}");
    }
    for id in others {
        assert_ne!(Family::from_model_id(id), Some(family), "{id}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::native::NativeTemplate;
    use serde_json::json;

    #[test]
    fn builtin_templates_are_known() {
        for family in [Family::KIMI_K2, Family::KIMI_K2_THINKING, Family::KIMI_K25] {
            let source = family.spec().builtin_template.unwrap();
            let native = NativeTemplate::select(source, family.spec().native_twins)
                .unwrap_or_else(|| panic!("{}: built-in template without its twin", family.name()));
            assert!(family.spec().native_twins.contains(native.twin()));
        }
        // Another family's context: the template path.
        let k25 = Family::KIMI_K25.spec().builtin_template.unwrap();
        let k2 = Family::KIMI_K2.spec().native_twins;
        assert!(NativeTemplate::select(k25, k2).is_none());
        // One byte more: the template path.
        let k25_twins = Family::KIMI_K25.spec().native_twins;
        assert!(NativeTemplate::select(&format!("{k25} "), k25_twins).is_none());
    }

    #[test]
    fn every_family_is_found_by_its_name_and_owns_its_spec() {
        for &family in Family::all() {
            assert_eq!(Family::from_name(family.name()), Some(family));
            assert!(std::ptr::eq(family.spec(), family.rules().spec()));
            assert_eq!(Syntax::of(family), family.spec().syntax);
        }
    }

    /// How a family is found: every `*.rs` here but `mod.rs` is a family file (build.rs
    /// declares it and collects its `FAMILIES`), each defines at least one family, and
    /// [`Family::all`] is all of them, once each, in detection order with `generic` last.
    #[test]
    fn every_file_here_is_a_registered_family() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model/family");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "rs"))
            .map(|path| path.file_name().unwrap().to_str().unwrap().to_string())
            .filter(|name| name != "mod.rs")
            .collect();
        on_disk.sort();
        let registered: Vec<&str> = FILES.iter().map(|(file, _)| *file).collect();
        assert_eq!(registered, on_disk, "family files vs the registry");
        for (file, families) in FILES {
            assert!(!families.is_empty(), "{file}: FAMILIES is empty");
        }

        let all = Family::all();
        let listed: usize = FILES.iter().map(|(_, families)| families.len()).sum();
        assert_eq!(all.len(), listed);
        let names: std::collections::HashSet<&str> = all.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), all.len(), "two families share a name");
        assert!(all
            .windows(2)
            .all(|w| w[0].spec().detect_order <= w[1].spec().detect_order));
        assert_eq!(all.last(), Some(&Family::GENERIC));
        assert!(!Family::GENERIC.rules().detect("", "", ""));
        for family in all {
            for twin in family.spec().native_twins {
                assert_eq!(twin.sha256.len(), 64, "{}: {}", family.name(), twin.name);
            }
        }
    }

    #[test]
    fn detection_goes_through_the_families_in_order() {
        let detect = |model_type: &str, tokenizer: &str, template: &str| {
            Family::detect(
                Some(&json!({ "model_type": model_type })),
                Some(&json!({ "added": tokenizer })),
                Some(template),
            )
        };
        assert_eq!(detect("kimi_k25", "", ""), Family::KIMI_K25);
        assert_eq!(detect("kimi_k2", "", "<think>"), Family::KIMI_K2_THINKING);
        assert_eq!(detect("", "<|im_middle|>", ""), Family::KIMI_K2);
        // Kimi before Qwen3: a Kimi tokenizer with ChatML-looking text is still Kimi.
        assert_eq!(
            detect("", "<|im_middle|><|im_start|>", "<think>"),
            Family::KIMI_K2_THINKING
        );
        assert_eq!(detect("qwen3", "<|im_start|>", "<think>"), Family::QWEN3);
        assert_eq!(
            detect("deepseek_v3", "<｜begin▁of▁sentence｜>", ""),
            Family::DEEPSEEK_V3
        );
        let v31 = Family::DEEPSEEK_V31.spec().builtin_template.unwrap();
        assert_eq!(
            detect("deepseek_v3", "<｜begin▁of▁sentence｜>", v31),
            Family::DEEPSEEK_V31
        );
        assert_eq!(detect("llama", "", "{{ messages }}"), Family::GENERIC);
    }

    #[test]
    fn thinking_follows_each_familys_switch() {
        let off = json!({"thinking": false, "enable_thinking": false});
        let off = off.as_object();
        for (family, default, switched_off) in [
            (Family::KIMI_K2, false, false),
            (Family::KIMI_K2_THINKING, true, true),
            (Family::KIMI_K25, true, false),
            (Family::QWEN3, true, false),
            (Family::DEEPSEEK_V3, false, false),
            (Family::DEEPSEEK_V31, false, false),
            (Family::GENERIC, false, false),
        ] {
            assert_eq!(family.thinking_enabled(None), default, "{family:?}");
            assert_eq!(family.thinking_enabled(off), switched_off, "{family:?}");
        }
    }
}
