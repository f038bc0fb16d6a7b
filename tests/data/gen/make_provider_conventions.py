"""Write tests/data/provider_conventions/answers.jsonl: OpenRouter answers under each provider
convention measured on real traffic (docs FACTS §C2), every one with its true ids.

The model's side is known exactly: realistic Kimi K2.5 text (reasoning, content, a native
`<|tool_calls_section_begin|>…` section) written below per scenario, tokenized by the reference
encoder (`reference.kimi_encode`: tiktoken with the K2.5 ranks); prompts are real glaive
function-calling prompts (LLaMA-Factory's `glaive_toolcall_en_demo.json`, Apache-2.0, from the
test datasets) rendered as K2.5's own `apply_chat_template` renders them (make_server_corpus.py's
`kimi_render_k25`: TypeScript tool declaration, `templates/kimi-k2.5-style.jinja`). Each
scenario is then answered by every provider below, streamed and not, through one upstream stack
model — vLLM 0.33.0's Kimi answer (FACTS §B6) — and OpenRouter's wrapping, with that provider's
convention applied:

| provider | convention | what differs from the baseline |
|---|---|---|
| Fireworks | baseline | nothing: ids `functions.NAME:N`, the model's arguments, `usage` counts `<\\|im_end\\|>` |
| Moonshot AI | ids_without_prefix | ids `NAME:N` |
| DeepInfra | usage_excludes_end_token | `completion_tokens` = true − 1; ids `"0"`, `"1"` (the index N of the model's id) |
| SiliconFlow | usage_excludes_end_token | `completion_tokens` = true − 1 |
| AtlasCloud | think_generated | the prompt ends before `<think>`, the model generates it: completion + 1, prompt − 1; ids `NAME:N` |
| Chutes | spaces_around_special_tokens | text detokenized with vLLM's `spaces_between_special_tokens` (below) |
| Groq | compact_arguments | arguments `json.dumps(json.loads(a), separators=(",", ":"))` (ASCII-escaped) |
| Together | compact_arguments | the same with `ensure_ascii=False`; ids `call_<24 random alnum>` |
| Trimmer | strips_whitespace | not measured: the reasoning's and the content's leading whitespace and the content's trailing whitespace stripped |

Each thinking scenario also has variants with whitespace the model wrote at one boundary (before
the reasoning, before the content, after the content before the calls: `whitespace_variants`),
answered by Fireworks (which keeps it, as vLLM's view does) and Trimmer (which strips it); each
line's `whitespace` names the boundary.

Each line's `convention` spells these out as flags, so a test can tell what inference should
find; `truth` holds the ids the model saw (`prompt_ids`) and produced (`completion_ids`). What
the measurements did not show is not invented: AtlasCloud gets only thinking answers (its
generated `<think>` was measured there), DeepInfra's odd count for two calls is left out, and
`usage.prompt_tokens` is the true prompt's length (real providers differ from the render by
−100..+40 on tool prompts; such noise is not modelled here). Which JSON encoder Groq and Together
use is not measured: the two spellings above (escaped and not) are both re-serializations. The
measured index-only ids were of answers without earlier calls, where the call's place in the
answer and the N of the model's `functions.NAME:N` are the same number; for the answers after an
earlier call here, DeepInfra sends N (the model's), the reading draftgen's `ids_index_only`
restores (an answer numbered otherwise contradicts it).

How the text is made from the ids (vLLM 0.33.0, Kimi's slow `TikTokenTokenizer`):
- `detokenize`: vLLM's `_convert_tokens_to_string_with_added_encoders` — runs of ordinary tokens
  are joined and decoded as UTF-8 (`errors="replace"`), every added token (tokenizer_config's
  `added_tokens_decoder`) is its own piece, and the pieces are joined with `" "` when
  `spaces_between_special_tokens` is on, `""` otherwise. The incremental detokenizer starts from
  the prompt's last tokens, so the completion's text is the text of (prompt tail + completion)
  minus the tail's text: after an added token (`<think>`, `</think>`, `<|im_middle|>`) the
  completion starts with a space. The stop token `<|im_end|>` is not detokenized.
- `vllm_view`: the kimi_k2 reasoning parser ends the reasoning at `</think>` or at the section
  opener (a leading `<think>` removed), trailing whitespace stripped; the kimi_k2 tool parser
  takes the content before the opener (`null` when empty or whitespace-only with calls) and each
  call's id and arguments, whitespace-stripped; `finish_reason` `tool_calls` / `stop` /
  `length`; `completion_tokens` counts every generated token, `<|im_end|>` included. Streamed,
  the arguments keep their whitespace (`" {…} "` with spaces) and empty content is `""`.
The script asserts `vllm_view` gives exactly the message vLLM 0.33.0's own code gave for every
applicable Kimi fixture in `tests/data/server_shapes/kimi_k25.jsonl` (non-streamed, and streamed
as a client assembles the chunks; both `spaces_between_special_tokens` settings: 502 fixtures),
so these answers are the server's, not a guess. OpenRouter then streams deltas of a few words
(`reasoning` with `reasoning_details`, `content`, each call's id, type and name first, argument
pieces after), a chunk with `finish_reason`, and `usage` in the last chunk.

Run (deterministic: fixed texts, seeds and clock; same library versions give a byte-identical file):

    DRAFTGEN_ASSETS=/path/to/shared/assets DRAFTGEN_DATASETS=/path/to/datasets \\
        python3 tests/data/gen/make_provider_conventions.py

Needs the libraries of tests/data/parity/VERSIONS.txt (tiktoken, transformers, jinja2, regex).
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(HERE)]

from make_server_corpus import (  # noqa: E402
    ARG_B, CALL_B, CALL_E, IM_END, K25_TEMPLATE, SEC_B, SEC_E, journal_view, kimi_render_k25,
)
from reference import kimi_added_tokens_decoder, kimi_encode, kimi_encoding  # noqa: E402

OUT = REPO / "tests" / "data" / "provider_conventions" / "answers.jsonl"
SHAPES = REPO / "tests" / "data" / "server_shapes" / "kimi_k25.jsonl"
THINK, THINK_END = "<think>", "</think>"
MODEL = "moonshotai/kimi-k2.5"
DATED_MODEL = "moonshotai/kimi-k2.5-0127"
CREATED = 1767225600
MAX_TOKENS = 4096   # the client's limit on answers that finish below it


def datasets_dir() -> Path:
    env = os.environ.get("DRAFTGEN_DATASETS")
    for candidate in ([Path(env)] if env else []) + [
            Path.home() / ".cache" / "draftgen-test-assets" / "datasets", REPO.parent / "shared" / "datasets"]:
        if (candidate / "glaive_toolcall_en_demo.json").is_file():
            return candidate
    raise SystemExit("glaive_toolcall_en_demo.json not found: set DRAFTGEN_DATASETS")


# ---------------------------------------------------------------------------------------------
# Prompts: real glaive conversations (by index in glaive_toolcall_en_demo.json)
# ---------------------------------------------------------------------------------------------

def glaive_prompt(rows: list, index: int, turns: int) -> tuple[list, list]:
    """The first `turns` entries of conversation `index` as OpenAI messages, and its tools.
    A `function_call` entry becomes an assistant tool call with the id Kimi's template writes
    (`functions.NAME:N`, counted over the conversation), an `observation` its tool result."""
    row = rows[index]
    tools = [{"type": "function", "function": t} for t in json.loads(row["tools"])]
    messages, calls = [], 0
    for entry in row["conversations"][:turns]:
        role, value = entry["from"], entry["value"]
        if role == "human":
            messages.append({"role": "user", "content": value})
        elif role == "gpt":
            messages.append({"role": "assistant", "content": value})
        elif role == "function_call":
            call = json.loads(value)
            cid = f"functions.{call['name']}:{calls}"
            calls += 1
            messages.append({"role": "assistant", "content": "", "tool_calls": [{
                "id": cid, "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)}}]})
        elif role == "observation":
            messages.append({"role": "tool", "tool_call_id": messages[-1]["tool_calls"][0]["id"], "content": value})
        else:
            raise ValueError(role)
    return messages, tools


# ---------------------------------------------------------------------------------------------
# Scenarios: what the model wrote
# ---------------------------------------------------------------------------------------------

@dataclass
class Scenario:
    label: str
    glaive: int                 # conversation index
    turns: int                  # entries of it that form the prompt
    reasoning: str = ""
    content: str = ""
    calls: list = field(default_factory=list)   # [(name, arguments text as the model wrote it)]
    thinking: bool = True
    cut_tokens: int | None = None   # max_tokens that cuts the answer (None: finished)
    whitespace: str | None = None   # the boundary where this variant's model wrote whitespace

    def calls_history(self, messages: list) -> int:
        return sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")

    def completion_text(self, history_calls: int) -> str:
        out = (self.reasoning + THINK_END) if self.thinking else ""
        out += self.content
        if self.calls:
            out += SEC_B
            for i, (name, arguments) in enumerate(self.calls):
                out += CALL_B + f"functions.{name}:{history_calls + i}" + ARG_B + arguments + CALL_E
            out += SEC_E
        return out + IM_END


def scenarios() -> list[Scenario]:
    return [
        Scenario("news_call", 10, 1,
                 reasoning="The user wants the latest news on technology and sports in New York. The get_news "
                           "tool takes a list of topics and a location, so one call covers both topics.",
                 calls=[("get_news", '{"topics": ["technology", "sports"], "location": "New York"}')]),
        Scenario("news_two_calls", 10, 1,
                 reasoning="Two topics: technology and sports, both for New York. I'll fetch each topic "
                           "separately so the results stay grouped.",
                 content="I'll look up both topics for you.",
                 calls=[("get_news", '{"topics": ["technology"], "location": "New York"}'),
                        ("get_news", '{"topics": ["sports"], "location": "New York"}')]),
        Scenario("bmi_call_with_content", 20, 1,
                 reasoning="Weight 70 kg, height 1.75 m. calculate_bmi takes weight in kilograms and height "
                           "in meters, which is exactly what was given.",
                 content="Let me calculate your BMI.",
                 calls=[("calculate_bmi", '{"weight": 70, "height": 1.75}')]),
        Scenario("bmi_call_compact_args", 20, 1,
                 reasoning="The user gave weight and height in metric units. Call calculate_bmi.",
                 calls=[("calculate_bmi", '{"weight":70,"height":1.75}')]),
        Scenario("age_call_multiline_reasoning", 43, 1,
                 reasoning="The user was born on 1990-05-15 and wants to know their age today.\n\n"
                           "calculate_age needs the birthdate and the current date. Today's date is "
                           "2026-12-02, so I'll pass both.",
                 calls=[("calculate_age", '{"birthdate": "1990-05-15", "current_date": "2026-12-02"}')]),
        Scenario("track_package_call", 70, 1,
                 reasoning="Tracking number 123456789. The track_package tool fits; get_movie_details is "
                           "unrelated.",
                 content="Sure, I'll check the status of your package.",
                 calls=[("track_package", '{"tracking_number": "123456789"}')]),
        Scenario("plain_answer_with_tools", 0, 1,
                 reasoning="The user wants a recipe but hasn't said which ingredients they have. I need "
                           "those before I can search, so I'll ask.",
                 content="Of course! Tell me which ingredients you have, and I'll find recipes that use "
                         "them."),
        Scenario("final_answer_after_tool", 3, 3,
                 reasoning="The tool returned an area of 15 for the 5 by 3 rectangle. Report it with units.",
                 content="The area of the rectangle with length 5 units and breadth 3 units is **15 square "
                         "units**."),
        Scenario("final_answer_after_tool_unicode", 24, 3,
                 reasoning="The conversion result is in. Present it clearly with the currency symbol.",
                 content="500 USD is about **420.50 €** (EUR) at the current exchange rate.\n\nExchange rates "
                         "change during the day, so your bank's figure may differ slightly."),
        Scenario("thinking_off_call", 24, 1, thinking=False,
                 calls=[("convert_currency", '{"amount": 500, "from_currency": "USD", "to_currency": "EUR"}')]),
        Scenario("thinking_off_plain", 0, 1, thinking=False,
                 content="Of course! I can help you with that. Please tell me what ingredients you have."),
        Scenario("cut_in_reasoning", 27, 1, cut_tokens=14,
                 reasoning="The user asks for the distance between New York and Los Angeles. The "
                           "calculate_distance tool takes two locations.",
                 calls=[("calculate_distance", '{"location1": "New York", "location2": "Los Angeles"}')]),
        Scenario("cut_in_content", 0, 1, cut_tokens=None,
                 reasoning="No ingredients yet; ask for them.",
                 content="Happy to help! Which ingredients do you have at home? Tell me and I'll search for "
                         "recipes."),
        Scenario("distance_call", 27, 1,
                 reasoning="New York to Los Angeles: calculate_distance with location1 and location2.",
                 calls=[("calculate_distance", '{"location1": "New York", "location2": "Los Angeles"}')]),
        Scenario("movie_call", 7, 1,
                 reasoning="Movie ID 12345. get_movie_details takes the ID as a string.",
                 calls=[("get_movie_details", '{"movie_id": "12345"}')]),
        Scenario("news_call_unicode", 10, 1,
                 reasoning="The user wants news. I'll ask for politics in São Paulo as well, in Portuguese.",
                 calls=[("get_news", '{"topics": ["política"], "location": "São Paulo"}')]),
        Scenario("second_call_after_tool", 3, 5,
                 reasoning="Now a circle with radius 4. calculate_area again, shape circle, dimensions [4].",
                 calls=[("calculate_area", '{"shape": "circle", "dimensions": [4]}')]),
        Scenario("final_answer_leading_space", 7, 3,
                 reasoning="The tool returned the movie's details. Summarize them.",
                 content=" The movie with ID 12345 is **Inception** (2010), a science fiction film directed by "
                         "Christopher Nolan, rated 8.8/10."),
        Scenario("second_call_after_tool_with_content", 12, 5,
                 reasoning="Pop music by Michael Jackson: play_music with genre pop and the artist.",
                 content="Sure, switching to pop.",
                 calls=[("play_music", '{"genre": "pop", "artist": "Michael Jackson"}')]),
    ]


# Whitespace at one boundary of the model's text, one boundary per variant (a stack that strips
# several leaves each variant's count explained by its own boundary alone): the model's text as
# above with `"\n"` or `"\n\n"` before the reasoning, `"\n\n"` before the content after `</think>`, or
# `"\n\n"` after the content before the tool calls (a call scenario without content gets a
# short one). Answered by WHITESPACE_PROVIDERS only.
WHITESPACE_BOUNDARIES = ("reasoning_start", "content_start", "content_end_before_calls")


def whitespace_variants(base: list[Scenario]) -> list[Scenario]:
    out = []
    for sc in base:
        if not sc.thinking or sc.cut_tokens is not None or sc.label.startswith("cut_"):
            continue
        for boundary in WHITESPACE_BOUNDARIES:
            variants = []
            if boundary == "reasoning_start":
                variants = [replace(sc, reasoning=ws + sc.reasoning) for ws in ("\n", "\n\n")]
            elif boundary == "content_start" and sc.content and not sc.content[0].isspace():
                variants = [replace(sc, content="\n\n" + sc.content)]
            elif boundary == "content_end_before_calls" and sc.calls:
                variants = [replace(sc, content=(sc.content or "Let me check that.") + "\n\n")]
            for i, v in enumerate(variants):
                suffix = f"_{i + 1}" if i else ""
                out.append(replace(v, label=f"{sc.label}+ws_{boundary}{suffix}", whitespace=boundary))
    return out


# ---------------------------------------------------------------------------------------------
# vLLM 0.33.0's view of a token stream (see the module docstring)
# ---------------------------------------------------------------------------------------------

ADDED = kimi_added_tokens_decoder()
ENC = kimi_encoding()
INCREMENTAL_OFFSET = 5   # vLLM's INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET: prompt tokens read first


def detokenize(ids: list[int], spaces: bool) -> str:
    pieces, run = [], []
    for t in ids:
        if t in ADDED:
            if run:
                pieces.append(ENC.decode_bytes(run).decode("utf-8", errors="replace"))
                run = []
            pieces.append(ADDED[t])
        else:
            run.append(t)
    if run:
        pieces.append(ENC.decode_bytes(run).decode("utf-8", errors="replace"))
    return (" " if spaces else "").join(pieces)


def completion_text(prompt_ids: list[int], completion_ids: list[int], spaces: bool) -> str:
    ids = completion_ids[:-1] if completion_ids and completion_ids[-1] == ENC.encode_single_token(IM_END) \
        else completion_ids
    tail = prompt_ids[-INCREMENTAL_OFFSET:]
    before = detokenize(tail, spaces)
    after = detokenize(tail + ids, spaces)
    assert after.startswith(before)
    return after[len(before):]


CALL_RE = re.compile(re.escape(CALL_B) + r"\s*(?P<id>[^<]+?)\s*" + re.escape(ARG_B)
                     + r"(?P<args>.*?)" + re.escape(CALL_E), re.S)


def vllm_view(prompt_ids: list[int], completion_ids: list[int], thinking: bool, spaces: bool, cut: bool,
              stream: bool = False) -> dict:
    """reasoning / content / tool_calls [(id, name, arguments)] / finish_reason / counts; streamed,
    the arguments keep their whitespace (the spaces around the markers too) and empty content is
    `""` where the non-streamed answer has `null`."""
    text = completion_text(prompt_ids, completion_ids, spaces)
    reasoning = None
    if thinking:
        ends = [i for i in (text.find(THINK_END), text.find(SEC_B)) if i >= 0]
        end = min(ends) if ends else len(text)
        reasoning = text[:end]
        text = text[end + len(THINK_END):] if text.startswith(THINK_END, end) else text[end:]
        stripped = reasoning.lstrip()
        if stripped.startswith(THINK):
            reasoning = stripped[len(THINK):]
        reasoning = reasoning.rstrip() or None
    calls = []
    if SEC_B in text:
        content, section = text.split(SEC_B, 1)
        for m in CALL_RE.finditer(section):
            cid = m.group("id")
            arguments = m.group("args") if stream else m.group("args").strip()
            calls.append((cid, cid.split(":")[0].split(".")[-1], arguments))
        if calls and not content.strip():
            content = "" if stream else None
    else:
        content = text
    if stream:
        content = content or ""
    elif content == "":
        content = None
    finish = "length" if cut else ("tool_calls" if calls else "stop")
    reasoning_tokens = 0
    if thinking:
        end_id = ENC.encode_single_token(THINK_END)
        body = [t for t in completion_ids if t != ENC.encode_single_token(THINK)]
        reasoning_tokens = body.index(end_id) if end_id in body else len(body)
    return {"reasoning": reasoning, "content": content, "calls": calls, "finish_reason": finish,
            "reasoning_tokens": reasoning_tokens}


def check_against_vllm_fixtures() -> int:
    """`vllm_view` must give vLLM 0.33.0's own answers (server_shapes/kimi_k25.jsonl) for every
    non-streamed fixture of the kinds made here: finished, or cut in reasoning or content; no
    schema coercion (vLLM re-serializes then), the model's own `functions.NAME:N` ids."""
    checked = 0
    for line in SHAPES.read_text(encoding="utf-8").splitlines():
        fx = json.loads(line)
        name, server = fx["name"], fx["server"]
        if server["return_token_ids"] or server["version"] != "0.33.0":
            continue
        label = name.split("/")[-2]
        if (label.startswith(("schema_mismatch", "mid_character", "model_id", "section_without_think_end"))
                or "arguments_reserialized" in fx["expect"]["destroyed"]
                or (fx["expect"]["cut"] not in (None, "reasoning", "content"))):
            continue
        thinking = fx["truth"]["prompt_ids"][-1] == ENC.encode_single_token(THINK)
        body = journal_view(True, fx["chunks"]) if server["stream"] else fx["response"]
        choice = body["choices"][0]
        view = vllm_view(fx["truth"]["prompt_ids"], fx["truth"]["completion_ids"], thinking,
                         server["spaces_between_special_tokens"], choice["finish_reason"] == "length",
                         server["stream"])
        msg = choice["message"]
        got = (view["reasoning"], view["content"], [(i, n, a) for i, n, a in view["calls"]], view["finish_reason"])
        want = (msg.get("reasoning"), msg.get("content"),
                [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []],
                choice["finish_reason"])
        assert got == want, f"{name}:\n got  {got}\n want {want}"
        assert body["usage"]["completion_tokens"] == len(fx["truth"]["completion_ids"]), name
        details = body["usage"].get("completion_tokens_details") or {}
        if thinking and details.get("reasoning_tokens") is not None:
            assert details["reasoning_tokens"] == view["reasoning_tokens"], name
        checked += 1
    assert checked >= 100, checked
    return checked


