#!/usr/bin/env python3
"""Reconstruction test cases: conversations whose TRUE token ids are known from the reference
libraries, paired with the chat.completion JSON each kind of server would send for that same
token stream. `draftgen reconstruct` must turn every (request, response) back into the expected
ids. Writes `tests/data/reconstruct/<family>.jsonl`; run from anywhere:

    python3 tests/data/gen/make_reconstruct_cases.py

Deterministic: same inputs, same bytes. Every expected id comes from `reference.py` (tiktoken with
the Kimi ranks, jinja2 renders of the real templates through transformers' pipeline,
transformers' `apply_chat_template` / `tokenizers`), never from draftgen.

How the true ids are defined
============================

Kimi (FACTS §A4, DESIGN "Completion ids for Kimi K2.5")
  The sampled stream is
      [<think>]REASONING</think>CONTENT[<|tool_calls_section_begin|>
          (<|tool_call_begin|>ID<|tool_call_argument_begin|>ARGS<|tool_call_end|>)+
      <|tool_calls_section_end|>]<|im_end|>
  encoded as ONE string with `kimi_encode` (special-token literals become their ids).
  - kimi_k25 (thinking, the default): `<think>` is the last PROMPT token, so the completion
    starts with the reasoning. With `chat_template_kwargs.thinking=false` the prompt ends
    `<think></think>` and the completion is `CONTENT[section]<|im_end|>`.
  - kimi_k2_thinking: the prompt ends `<|im_middle|>`; the model emits `<think>` itself, so the
    completion starts with 163606.
  - kimi_k2 (instruct): no reasoning; completion `CONTENT[section]<|im_end|>`.
  - ID is the native `functions.NAME:N`, N = number of tool calls in all assistant messages of the
    request + index of the call within this answer (conversation-global counter).
  - ARGS is the raw argument string exactly as the model wrote it. In the "arguments as a JSON
    object" shape the model's ARGS are built as `json.dumps(obj, ensure_ascii=False)` (what the
    templates' transformers `tojson` writes), so the object form is lossless.
  - `finish_reason: "length"`: the true ids are the first k ids of the full stream (never the
    end token); k is chosen so that the server's text decodes cleanly and re-encodes to exactly
    those k ids (asserted).
  Cross-check (asserted): where a template renders the answer turn itself, render(conversation +
  answer, add_generation_prompt=False) minus render(conversation, add_generation_prompt=True)
  equals the stream text. That holds for K2-Thinking and K2.5 answers WITH tool calls (they land
  in the template's "suffix", which keeps `<think>reasoning</think>`) and K2 answers without tool
  calls (the July K2 template drops tool calls from assistant turns).

Kimi prompt ids
  - kimi_k2: `kimi_render("templates/kimi-k2.jinja", add_generation_prompt=True)` (tools
    deep-sorted, transformers `tojson`), encoded with `kimi_encode`. Cases carry
    `"chat_template": "templates/kimi-k2.jinja"` because the published K2 revision writes compact
    JSON tools while this July template writes `tojson`.
  - kimi_k2_thinking: same with `templates/kimi-k2-thinking.jinja` (also given as chat_template).
  - kimi_k25: the official template is not available. Cases WITHOUT tools carry prompt_ids
    rendered from `templates/kimi-k2.5-style.jinja` (thinking defaults to true); every K2.5
    conversation starts with a system message, so the default-system question never arises.
    Cases WITH tools have no prompt_ids (the TypeScript tool declaration has no Python reference
    here); only completion_ids are checked. Their usage.prompt_tokens is a best-effort count
    (see `ts_tool_declaration`), so a prompt_tokens warning there is not a failure.

Qwen3 / DeepSeek-V3
  Prompt ids: transformers `apply_chat_template(add_generation_prompt=True)`.
  Completion: render the conversation with the answer appended as an assistant message
  (`reasoning_content`, `content`, `tool_calls`) without generation prompt, assert the
  generation-prompt render is a prefix, take the rest and cut right after the first end-of-turn
  token (`<|im_end|>` for Qwen3, `<｜end▁of▁sentence｜>` for DeepSeek-V3); encode with
  `add_special_tokens=False`.
  DeepSeek-V3 tool-call answers have exactly two calls and come first in the conversation: the
  template in the assets writes `<｜tool▁calls▁end｜><｜end▁of▁sentence｜>` only after the
  second call (a single call is never closed, a third is closed twice) and tracks "first tool
  message" globally, so no other form has a reference render.

Response shapes (what each server sends for the same token stream)
==================================================================
  openrouter        `message.reasoning` + `reasoning_details:[{type:"reasoning.text",...}]`,
                    content ("" or null when only tool calls; tool-call cases alternate),
                    tool_calls with `call_<24 hex>` ids and raw string arguments,
                    finish_reason / native_finish_reason, provider, usage with cost and
                    completion_tokens_details.reasoning_tokens.
  vllm              vLLM reasoning parser + tool parser: `message.reasoning`, raw native ids
                    (Kimi) or `chatcmpl-tool-…` (Qwen3) / `call_…` (DeepSeek), content null when
                    empty, usage without cost.
  vllm_old          same, reasoning in `message.reasoning_content` (vLLM before PR #27752).
  think_in_content  tool parser only, no reasoning parser: content = everything before the tool
                    section, e.g. `reasoning</think>answer` (K2-Thinking: `<think>…`).
  raw               no parsers: content = the decoded completion without the stop token
                    (`<|im_end|>` is a special token the server skips), native markers included.
  raw_spaces        raw, as vLLM's detokenizer writes it for Kimi's slow tokenizer with
                    `spaces_between_special_tokens=True` (the default). See
                    `vllm_incremental_text`: every added token (ids >= 163584) is its own
                    segment, runs of ordinary tokens form one segment, special tokens
                    (`all_special_tokens`: <|im_end|>, <|im_middle|>, … ) are skipped, and segments
                    are joined with ONE space. Because vLLM detokenizes incrementally against the
                    last 7 prompt ids (INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET = 5, plus 2), the
                    completion text also starts with one space whenever the last non-special
                    prompt token or the first completion token is an added token: K2.5's prompt
                    ends `<think>`, so its raw text starts " "; K2-Thinking's completion starts
                    with `<think>` after "assistant", so it starts " <think> "; K2 content right
                    after "assistant<|im_middle|>" gets no leading space. Cases carry
                    `"options": {"spaces_around_special_tokens": true}`. Fast tokenizers
                    (Qwen3, DeepSeek-V3) take the other branch and insert nothing, so this shape
                    is Kimi-only.
  args_object       OpenRouter shape with `function.arguments` as a JSON object.

Ambiguity in parsed shapes, decided here:
  - reasoning + empty content + tool_calls (Kimi thinking families) may come from
    `R</think><section>` or `R<section>` (tool section opened inside reasoning). With
    usage.completion_tokens the candidate of that length is expected (`ambiguous: false`);
    without usage the template's form WITH `</think>` is expected and `ambiguous: true`.
  - finish_reason "length" with reasoning and no content may come from `R` (cut inside the
    reasoning) or `R</think>` (cut right after it). With usage: the true one. Without usage the
    form WITHOUT `</think>` is expected, `ambiguous: true`: a reasoning parser that reports
    reasoning and no content at a length stop was most plausibly still reasoning (for any
    reasoning text R, P(R followed by anything) >= P(R followed by </think>)).
  Raw shapes show the markers, so they are never ambiguous.

`warnings_contain` lists substrings the reconstruct warnings must contain; other warnings are
not forbidden (K2.5 tool cases have a best-effort prompt_tokens).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import (  # noqa: E402  (path set just above)
    ASSETS,
    REPO_ROOT,
    hf_render,
    hf_render_keep_none,
    hf_tokenizer,
    kimi_added_tokens_decoder,
    kimi_encode,
    kimi_encoding,
    kimi_render,
)

OUT_DIR = REPO_ROOT / "tests" / "data" / "reconstruct"

THINK, END_THINK = "<think>", "</think>"
SECTION_BEGIN, SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL_BEGIN, ARG_BEGIN, CALL_END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"
IM_END = "<|im_end|>"
KIMI_IM_END_ID = 163586
QWEN_IM_END = "<|im_end|>"
DS_EOS = "<｜end▁of▁sentence｜>"
DS_CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
DS_CALL_BEGIN = "<｜tool▁call▁begin｜>"
DS_CALL_END = "<｜tool▁call▁end｜>"
DS_SEP = "<｜tool▁sep｜>"

CREATED = 1767225600  # fixed timestamp: outputs are deterministic


def stable_hex(*parts: str, n: int = 24) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:n]


# ---------------------------------------------------------------------------------------------
# Tools and answers
# ---------------------------------------------------------------------------------------------


def tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    # Keys deliberately NOT sorted: Kimi's tokenizer deep-sorts them before rendering.
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


WEATHER = tool(
    "get_weather",
    "Return the weather for a city.",
    {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    ["city"],
)
TIME = tool("get_time", "Current local time in a timezone.", {"timezone": {"type": "string"}}, ["timezone"])
WRITE_FILE = tool(
    "write_file",
    "Write a text file.",
    {"path": {"type": "string"}, "content": {"type": "string", "description": "Full file text"}},
    ["path", "content"],
)
SEARCH = tool(
    "search",
    "Search the web.",
    {"query": {"type": "string"}, "limit": {"type": "integer", "description": "Max results"}},
    ["query"],
)


@dataclass
class Call:
    name: str
    args: str  # the argument text exactly as the model wrote it

    @staticmethod
    def obj(name: str, obj: dict) -> "Call":
        """A call whose ARGS are what `tojson` writes for `obj` (lossless as an object)."""
        return Call(name, json.dumps(obj, ensure_ascii=False))


@dataclass
class Answer:
    reasoning: str | None = None
    content: str = ""
    calls: list[Call] = field(default_factory=list)
    closed: bool = True  # `</think>` written; False = tool section opened inside reasoning


@dataclass
class Conv:
    slug: str
    messages: list[dict]
    answer: Answer
    tools: list[dict] | None = None
    kwargs: dict = field(default_factory=dict)  # chat_template_kwargs


def count_request_tool_calls(messages: list[dict]) -> int:
    return sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")


def history_call(call_id: str, name: str, args: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


# ---------------------------------------------------------------------------------------------
# Kimi families
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KimiFamily:
    key: str
    profile: str
    template: str  # template used for the reference renders
    chat_template_field: str | None  # what the case names in "chat_template"
    think: str  # "none" | "emitted" (K2-Thinking) | "prompt" (K2.5)
    model_slug: str
    server_model: str


KIMI_K2 = KimiFamily("kimi_k2", "kimi-k2", "templates/kimi-k2.jinja", "templates/kimi-k2.jinja", "none",
                     "moonshotai/kimi-k2", "moonshotai/Kimi-K2-Instruct")
KIMI_K2_THINKING = KimiFamily("kimi_k2_thinking", "kimi-k2-thinking", "templates/kimi-k2-thinking.jinja",
                              "templates/kimi-k2-thinking.jinja", "emitted",
                              "moonshotai/kimi-k2-thinking", "moonshotai/Kimi-K2-Thinking")
KIMI_K25 = KimiFamily("kimi_k25", "kimi-k2.5", "templates/kimi-k2.5-style.jinja", None, "prompt",
                      "moonshotai/kimi-k2.5", "moonshotai/Kimi-K2.5")


def kimi_thinks(fam: KimiFamily, kwargs: dict) -> bool:
    if fam.think == "none":
        return False
    if fam.think == "prompt":
        return kwargs.get("thinking", True) is not False
    return True


def kimi_call_ids(conv: Conv) -> list[str]:
    n0 = count_request_tool_calls(conv.messages)
    return [f"functions.{c.name}:{n0 + i}" for i, c in enumerate(conv.answer.calls)]


def kimi_section(conv: Conv) -> str:
    if not conv.answer.calls:
        return ""
    body = "".join(
        f"{CALL_BEGIN}{cid}{ARG_BEGIN}{c.args}{CALL_END}"
        for cid, c in zip(kimi_call_ids(conv), conv.answer.calls)
    )
    return SECTION_BEGIN + body + SECTION_END


def kimi_stream_text(fam: KimiFamily, conv: Conv) -> str:
    """The sampled completion text, end token included."""
    a = conv.answer
    text = THINK if fam.think == "emitted" else ""
    if kimi_thinks(fam, conv.kwargs):
        text += (a.reasoning or "") + (END_THINK if a.closed else "")
    return text + a.content + kimi_section(conv) + IM_END


def kimi_answer_message(conv: Conv) -> dict:
    a = conv.answer
    msg: dict[str, Any] = {"role": "assistant", "content": a.content}
    if a.reasoning is not None:
        msg["reasoning_content"] = a.reasoning
    if a.calls:
        msg["tool_calls"] = [history_call(cid, c.name, c.args) for cid, c in zip(kimi_call_ids(conv), a.calls)]
    return msg


def kimi_special_ids() -> set[int]:
    """Ids in the Kimi tokenizer's `all_special_tokens` (bos/eos/unk/pad + additional)."""
    config = json.loads((ASSETS / "kimi-k2.5" / "tokenizer_config.json").read_text(encoding="utf-8"))
    names = set(config["additional_special_tokens"])
    names |= {config[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token")}
    return {i for i, s in kimi_added_tokens_decoder().items() if s in names}


KIMI_SPECIAL_IDS = kimi_special_ids()
KIMI_ADDED = kimi_added_tokens_decoder()


def kimi_decode(ids: list[int]) -> str:
    return kimi_encoding().decode_bytes(ids).decode("utf-8")


def vllm_incremental_text(prompt_ids: list[int], out_ids: list[int], spaces: bool) -> str:
    """vLLM's slow-tokenizer detokenization (`detokenize_incrementally` with
    `_convert_tokens_to_string_with_added_encoders`, skip_special_tokens=True), replayed token by
    token over Kimi's vocabulary: special tokens are dropped, each added token is a segment of
    its own, runs of ordinary tokens are one segment (bytes joined, invalid UTF-8 replaced), and
    segments are joined with " " when `spaces`. The window starts on the last 7 prompt ids."""

    def to_string(tokens: list[int]) -> str:
        segments: list[str] = []
        run: list[bytes] = []
        for t in tokens:
            if t in KIMI_ADDED:
                if run:
                    segments.append(b"".join(run).decode("utf-8", errors="replace"))
                    run = []
                segments.append(KIMI_ADDED[t])
            else:
                run.append(kimi_encoding().decode_single_token_bytes(t))
        if run:
            segments.append(b"".join(run).decode("utf-8", errors="replace"))
        return (" " if spaces else "").join(segments)

    tokens = [t for t in prompt_ids[-7:] if t not in KIMI_SPECIAL_IDS]
    read_offset = len(tokens)
    prefix_offset = max(read_offset - 5, 0)
    out = ""
    for t in out_ids:
        if t not in KIMI_SPECIAL_IDS:
            tokens.append(t)
        prefix_text = to_string(tokens[prefix_offset:read_offset])
        new_text = to_string(tokens[prefix_offset:])
        if len(new_text) <= len(prefix_text) or new_text.endswith("\ufffd"):
            continue
        out += new_text[len(prefix_text):]
        prefix_offset, read_offset = read_offset, len(tokens)
    return out


KIMI_CALL_RE = re.compile(
    r"<\|tool_call_begin\|>\s*(?P<tool_call_id>[^<]+:\d+)\s*<\|tool_call_argument_begin\|>\s*"
    r"(?P<function_arguments>(?:(?!<\|tool_call_begin\|>).)*?)\s*<\|tool_call_end\|>",
    re.DOTALL,
)


def kimi_reasoning_parser(text: str) -> tuple[str | None, str | None]:
    """vLLM kimi_k2 / kimi_k25 reasoning parser (FACTS §B2): a leading `<think>` is consumed;
    reasoning ends at `</think>` (dropped) or at the tool section (kept in content); no end
    marker means everything is reasoning; nothing is trimmed."""
    if text.startswith(THINK):
        text = text[len(THINK):]
    hits = [i for i in (text.find(END_THINK), text.find(SECTION_BEGIN), text.find(CALL_BEGIN)) if i >= 0]
    if not hits:
        return text, None
    i = min(hits)
    reasoning = text[:i]
    content = text[i + len(END_THINK):] if text.startswith(END_THINK, i) else text[i:]
    return reasoning, content or None


def kimi_tool_parser(content: str | None) -> tuple[str | None, list[tuple[str, str]]]:
    """vLLM kimi_k2 tool parser (FACTS §B1): content = text before the section (None if empty),
    calls from the regex with the raw id and whitespace-stripped raw arguments."""
    if content is None or SECTION_BEGIN not in content:
        return content, []
    before = content[: content.find(SECTION_BEGIN)]
    calls = [(m["tool_call_id"].strip(), m["function_arguments"]) for m in KIMI_CALL_RE.finditer(content)]
    return before or None, calls


def kimi_name_from_id(call_id: str) -> str:
    return call_id.split(":")[0].split(".")[-1]


# --- K2.5 tool declaration: only for a plausible usage.prompt_tokens, never for expected ids ----


def ts_tool_declaration(tools: list[dict]) -> str:
    """TypeScript-style declaration for the small schemas used here (string/integer/enum,
    descriptions, required-then-optional sorted by name), per FACTS §A4's encoder rules. Checked
    against the golden K2.5 render below. Used only to fill usage.prompt_tokens."""
    functions = []
    for t in tools:
        f = t["function"]
        params = f["parameters"]
        required = params.get("required", [])
        props = params.get("properties", {})
        names = sorted(n for n in props if n in required) + sorted(n for n in props if n not in required)
        fields = []
        for n in names:
            p = props[n]
            doc = f"  // {p['description']}\n" if p.get("description") else ""
            if "enum" in p:
                typ = " | ".join(f'"{e}"' for e in p["enum"])
            else:
                typ = "number" if p["type"] == "integer" else p["type"]
            fields.append(f"{doc}  {n}{'' if n in required else '?'}: {typ}")
        body = "{\n" + ",\n".join(fields) + "\n}" if fields else "{}"
        desc = f"// {f['description']}\n" if f.get("description") else ""
        functions.append(f"{desc}type {f['name']} = (_: {body}) => any;")
    return "# Tools\n\n## functions\nnamespace functions {\n" + "\n".join(functions) + "\n}\n"


def check_ts_against_golden() -> None:
    golden = json.loads((ASSETS / "golden" / "kimi.json").read_text(encoding="utf-8"))
    entry = next(v for k, v in golden.items() if k.startswith("kimi-k2.5") and isinstance(v, dict))
    weather = tool("get_weather", "Return the weather for a city.", {"city": {"type": "string"}}, ["city"])
    messages = [{"role": "system", "content": "You are concise."}, {"role": "user", "content": "What is 2+2?"}]
    text = kimi_render(KIMI_K25.template, messages, [weather], add_generation_prompt=True,
                       tools_ts_str=ts_tool_declaration([weather]))
    assert text == entry["text"], "TS declaration / K2.5-style template no longer reproduce the golden"
    assert kimi_encode(text) == entry["token_ids"]


# ---------------------------------------------------------------------------------------------
# Case assembly (shared)
# ---------------------------------------------------------------------------------------------


@dataclass
class Truth:
    """One conversation's reference facts."""
    prompt_ids: list[int] | None  # None: no reference (K2.5 with tools)
    prompt_tokens: int  # for usage (best effort when prompt_ids is None)
    completion_ids: list[int]
    body: str  # completion text as the server decodes it (no stop token)
    finish: str  # "stop" | "length"
    reasoning_tokens: int


@dataclass
class Parsed:
    """What a server's parsers make of the body."""
    reasoning: str | None
    content: str | None
    calls: list[tuple[str, str]]  # (native id or "", arguments text)
    names: list[str]


def usage_block(truth: Truth, flavour: str, completion_tokens: int | None = None) -> dict:
    ct = len(truth.completion_ids) if completion_tokens is None else completion_tokens
    u: dict[str, Any] = {"prompt_tokens": truth.prompt_tokens, "completion_tokens": ct,
                         "total_tokens": truth.prompt_tokens + ct}
    if flavour == "openrouter":
        u["cost"] = round(truth.prompt_tokens * 6e-7 + ct * 2.5e-6, 9)
        u["prompt_tokens_details"] = {"cached_tokens": 0}
        u["completion_tokens_details"] = {"reasoning_tokens": truth.reasoning_tokens}
    else:
        u["prompt_tokens_details"] = None
    return u


def response_json(name: str, flavour: str, model: str, message: dict, finish: str,
                  usage: dict | None, provider: str | None) -> dict:
    resp: dict[str, Any] = {
        "id": ("gen-" if flavour == "openrouter" else "chatcmpl-") + stable_hex(name, n=20),
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
    }
    if provider:
        resp["provider"] = provider
    choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": finish, "message": message}
    if flavour == "openrouter":
        choice["native_finish_reason"] = finish
    else:
        choice["stop_reason"] = None
    resp["choices"] = [choice]
    if usage is not None:
        resp["usage"] = usage
    return resp


class Writer:
    def __init__(self, family: str):
        self.family = family
        self.cases: list[dict] = []

    def add(self, shape: str, slug: str, case: dict) -> None:
        case = {"name": f"{self.family}/{shape}/{slug}/{len(self.cases)}", **case}
        self.cases.append(case)

    def write(self) -> None:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        path = OUT_DIR / f"{self.family}.jsonl"
        with path.open("w", encoding="utf-8", newline="\n") as f:
            for c in self.cases:
                f.write(json.dumps(c, ensure_ascii=False, separators=(",", ":")) + "\n")


def request_of(conv: Conv) -> dict:
    req: dict[str, Any] = {"messages": copy.deepcopy(conv.messages)}
    if conv.tools:
        req["tools"] = copy.deepcopy(conv.tools)
    if conv.kwargs:
        req["chat_template_kwargs"] = dict(conv.kwargs)
    return req


def cut_length(ids: list[int], decode, encode, at: int) -> list[int]:
    """The first k ids (k >= `at`, as close as possible) whose decoded text is valid UTF-8 and
    re-encodes to exactly those ids: what a `length` stop leaves and a re-encode can recover."""
    for k in range(at, len(ids)):
        try:
            text = decode(ids[:k])
        except UnicodeDecodeError:
            continue
        if encode(text) == ids[:k]:
            return ids[:k]
    raise AssertionError("no clean length cut")


# ---------------------------------------------------------------------------------------------
# Kimi cases
# ---------------------------------------------------------------------------------------------


def kimi_truth(fam: KimiFamily, conv: Conv, length_at: int | None = None) -> Truth:
    tools = conv.tools
    gen = kimi_render(fam.template, conv.messages, tools, add_generation_prompt=True, **conv.kwargs)
    if fam.think == "prompt":
        assert gen.endswith(THINK if kimi_thinks(fam, conv.kwargs) else THINK + END_THINK)
    prompt_ids: list[int] | None = kimi_encode(gen)
    prompt_tokens = len(prompt_ids)
    if fam is KIMI_K25 and tools:
        prompt_ids = None
        ts_prompt = kimi_render(fam.template, conv.messages, tools, add_generation_prompt=True,
                                tools_ts_str=ts_tool_declaration(tools), **conv.kwargs)
        prompt_tokens = len(kimi_encode(ts_prompt))

    stream = kimi_stream_text(fam, conv)
    full_ids = kimi_encode(stream)
    assert full_ids[-1] == KIMI_IM_END_ID

    # Cross-check with the template wherever it renders the answer turn itself.
    a = conv.answer
    renders_turn = (fam.think == "none" and not a.calls) or (fam.think != "none" and a.calls and a.closed)
    if renders_turn:
        full = kimi_render(fam.template, conv.messages + [kimi_answer_message(conv)], tools,
                           add_generation_prompt=False, **conv.kwargs)
        assert full.startswith(gen), conv.slug
        assert full[len(gen):] == stream, (conv.slug, full[len(gen):], stream)

    if length_at is None:
        ids, finish = full_ids, "stop"
        body = stream[: -len(IM_END)]
    else:
        ids = cut_length(full_ids[:-1], kimi_decode, kimi_encode, length_at)
        finish = "length"
        body = kimi_decode(ids)
    reasoning_tokens = len(kimi_encode((a.reasoning or ""))) if kimi_thinks(fam, conv.kwargs) else 0
    return Truth(prompt_ids, prompt_tokens, ids, body, finish, reasoning_tokens)


def kimi_parse(fam: KimiFamily, conv: Conv, body: str, reasoning_parser: bool) -> Parsed:
    if reasoning_parser and kimi_thinks(fam, conv.kwargs):
        reasoning, content = kimi_reasoning_parser(body)
    else:
        reasoning, content = None, body or None
    content, calls = kimi_tool_parser(content)
    return Parsed(reasoning, content, calls, [kimi_name_from_id(cid) for cid, _ in calls])


def kimi_message(flavour: str, name: str, parsed: Parsed, content_empty: str | None,
                 object_args: bool = False) -> dict:
    msg: dict[str, Any] = {"role": "assistant"}
    content = parsed.content
    if content is None and flavour == "openrouter":
        content = content_empty
    msg["content"] = content
    if flavour == "openrouter":
        msg["refusal"] = None
        msg["reasoning"] = parsed.reasoning
        if parsed.reasoning is not None:
            msg["reasoning_details"] = [{"type": "reasoning.text", "text": parsed.reasoning,
                                         "format": "unknown", "index": 0}]
    elif flavour == "vllm":
        msg["reasoning"] = parsed.reasoning
    elif flavour == "vllm_old":
        msg["reasoning_content"] = parsed.reasoning
    calls = []
    for i, ((cid, args), fname) in enumerate(zip(parsed.calls, parsed.names)):
        call_id = f"call_{stable_hex(name, str(i))}" if flavour == "openrouter" else cid
        arguments: Any = json.loads(args) if object_args else args
        calls.append({"id": call_id, "type": "function", "index": i,
                      "function": {"name": fname, "arguments": arguments}})
    msg["tool_calls"] = calls
    return msg


def kimi_case(fam: KimiFamily, conv: Conv, truth: Truth, message: dict, flavour: str, name: str,
              usage: dict | None, expected_ids: list[int], ambiguous: bool, finish: str,
              options: dict | None = None, warnings: list[str] | None = None) -> dict:
    model_name = fam.model_slug if flavour == "openrouter" else fam.server_model
    provider = "Moonshot AI" if flavour == "openrouter" else None
    case: dict[str, Any] = {"profile": fam.profile, "model": "kimi-k2.5"}
    if fam.chat_template_field:
        case["chat_template"] = fam.chat_template_field
    case["request"] = request_of(conv)
    case["response"] = response_json(name, flavour, model_name, message, finish, usage, provider)
    if options:
        case["options"] = options
    expected: dict[str, Any] = {}
    if truth.prompt_ids is not None:
        expected["prompt_ids"] = truth.prompt_ids
    expected["completion_ids"] = expected_ids
    expected["ambiguous"] = ambiguous
    if warnings:
        expected["warnings_contain"] = warnings
    case["expected"] = expected
    return case


def kimi_emit(w: Writer, fam: KimiFamily, conv: Conv, shape: str, *, length_at: int | None = None,
              with_usage: bool = True, usage_delta: int = 0, warnings: list[str] | None = None,
              expected_override: list[int] | None = None, ambiguous: bool = False,
              content_empty: str | None = "", variant: str = "") -> None:
    truth = kimi_truth(fam, conv, length_at)
    slug = conv.slug + (f"+{variant}" if variant else "")
    name = f"{fam.key}/{shape}/{slug}/{len(w.cases)}"
    has_calls = bool(conv.answer.calls) and truth.finish == "stop"
    finish = truth.finish if truth.finish == "length" else ("tool_calls" if has_calls else "stop")
    options = None
    if shape in ("openrouter", "vllm", "vllm_old", "args_object", "think_in_content"):
        flavour = "openrouter" if shape == "args_object" else ("vllm" if shape == "think_in_content" else shape)
        parsed = kimi_parse(fam, conv, truth.body, reasoning_parser=shape != "think_in_content")
        if shape == "think_in_content":
            flavour = "vllm"
        message = kimi_message(flavour, name, parsed, content_empty, object_args=shape == "args_object")
        if shape == "think_in_content":
            message.pop("reasoning", None)
    elif shape in ("raw", "raw_spaces"):
        flavour = "vllm"
        if shape == "raw_spaces":
            prompt_ids = truth.prompt_ids
            if prompt_ids is None:  # K2.5 with tools: the prompt tail is the same generation prompt
                prompt_ids = kimi_encode(kimi_render(fam.template, conv.messages, None, add_generation_prompt=True,
                                                     **conv.kwargs))
            text = vllm_incremental_text(prompt_ids, truth.completion_ids, spaces=True)
            options = {"spaces_around_special_tokens": True}
        else:
            text = vllm_incremental_text(truth.prompt_ids or [], truth.completion_ids, spaces=False)
            assert text == truth.body, (conv.slug, text, truth.body)
        message = {"role": "assistant", "content": text, "reasoning": None, "tool_calls": []}
        finish = truth.finish
    else:
        raise ValueError(shape)
    usage = usage_block(truth, flavour, len(truth.completion_ids) + usage_delta) if with_usage else None
    expected = truth.completion_ids if expected_override is None else expected_override
    w.add(shape, slug, kimi_case(fam, conv, truth, message, flavour, name, usage, expected,
                                      ambiguous, finish, options, warnings))


def kimi_convs(fam: KimiFamily) -> list[Conv]:
    """Conversations for one Kimi family; reasoning is dropped where the family has none."""
    sys_msg = {"role": "system", "content": "You are concise."}
    # K2.5 conversations always start with a system message (see header).
    lead = [sys_msg] if fam is KIMI_K25 else []
    hist_empty = "" if fam is KIMI_K2 else None  # the July K2 template needs string content

    def hmsg(content: str | None, calls: list[dict], reasoning: str | None = None) -> dict:
        m: dict[str, Any] = {"role": "assistant", "content": content if content is not None else hist_empty,
                             "tool_calls": calls}
        if reasoning is not None and fam.think != "none":
            m["reasoning_content"] = reasoning
        return m

    def tool_msg(call_id: str, name: str, content: str) -> dict:
        return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}

    convs = [
        Conv("no_tools_simple", lead + [{"role": "user", "content": "What is 2+2?"}],
             Answer("The user asks for 2+2, which is 4.", "Four.")),
        Conv("system_multiturn",
             [sys_msg, {"role": "user", "content": "Name a prime number."},
              {"role": "assistant", "content": "Seven."},
              {"role": "user", "content": "Another one, please."}],
             Answer("They want a different prime than seven.\nEleven works.", "Eleven.")),
        Conv("non_ascii", lead + [{"role": "user", "content": "用中文解释一下什么是递归？🙂"}],
             Answer("用户想要中文解释。Recursion — a function calling itself, déjà vu.",
                    "递归就是函数调用自身。🌀\n例如：阶乘 n! = n × (n-1)!")),
        Conv("single_call", lead + [{"role": "user", "content": "What's the weather in Paris?"}],
             Answer("I should call get_weather for Paris.", "", [Call("get_weather", '{"city": "Paris"}')]),
             tools=[WEATHER]),
        Conv("content_then_call", lead + [{"role": "user", "content": "What time is it in Tokyo?"}],
             Answer("Use get_time with Asia/Tokyo.", "Let me check the time in Tokyo.",
                    [Call("get_time", '{"timezone":"Asia/Tokyo"}')]),
             tools=[WEATHER, TIME]),
        Conv("parallel_calls",
             lead + [{"role": "user", "content": "Weather in Paris and Tokyo, and the time in Paris?"}],
             Answer("Three independent lookups; call them in parallel.", "",
                    [Call("get_weather", '{"city": "Paris"}'), Call("get_weather", '{"city": "Tokyo", "unit": "c"}'),
                     Call("get_time", '{"timezone": "Europe/Paris"}')]),
             tools=[WEATHER, TIME]),
        Conv("history_calls_n2",
             lead + [{"role": "user", "content": "Weather in Paris and Rome?"},
                     hmsg(None, [history_call("functions.get_weather:0", "get_weather", '{"city": "Paris"}'),
                                 history_call("functions.get_weather:1", "get_weather", '{"city": "Rome"}')],
                          "Two cities."),
                     tool_msg("functions.get_weather:0", "get_weather", '{"temp": 21, "sky": "sunny"}'),
                     tool_msg("functions.get_weather:1", "get_weather", '{"temp": 25, "sky": "clear"}'),
                     {"role": "assistant", "content": "Paris: 21 °C, sunny. Rome: 25 °C, clear."},
                     {"role": "user", "content": "And Oslo? Also the time there."}],
             Answer("New lookups for Oslo; this is the third and fourth call overall.", "",
                    [Call("get_weather", '{"city": "Oslo"}'), Call("get_time", '{"timezone": "Europe/Oslo"}')]),
             tools=[WEATHER, TIME]),
        Conv("chain_suffix_n1",
             lead + [{"role": "user", "content": "Check the weather in Berlin, then tell me the local time."},
                     hmsg(None, [history_call("functions.get_weather:0", "get_weather", '{"city": "Berlin"}')],
                          "Weather first."),
                     tool_msg("functions.get_weather:0", "get_weather", '{"temp": 12, "sky": "rain"}')],
             Answer("Now the time in Berlin.", "It is raining in Berlin; checking the time.",
                    [Call("get_time", '{"timezone": "Europe/Berlin"}')]),
             tools=[WEATHER, TIME]),
        Conv("history_call_ids",  # history ids as OpenRouter returned them; N still counts them
             lead + [{"role": "user", "content": "Search for Rust async books."},
                     hmsg("Searching.", [history_call("call_8f1c2a9e0b7d4c3a5e6f7a8b", "search",
                                                      '{"query": "Rust async books"}')]),
                     tool_msg("call_8f1c2a9e0b7d4c3a5e6f7a8b", "search", "1. Asynchronous Programming in Rust"),
                     {"role": "user", "content": "Now search the same in German, 3 results."}],
             Answer("Same search in German, limit 3.", "",
                    [Call.obj("search", {"query": "Rust async Bücher", "limit": 3})]),
             tools=[SEARCH]),
        Conv("multiline_args",
             lead + [{"role": "user", "content": "Create hello.py that prints héllo."}],
             Answer("Write the file with a main function.", "",
                    [Call("write_file", json.dumps({"path": "hello.py",
                                                    "content": "def main():\n    print(\"héllo\")\n\n\nmain()\n"},
                                                   ensure_ascii=False, indent=2))]),
             tools=[WRITE_FILE]),
        Conv("non_ascii_args",
             lead + [{"role": "user", "content": "東京の天気を検索して"}],
             Answer("日本語で検索する。", "検索します。",
                    [Call.obj("search", {"query": "東京 天気 ☀️", "limit": 5})]),
             tools=[SEARCH]),
    ]
    if fam is KIMI_K25:
        convs += [
            Conv("thinking_off", [sys_msg, {"role": "user", "content": "Say hi in French."}],
                 Answer(None, "Salut !"), kwargs={"thinking": False}),
            Conv("thinking_off_call", [sys_msg, {"role": "user", "content": "Weather in Lyon?"}],
                 Answer(None, "", [Call("get_weather", '{"city": "Lyon"}')]), tools=[WEATHER],
                 kwargs={"thinking": False}),
        ]
    if fam.think == "none":
        convs = [replace(c, answer=replace(c.answer, reasoning=None)) for c in convs]
    return convs


def kimi_family_cases(fam: KimiFamily) -> Writer:
    w = Writer(fam.key)
    convs = kimi_convs(fam)
    by_slug = {c.slug: c for c in convs}
    thinks = fam.think != "none"

    shapes = ["openrouter", "vllm", "raw", "raw_spaces"]
    if thinks:
        shapes += ["vllm_old", "think_in_content"]
    for i, conv in enumerate(convs):
        for shape in shapes:
            if shape in ("vllm_old", "think_in_content") and not kimi_thinks(fam, conv.kwargs):
                continue
            # OpenRouter content for tool-call-only answers: alternate "" and null.
            kimi_emit(w, fam, conv, shape, content_empty="" if i % 2 else None)
        if conv.answer.calls and all(_is_json(c.args) and c.args == json.dumps(json.loads(c.args), ensure_ascii=False)
                                     for c in conv.answer.calls):
            kimi_emit(w, fam, conv, "args_object")

    # 7. arguments as objects: a conversation whose ARGS are exactly tojson's output.
    obj_conv = Conv("object_args", ([{"role": "system", "content": "You are concise."}] if fam is KIMI_K25 else [])
                    + [{"role": "user", "content": "Weather in Zürich in °F, and search for fondue."}],
                    Answer("Two calls." if thinks else None, "",
                           [Call.obj("get_weather", {"city": "Zürich", "unit": "f"}),
                            Call.obj("search", {"query": "fondue \"moitié-moitié\"", "limit": 2})]),
                    tools=[WEATHER, SEARCH])
    kimi_emit(w, fam, obj_conv, "args_object")
    kimi_emit(w, fam, obj_conv, "vllm")

    # 9. length stops.
    base = by_slug["non_ascii"]
    stream = kimi_stream_text(fam, base)
    if thinks:
        r_ids = kimi_encode((THINK if fam.think == "emitted" else "") + base.answer.reasoning)
        mid_reasoning = len(r_ids) // 2
        for shape in ("openrouter", "vllm", "raw"):
            kimi_emit(w, fam, base, shape, length_at=mid_reasoning, variant="length_mid_reasoning")
        # Without usage a reasoning-only length stop is ambiguous; the expected form has no </think>.
        truth = kimi_truth(fam, base, mid_reasoning)
        kimi_emit(w, fam, base, "openrouter", length_at=mid_reasoning, with_usage=False,
                  variant="length_mid_reasoning+no_usage", ambiguous=True, expected_override=truth.completion_ids)
        # Stop right at </think>.
        at_end = len(r_ids) + 1
        truth_end = kimi_truth(fam, base, at_end)
        assert kimi_decode(truth_end.completion_ids).endswith(END_THINK), stream
        for shape in ("openrouter", "vllm", "raw", "raw_spaces"):
            kimi_emit(w, fam, base, shape, length_at=at_end, variant="length_at_think_end")
        kimi_emit(w, fam, base, "vllm", length_at=at_end, with_usage=False, ambiguous=True,
                  variant="length_at_think_end+no_usage",
                  expected_override=truth_end.completion_ids[:-1])
        mid_content = len(r_ids) + 1 + 4
    else:
        mid_content = 4
    for shape in ("openrouter", "vllm", "raw", "raw_spaces"):
        kimi_emit(w, fam, base, shape, length_at=mid_content, variant="length_mid_content")
    if thinks:
        kimi_emit(w, fam, base, "think_in_content", length_at=mid_content, variant="length_mid_content")
    kimi_emit(w, fam, base, "vllm", length_at=mid_content, with_usage=False,
              variant="length_mid_content+no_usage")  # content present: unambiguous

    # 8. Tool section opened inside reasoning (no </think>), and its mirror.
    if thinks:
        for slug in ("single_call", "parallel_calls", "history_calls_n2"):
            conv = by_slug[slug]
            open_conv = replace(conv, slug=slug + "_in_reasoning", answer=replace(conv.answer, closed=False))
            with_close = kimi_truth(fam, conv).completion_ids
            without = kimi_truth(fam, open_conv).completion_ids
            assert len(without) == len(with_close) - 1
            for shape in ("openrouter", "vllm"):
                kimi_emit(w, fam, open_conv, shape)  # with usage: the true (no </think>) ids
            kimi_emit(w, fam, open_conv, "vllm_old", with_usage=False, ambiguous=True, variant="no_usage",
                      expected_override=with_close)  # template form
            kimi_emit(w, fam, open_conv, "raw")
            kimi_emit(w, fam, open_conv, "raw_spaces")
            kimi_emit(w, fam, conv, "openrouter", with_usage=False, ambiguous=True, variant="no_usage")  # true = template form

    # 10. content null with tool calls / text before the section: covered above (alternating
    # content ""/null on tool-only answers; content_then_call, chain_suffix_n1, non_ascii_args).

    # 11. Special-token literal typed as text.
    lead = [{"role": "system", "content": "You are concise."}] if fam is KIMI_K25 else []
    lit = Conv("special_literal", lead + [{"role": "user", "content": "How does a Kimi turn end?"}],
               Answer("Explain the end marker." if thinks else None,
                      "Each turn ends with:\n```\n<|im_end|>\n```\nand tools use [EOS]-free markers."))
    for shape in ("openrouter", "vllm"):
        kimi_emit(w, fam, lit, shape, warnings=["special-token literal"])

    # 12. Usage disagreeing with the true length.
    for delta in (3, -1):
        kimi_emit(w, fam, by_slug["system_multiturn"], "openrouter", usage_delta=delta, variant=f"usage_off_by_{delta}",
                  warnings=["completion_tokens"])
    return w


def _is_json(s: str) -> bool:
    try:
        json.loads(s)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# Qwen3 and DeepSeek-V3
# ---------------------------------------------------------------------------------------------


@dataclass
class HfAnswer:
    reasoning: str | None = None
    content: str | None = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)  # (name, arguments: dict or str)