# ---------------------------------------------------------------------------------------------
# Providers
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Convention:
    name: str
    usage_counts_end_token: bool = True
    think_generated: bool = False
    spaces_around_special_tokens: bool = False
    arguments: str = "model"          # model | compact_ascii | compact
    ids: str = "functions.NAME:N"     # functions.NAME:N | NAME:N | index | call_random
    strips: tuple = ()                # boundaries whose whitespace the stack strips (below)


PROVIDERS = [
    ("Fireworks", Convention("baseline")),
    ("Moonshot AI", Convention("ids_without_prefix", ids="NAME:N")),
    ("DeepInfra", Convention("usage_excludes_end_token", usage_counts_end_token=False, ids="index")),
    ("SiliconFlow", Convention("usage_excludes_end_token", usage_counts_end_token=False)),
    ("AtlasCloud", Convention("think_generated", think_generated=True, ids="NAME:N")),
    ("Chutes", Convention("spaces_around_special_tokens", spaces_around_special_tokens=True)),
    ("Groq", Convention("compact_arguments", arguments="compact_ascii")),
    ("Together", Convention("compact_arguments", arguments="compact", ids="call_random")),
    # Not measured: a stack that trims the text fields (the leading whitespace of the reasoning
    # and the content, the content's trailing whitespace), so that inference is tested on it.
    ("Trimmer", Convention("strips_whitespace", strips=("reasoning_start", "content_start",
                                                        "content_end_before_calls", "content_end"))),
]
# The providers that answer the whitespace variants: one that keeps the whitespace (vLLM's view
# keeps it at these boundaries) and the one that strips it.
WHITESPACE_PROVIDERS = ("Fireworks", "Trimmer")


def strip_boundaries(conv: Convention, view: dict) -> dict:
    """The provider's stack strips the whitespace at each boundary of `conv.strips`, after the
    parser (an empty field stays as the parser left it: `null` or `""`)."""
    view = dict(view)
    if "reasoning_start" in conv.strips and view["reasoning"]:
        view["reasoning"] = view["reasoning"].lstrip()
    if "reasoning_end" in conv.strips and view["reasoning"]:
        view["reasoning"] = view["reasoning"].rstrip()
    content = view["content"]
    if content:
        if "content_start" in conv.strips:
            content = content.lstrip()
        end = "content_end_before_calls" if view["calls"] else "content_end"
        if end in conv.strips:
            content = content.rstrip()
        view["content"] = content
    return view

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def provider_id(conv: Convention, model_id: str, rng: random.Random) -> str:
    if conv.ids == "functions.NAME:N":
        return model_id
    if conv.ids == "NAME:N":
        return model_id.removeprefix("functions.")
    if conv.ids == "index":
        return model_id.rsplit(":", 1)[1]
    return "call_" + "".join(rng.choice(ALNUM) for _ in range(24))


def provider_arguments(conv: Convention, arguments: str) -> str:
    if conv.arguments == "model":
        return arguments
    obj = json.loads(arguments)
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=conv.arguments == "compact_ascii")