@dataclass
class HfConv:
    slug: str
    messages: list[dict]
    answer: HfAnswer
    tools: list[dict] | None = None
    kwargs: dict = field(default_factory=dict)


def hf_truth(model: str, end_token: str, conv: HfConv, length_at: int | None = None) -> tuple[Truth, str]:
    tok = hf_tokenizer(model)
    render = hf_render_keep_none if model == "deepseek-v3" else hf_render
    gen, prompt_ids = render(model, conv.messages, conv.tools, add_generation_prompt=True, **conv.kwargs)
    a = conv.answer
    msg: dict[str, Any] = {"role": "assistant", "content": a.content}
    if a.reasoning is not None:
        msg["reasoning_content"] = a.reasoning
    if a.calls:
        msg["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": args}}
                             for i, (n, args) in enumerate(a.calls)]
    full, _ = render(model, conv.messages + [msg], conv.tools, add_generation_prompt=False, **conv.kwargs)
    assert full.startswith(gen), conv.slug
    tail = full[len(gen):]
    cut = tail.index(end_token) + len(end_token)
    stream = tail[:cut]
    full_ids = tok.encode(stream, add_special_tokens=False)
    end_id = tok.convert_tokens_to_ids(end_token)
    assert full_ids[-1] == end_id and end_id not in full_ids[:-1], conv.slug

    def decode(ids: list[int]) -> str:
        text = tok.decode(ids, skip_special_tokens=False)
        if "\ufffd" in text:
            raise UnicodeDecodeError("utf-8", b"", 0, 1, "partial character")
        return text

    def encode(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False)

    if length_at is None:
        ids, finish, body = full_ids, "stop", stream[: -len(end_token)]
    else:
        ids = cut_length(full_ids[:-1], decode, encode, length_at)
        finish, body = "length", decode(ids)
    reasoning_tokens = len(encode(a.reasoning)) if a.reasoning else 0
    return Truth(prompt_ids, len(prompt_ids), ids, body, finish, reasoning_tokens), stream