def usage(view: dict, prompt_tokens: int, completion_tokens: int) -> dict:
    cost_in, cost_out = round(prompt_tokens * 0.6e-6, 10), round(completion_tokens * 2.5e-6, 10)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens, "cost": round(cost_in + cost_out, 10), "is_byok": False,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "cost_details": {"upstream_inference_cost": None, "upstream_inference_prompt_cost": cost_in,
                             "upstream_inference_completions_cost": cost_out},
            "completion_tokens_details": {"reasoning_tokens": view["reasoning_tokens"], "image_tokens": 0}}


def reasoning_details(text: str) -> list:
    return [{"type": "reasoning.text", "text": text, "format": "unknown", "index": 0}]


def provider_calls(conv: Convention, view: dict, rng: random.Random) -> list:
    return [(provider_id(conv, cid, rng), name, provider_arguments(conv, arguments))
            for cid, name, arguments in view["calls"]]


def openrouter_body(provider: str, conv: Convention, view: dict, counts: tuple[int, int],
                    rng: random.Random, serial: int) -> dict:
    """OpenRouter's non-streamed chat.completion around the upstream's answer (FACTS §C, §C2):
    `provider`, the dated `model`, `reasoning` + `reasoning_details`, `content` `""` when empty,
    `native_finish_reason`, `usage` with cost."""
    message = {"role": "assistant", "content": view["content"] if view["content"] is not None else "",
               "refusal": None, "reasoning": view["reasoning"]}
    if view["reasoning"] is not None:
        message["reasoning_details"] = reasoning_details(view["reasoning"])
    if view["calls"]:
        message["tool_calls"] = [{"id": cid, "index": i, "type": "function",
                                  "function": {"name": name, "arguments": arguments}}
                                 for i, (cid, name, arguments) in enumerate(provider_calls(conv, view, rng))]
    return {
        "id": f"gen-{CREATED + serial}-{''.join(rng.choice(ALNUM) for _ in range(20))}",
        "provider": provider, "model": DATED_MODEL, "object": "chat.completion", "created": CREATED + serial,
        "choices": [{"logprobs": None, "finish_reason": view["finish_reason"],
                     "native_finish_reason": view["finish_reason"], "index": 0, "message": message}],
        "usage": usage(view, *counts),
    }