QWEN_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)


def qwen_parse(body: str, reasoning_parser: bool) -> Parsed:
    """vLLM qwen3 reasoning parser (partition on <think> / </think>, no strip; content None if
    empty) then the hermes tool parser (content before the first <tool_call>, None if empty;
    arguments re-serialized with json.dumps(ensure_ascii=False))."""
    reasoning: str | None = None
    content: str | None = body
    if reasoning_parser:
        before, sep, after = body.partition(THINK)
        rest = after if sep else before
        if END_THINK in rest:
            reasoning, _, content = rest.partition(END_THINK)
            content = content or None
        else:
            reasoning, content = rest, None
    calls: list[tuple[str, str]] = []
    names: list[str] = []
    if content is not None and "<tool_call>" in content:
        for m in QWEN_CALL_RE.findall(content):
            obj = json.loads(m[0] if m[0] else m[1])
            names.append(obj["name"])
            calls.append(("", json.dumps(obj["arguments"], ensure_ascii=False)))
        content = content[: content.find("<tool_call>")] or None
    return Parsed(reasoning, content, calls, names)


# vLLM's deepseek_v3 regex, but with DOTALL and lazy groups: upstream's `.*` without DOTALL
# finds no call whose arguments span lines (the server then drops them), which no
# reconstruction can undo; these cases model a parser that keeps them (OpenRouter's providers).
DS_CALL_RE = re.compile(
    r"<｜tool▁call▁begin｜>(?P<type>.*?)<｜tool▁sep｜>(?P<function_name>.*?)\n```json\n"
    r"(?P<function_arguments>.*?)\n```<｜tool▁call▁end｜>",
    re.DOTALL,
)


def deepseek_parse(body: str) -> Parsed:
    """deepseek_v3 tool parser: content before <｜tool▁calls▁begin｜> (None if empty), raw
    arguments from the fenced json block."""
    if DS_CALLS_BEGIN not in body:
        return Parsed(None, body or None, [], [])
    content = body[: body.find(DS_CALLS_BEGIN)] or None
    matches = list(DS_CALL_RE.finditer(body))
    return Parsed(None, content, [("", m["function_arguments"]) for m in matches],
                  [m["function_name"] for m in matches])


def hf_message(flavour: str, family: str, name: str, parsed: Parsed, content_empty: str | None,
               object_args: bool = False) -> dict:
    msg: dict[str, Any] = {"role": "assistant"}
    content = parsed.content
    if content is None and flavour == "openrouter" and parsed.calls:
        content = content_empty
    msg["content"] = content
    if flavour == "openrouter":
        msg["refusal"] = None
        msg["reasoning"] = parsed.reasoning
        if parsed.reasoning is not None:
            msg["reasoning_details"] = [{"type": "reasoning.text", "text": parsed.reasoning,
                                         "format": "unknown", "index": 0}]
    elif family == "qwen3":
        msg["reasoning"] = parsed.reasoning
    calls = []
    for i, ((_, args), fname) in enumerate(zip(parsed.calls, parsed.names)):
        if flavour == "openrouter" or family == "deepseek_v3":
            call_id = f"call_{stable_hex(name, str(i))}"
        else:
            call_id = f"chatcmpl-tool-{stable_hex(name, str(i), n=32)}"
        calls.append({"id": call_id, "type": "function", "index": i,
                      "function": {"name": fname, "arguments": json.loads(args) if object_args else args}})
    msg["tool_calls"] = calls
    return msg