def pieces(text: str) -> list[str]:
    """Deltas of a few words (with the whitespace before each), as a stream sends them."""
    return re.findall(r"(?:\s*\S+){1,4}|\s+", text)


def openrouter_chunks(provider: str, conv: Convention, view: dict, counts: tuple[int, int],
                      rng: random.Random, serial: int) -> list:
    """The same answer streamed through OpenRouter: deltas of `reasoning` (with
    `reasoning_details`), `content`, then each call (its first delta with id, type and name,
    argument pieces after), a chunk with `finish_reason`, and `usage` in the last chunk."""
    gid = f"gen-{CREATED + serial}-{''.join(rng.choice(ALNUM) for _ in range(20))}"
    out = []

    def chunk(delta: dict, finish: str | None = None) -> dict:
        if not out:
            delta = {"role": "assistant", **delta}
        c = {"id": gid, "provider": provider, "model": DATED_MODEL, "object": "chat.completion.chunk",
             "created": CREATED + serial,
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish,
                          "logprobs": None}]}
        out.append(c)
        return c

    for piece in pieces(view["reasoning"] or ""):
        chunk({"content": "", "reasoning": piece, "reasoning_details": reasoning_details(piece)})
    for piece in pieces(view["content"] or ""):
        chunk({"content": piece})
    for i, (cid, name, arguments) in enumerate(provider_calls(conv, view, rng)):
        chunk({"content": "", "tool_calls": [{"index": i, "id": cid, "type": "function",
                                              "function": {"name": name, "arguments": ""}}]})
        for piece in pieces(arguments):
            chunk({"content": "", "tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    chunk({"content": ""}, view["finish_reason"])
    chunk({"role": "assistant", "content": ""})["usage"] = usage(view, *counts)
    return out


# ---------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------

def answers(rows: list) -> list[dict]:
    think_id = ENC.encode_single_token(THINK)
    out, serial = [], 0
    for provider, conv in PROVIDERS:
        rng = random.Random(f"provider-conventions/{provider}")
        every = scenarios() + whitespace_variants(scenarios())
        for sc, stream in [(sc, stream) for stream in (False, True) for sc in every]:
            if conv.think_generated and not sc.thinking:
                continue   # measured on thinking answers only (see the module docstring)
            if sc.whitespace and provider not in WHITESPACE_PROVIDERS:
                continue
            messages, tools = glaive_prompt(rows, sc.glaive, sc.turns)
            kwargs = {} if sc.thinking else {"thinking": False}
            render = kimi_encode(kimi_render_k25(messages, tools, kwargs))
            ids = kimi_encode(sc.completion_text(sc.calls_history(messages)))
            assert render[-1] == (think_id if sc.thinking else ENC.encode_single_token(THINK_END)), sc.label
            max_tokens = sc.cut_tokens
            if sc.label == "cut_in_content":
                # cut a few tokens into the content, wherever the reasoning ends
                max_tokens = ids.index(ENC.encode_single_token(THINK_END)) + 1 + 6
            prompt_ids, completion_ids = render, ids
            if conv.think_generated:
                prompt_ids, completion_ids = render[:-1], [think_id] + ids
                if max_tokens is not None:
                    max_tokens += 1
            cut = max_tokens is not None and max_tokens < len(completion_ids)
            if cut:
                completion_ids = completion_ids[:max_tokens]
            view = strip_boundaries(conv, vllm_view(prompt_ids, completion_ids, sc.thinking,
                                                    conv.spaces_around_special_tokens, cut, stream))
            counts = (len(prompt_ids), len(completion_ids) - (0 if conv.usage_counts_end_token or cut else 1))
            serial += 1
            request = {"model": MODEL, "messages": messages, "tools": tools,
                       "provider": {"only": [provider], "allow_fallbacks": False}, "stream": stream}
            if kwargs:
                request["chat_template_kwargs"] = kwargs
            request["max_tokens"] = max_tokens if max_tokens is not None else MAX_TOKENS
            answer = ({"chunks": openrouter_chunks(provider, conv, view, counts, rng, serial)} if stream
                      else {"response": openrouter_body(provider, conv, view, counts, rng, serial)})
            out.append({
                "name": f"{conv.name}/{provider}/{'stream' if stream else 'nonstream'}/{sc.label}",
                "provider": provider,
                "convention": {"name": conv.name, "usage_counts_end_token": conv.usage_counts_end_token,
                               "think_generated": conv.think_generated,
                               "spaces_around_special_tokens": conv.spaces_around_special_tokens,
                               "arguments": conv.arguments, "ids": conv.ids, "strips": list(conv.strips)},
                "whitespace": sc.whitespace,
                "profile": "kimi-k2.5", "model": "kimi-k2.5", "chat_template": K25_TEMPLATE,
                "request": request,
                **answer,
                "truth": {"prompt_ids": prompt_ids, "completion_ids": completion_ids,
                          "completion_text": ENC.decode(completion_ids)},
            })
    return out


def main() -> None:
    checked = check_against_vllm_fixtures()
    rows = json.loads((datasets_dir() / "glaive_toolcall_en_demo.json").read_text(encoding="utf-8"))
    lines = answers(rows)
    names = [line["name"] for line in lines]
    assert len(names) == len(set(names)), "duplicate names"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    per: dict[str, int] = {}
    for line in lines:
        per[line["provider"]] = per.get(line["provider"], 0) + 1
    print(f"vllm_view equal to vLLM 0.33.0's own answer on {checked} server_shapes fixtures", file=sys.stderr)
    print(f"{len(lines)} answers: " + ", ".join(f"{p} {n}" for p, n in per.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