@dataclass(frozen=True)
class HfFamily:
    key: str
    profile: str
    model: str
    end_token: str
    model_slug: str
    server_model: str
    provider: str


QWEN3 = HfFamily("qwen3", "qwen3", "qwen3", QWEN_IM_END, "qwen/qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", "DeepInfra")
DEEPSEEK_V3 = HfFamily("deepseek_v3", "deepseek-v3", "deepseek-v3", DS_EOS, "deepseek/deepseek-chat-v3-0324",
                       "deepseek-ai/DeepSeek-V3-0324", "DeepInfra")


def hf_emit(w: Writer, fam: HfFamily, conv: HfConv, shape: str, *, length_at: int | None = None,
            with_usage: bool = True, usage_delta: int = 0, warnings: list[str] | None = None,
            content_empty: str | None = "", variant: str = "") -> None:
    truth, _ = hf_truth(fam.model, fam.end_token, conv, length_at)
    slug = conv.slug + (f"+{variant}" if variant else "")
    name = f"{fam.key}/{shape}/{slug}/{len(w.cases)}"
    if shape == "raw":
        flavour = "vllm"
        message = {"role": "assistant", "content": truth.body, "tool_calls": []}
        if fam is QWEN3:
            message["reasoning"] = None
        finish = truth.finish
    else:
        flavour = "openrouter" if shape in ("openrouter", "args_object") else "vllm"
        if fam is QWEN3:
            thinking = conv.kwargs.get("enable_thinking", True) is not False
            parsed = qwen_parse(truth.body, reasoning_parser=thinking)
        else:
            parsed = deepseek_parse(truth.body)
        message = hf_message(flavour, fam.key, name, parsed, content_empty, object_args=shape == "args_object")
        finish = truth.finish if truth.finish == "length" else ("tool_calls" if parsed.calls else "stop")
    usage = usage_block(truth, flavour, len(truth.completion_ids) + usage_delta) if with_usage else None
    model_name = fam.model_slug if flavour == "openrouter" else fam.server_model
    case: dict[str, Any] = {"profile": fam.profile, "model": fam.model, "request": {}}
    req: dict[str, Any] = {"messages": copy.deepcopy(conv.messages)}
    if conv.tools:
        req["tools"] = copy.deepcopy(conv.tools)
    if conv.kwargs:
        req["chat_template_kwargs"] = dict(conv.kwargs)
    case["request"] = req
    case["response"] = response_json(name, flavour, model_name, message, finish, usage,
                                     fam.provider if flavour == "openrouter" else None)
    expected: dict[str, Any] = {"prompt_ids": truth.prompt_ids, "completion_ids": truth.completion_ids,
                                "ambiguous": False}
    if warnings:
        expected["warnings_contain"] = warnings
    case["expected"] = expected
    w.add(shape, slug, case)


def qwen_cases() -> Writer:
    w = Writer("qwen3")
    sys_msg = {"role": "system", "content": "You are concise."}
    convs = [
        HfConv("no_tools_simple", [{"role": "user", "content": "What is 2+2?"}],
               HfAnswer("Two plus two equals four.", "Four.")),
        HfConv("system_multiturn",
               [sys_msg, {"role": "user", "content": "Name a prime number."},
                {"role": "assistant", "content": "Seven."}, {"role": "user", "content": "Another one."}],
               HfAnswer("A different prime.\nEleven.", "Eleven.")),
        HfConv("non_ascii", [{"role": "user", "content": "用中文解释递归🙂"}],
               HfAnswer("用户想要中文解释 — déjà vu.", "递归就是函数调用自身。🌀\n例如 n! = n × (n-1)!")),
        HfConv("single_call", [{"role": "user", "content": "Weather in Paris?"}],
               HfAnswer("Call get_weather.", "", [("get_weather", {"city": "Paris"})]), tools=[WEATHER]),
        HfConv("content_then_call", [{"role": "user", "content": "Time in Tokyo?"}],
               HfAnswer("Use get_time.", "Let me check.", [("get_time", {"timezone": "Asia/Tokyo"})]),
               tools=[WEATHER, TIME]),
        HfConv("parallel_calls", [{"role": "user", "content": "Weather in Paris and Tokyo, time in Paris?"}],
               HfAnswer("Three lookups.", "",
                        [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo", "unit": "c"}),
                         ("get_time", {"timezone": "Europe/Paris"})]),
               tools=[WEATHER, TIME]),
        HfConv("history_tool_turn",
               [{"role": "user", "content": "Weather in Berlin, then the time there."},
                {"role": "assistant", "content": "", "reasoning_content": "Weather first.",
                 "tool_calls": [{"id": "call_0", "type": "function",
                                 "function": {"name": "get_weather", "arguments": {"city": "Berlin"}}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": '{"temp": 12, "sky": "rain"}'}],
               HfAnswer("Now the time.", "Raining; checking the time.", [("get_time", {"timezone": "Europe/Berlin"})]),
               tools=[WEATHER, TIME]),
        HfConv("multiline_args", [{"role": "user", "content": "Create hello.py printing héllo."}],
               HfAnswer("Write it.", "", [("write_file", {"path": "hello.py",
                                                          "content": "def main():\n    print(\"héllo\")\n"})]),
               tools=[WRITE_FILE]),
        HfConv("non_ascii_args", [{"role": "user", "content": "東京の天気を検索して"}],
               HfAnswer("日本語で検索。", "", [("search", {"query": "東京 天気 ☀️", "limit": 5})]), tools=[SEARCH]),
        HfConv("thinking_off", [{"role": "user", "content": "Say hi in French."}],
               HfAnswer("", "Salut !"), kwargs={"enable_thinking": False}),
    ]
    for i, conv in enumerate(convs):
        for shape in ("openrouter", "vllm", "raw"):
            hf_emit(w, QWEN3, conv, shape, content_empty="" if i % 2 else None)
        if conv.answer.calls:
            hf_emit(w, QWEN3, conv, "args_object")
    by_slug = {c.slug: c for c in convs}
    base = by_slug["non_ascii"]
    r_len = len(hf_tokenizer("qwen3").encode(THINK + "\n" + base.answer.reasoning, add_special_tokens=False))
    hf_emit(w, QWEN3, base, "raw", length_at=r_len // 2, variant="length_mid_reasoning")  # mid-reasoning: raw only (parser versions differ)
    for shape in ("openrouter", "vllm", "raw"):
        hf_emit(w, QWEN3, base, shape, length_at=r_len + 6, variant="length_mid_content")  # mid-content
    lit = HfConv("special_literal", [{"role": "user", "content": "How does a Qwen turn start?"}],
                 HfAnswer("Explain.", "With `<|im_start|>` and the role name."))
    hf_emit(w, QWEN3, lit, "vllm", warnings=["special-token literal"])
    hf_emit(w, QWEN3, by_slug["system_multiturn"], "openrouter", usage_delta=2, variant="usage_off_by_2", warnings=["completion_tokens"])
    return w


def deepseek_cases() -> Writer:
    w = Writer("deepseek_v3")
    sys_msg = {"role": "system", "content": "You are concise."}

    def two_calls(*calls: tuple[str, str]) -> HfAnswer:
        return HfAnswer(None, None, list(calls))

    convs = [
        HfConv("no_tools_simple", [{"role": "user", "content": "What is 2+2?"}], HfAnswer(None, "Four.")),
        HfConv("system_multiturn",
               [sys_msg, {"role": "user", "content": "Name a prime number."},
                {"role": "assistant", "content": "Seven."}, {"role": "user", "content": "Another one."}],
               HfAnswer(None, "Eleven.")),
        HfConv("non_ascii", [{"role": "user", "content": "用中文解释递归🙂"}],
               HfAnswer(None, "递归就是函数调用自身。🌀\n例如 n! = n × (n-1)!")),
        HfConv("parallel_calls", [{"role": "user", "content": "Weather in Paris and Tokyo?"}],
               two_calls(("get_weather", '{"city": "Paris"}'), ("get_weather", '{"city":"Tokyo","unit":"c"}')),
               tools=[WEATHER]),
        HfConv("parallel_mixed", [sys_msg, {"role": "user", "content": "Weather and time in Oslo?"}],
               two_calls(("get_weather", '{"city": "Oslo"}'), ("get_time", '{"timezone": "Europe/Oslo"}')),
               tools=[WEATHER, TIME]),
        HfConv("multiline_args", [{"role": "user", "content": "Create two files."}],
               two_calls(("write_file", json.dumps({"path": "a.py", "content": "print(1)\n"}, indent=2)),
                         ("write_file", '{\n  "path": "b.txt",\n  "content": "héllo 東京"\n}')),
               tools=[WRITE_FILE]),
        HfConv("after_tool_outputs",
               [{"role": "user", "content": "Weather in Paris and Rome?"},
                {"role": "assistant", "content": None,
                 "tool_calls": [history_call("call_0", "get_weather", '{"city": "Paris"}'),
                                history_call("call_1", "get_weather", '{"city": "Rome"}')]},
                {"role": "tool", "tool_call_id": "call_0", "content": '{"temp": 21}'},
                {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 25}'}],
               HfAnswer(None, "Paris 21 °C, Rome 25 °C."), tools=[WEATHER]),
    ]
    for i, conv in enumerate(convs):
        for shape in ("openrouter", "vllm", "raw"):
            hf_emit(w, DEEPSEEK_V3, conv, shape, content_empty="" if i % 2 else None)
    by_slug = {c.slug: c for c in convs}
    for shape in ("openrouter", "vllm", "raw"):
        hf_emit(w, DEEPSEEK_V3, by_slug["non_ascii"], shape, length_at=6, variant="length_mid_content")
    lit = HfConv("special_literal", [{"role": "user", "content": "What ends a DeepSeek turn?"}],
                 HfAnswer(None, "The token <｜end▁of▁sentence｜> written out."))
    # The literal IS the end token: the reference render cuts there, so build this one by hand
    # from the serving tokenizer's encode of the content (special id) + the real end token.
    hf_emit_literal(w, lit)
    hf_emit(w, DEEPSEEK_V3, by_slug["system_multiturn"], "vllm", usage_delta=4, variant="usage_off_by_4", warnings=["completion_tokens"])
    return w


def hf_emit_literal(w: Writer, conv: HfConv) -> None:
    """DeepSeek content holding the end-of-sentence literal: completion = the serving tokenizer's
    encode of content + `<｜end▁of▁sentence｜>` (the template writes exactly that; its first
    end literal is inside the content, so the generic cut cannot be used)."""
    fam = DEEPSEEK_V3
    tok = hf_tokenizer(fam.model)
    gen, prompt_ids = hf_render_keep_none(fam.model, conv.messages, None, add_generation_prompt=True)
    msg = {"role": "assistant", "content": conv.answer.content}
    full, _ = hf_render_keep_none(fam.model, conv.messages + [msg], None, add_generation_prompt=False)
    stream = conv.answer.content + DS_EOS
    assert full == gen + stream
    ids = tok.encode(stream, add_special_tokens=False)
    truth = Truth(prompt_ids, len(prompt_ids), ids, conv.answer.content, "stop", 0)
    name = f"{fam.key}/vllm/{conv.slug}/{len(w.cases)}"
    message = {"role": "assistant", "content": conv.answer.content, "tool_calls": []}
    case = {"profile": fam.profile, "model": fam.model,
            "request": {"messages": copy.deepcopy(conv.messages)},
            "response": response_json(name, "vllm", fam.server_model, message, "stop",
                                      usage_block(truth, "vllm"), None),
            "expected": {"prompt_ids": prompt_ids, "completion_ids": ids, "ambiguous": False,
                         "warnings_contain": ["special-token literal"]}}
    w.add("vllm", conv.slug, case)


# ---------------------------------------------------------------------------------------------


def main() -> None:
    check_ts_against_golden()
    writers = [kimi_family_cases(f) for f in (KIMI_K2, KIMI_K2_THINKING, KIMI_K25)]
    writers += [qwen_cases(), deepseek_cases()]
    print(f"{'family':<18}{'cases':>6}  {'ambiguous':>9}  {'no prompt_ids':>13}  shapes")
    for w in writers:
        w.write()
        shapes = Counter(c["name"].split("/")[1] for c in w.cases)
        amb = sum(c["expected"]["ambiguous"] for c in w.cases)
        nop = sum("prompt_ids" not in c["expected"] for c in w.cases)
        print(f"{w.family:<18}{len(w.cases):>6}  {amb:>9}  {nop:>13}  "
              + ", ".join(f"{k}={v}" for k, v in sorted(shapes.items())))
    print(f"written to {OUT_DIR}")


if __name__ == "__main__":
    main()
