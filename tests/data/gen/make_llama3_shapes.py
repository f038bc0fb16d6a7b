#!/usr/bin/env python3
"""What vLLM 0.33.0's own `llama3_json` tool parser answers for Llama 3.1 token streams:
tests/data/llama3/vllm_answers.jsonl, read by tests/llama3.rs.

Each case is a request and the text a Llama 3.1 model writes for it (with its special tokens:
`<|python_tag|>`, and `<|eot_id|>` / `<|eom_id|>` at its end, or none when `max_tokens` cut it).
The prompt is rendered by transformers with llama.cpp's 3.1 template (make_parity_llama3.py's
`render`), the completion encoded by the Llama 3.1 tokenizer (tests/assets/README.md): those are
the true ids. The text the parser reads is the completion without its stop token, decoded by
`tokenizers` with special tokens skipped (vLLM's default `skip_special_tokens=True`, which
`llama3_json` does not change), so `<|python_tag|>` never reaches it.

Runs `Llama3JsonToolParser` from `tool_parsers/llama_tool_parser.py` of the pinned wheel
(fetched and sha256-checked by make_server_corpus.py's `fetch_wheel`; heavy dependencies stubbed
by server_stubs/autostub.py): `extract_tool_calls` on the whole text, and
`extract_tool_calls_streaming` token by token (the stream assembled as a client does). The
answer is what vLLM's chat serving sends for it (`message_assembly.py`, `tool_calls_utils.py`'s
`resolve_finish_reason`: `tool_calls` only for an answer that stopped on its own; ids are
random, written here as `chatcmpl-tool-` and a counter). Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_parity_llama3 import render  # noqa: E402
from make_server_corpus import setup_imports  # noqa: E402
from reference import hf_raw_tokenizer  # noqa: E402
from shapes_common import write_rows  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "llama3" / "vllm_answers.jsonl"

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "number"}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {
            "q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]}}},
]
ASK = [{"role": "system", "content": "You are a helpful assistant."},
       {"role": "user", "content": "What is the weather in Paris?"}]
HISTORY = ASK + [
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
        "name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 22, "unit": "celsius"}'},
]
BUILTIN = {"builtin_tools": ["brave_search", "wolfram_alpha"]}
EOT, EOM = "<|eot_id|>", "<|eom_id|>"
PARIS = '{"name": "get_weather", "parameters": {"city": "Paris"}}'

# (name, messages, tools, chat_template_kwargs, the model's text, its end token or None: cut)
CASES = [
    ("plain", ASK, TOOLS, None, "The capital of France is Paris.", EOT),
    ("plain_no_tools", ASK, None, None, "It is sunny in Paris today.", EOT),
    ("braces_in_text", ASK, TOOLS, None, "Use {braces} freely.", EOT),
    ("call", ASK, TOOLS, None, PARIS, EOT),
    ("call_compact", ASK, TOOLS, None, '{"name":"get_weather","parameters":{"city":"Paris"}}', EOT),
    ("call_unicode", ASK, TOOLS, None, '{"name": "search", "parameters": {"q": "天气 à Paris", "n": 3}}', EOT),
    ("call_ascii_escapes", ASK, TOOLS, None, '{"name": "search", "parameters": {"q": "caf\\u00e9", "n": 3}}', EOT),
    ("call_number_spelling", ASK, TOOLS, None, '{"name": "get_weather", "parameters": {"city": "Paris", "days": 2.50}}', EOT),
    ("call_arguments_key", ASK, TOOLS, None, '{"name": "get_weather", "arguments": {"city": "Paris"}}', EOT),
    ("two_calls", ASK, TOOLS, None, PARIS + '; {"name": "search", "parameters": {"q": "Paris", "n": 1}}', EOT),
    ("text_before_call", ASK, TOOLS, None, "Let me check. " + PARIS, EOT),
    ("call_cut_inside", ASK, TOOLS, None, '{"name": "get_weather", "parameters": {"city": "Par', None),
    ("call_cut_after", ASK, TOOLS, None, PARIS, None),
    ("python_tag_call", ASK, TOOLS, BUILTIN, "<|python_tag|>" + PARIS, EOM),
    ("builtin_brave_search", ASK, TOOLS, BUILTIN, '<|python_tag|>brave_search.call(query="weather in Paris")', EOM),
    ("builtin_wolfram_alpha", ASK, None, BUILTIN, '<|python_tag|>wolfram_alpha.call(query="integrate x^2")', EOM),
    ("after_tool_result", HISTORY, TOOLS, None, "It is 22°C in Paris.", EOT),
    ("after_tool_result_call", HISTORY, TOOLS, None, '{"name": "search", "parameters": {"q": "Paris forecast", "n": 2}}', EOT),
]


class VocabOnly:
    """The parser only looks up its bot token's id."""

    def get_vocab(self):
        return {"<|python_tag|>": 128010}


def streamed(parser_cls, ids: list[int], tok) -> dict:
    """`extract_tool_calls_streaming` fed token by token, assembled as a client does."""
    parser = parser_cls(VocabOnly())
    content, calls, previous = "", {}, ""
    for i in range(len(ids)):
        current = tok.decode(ids[: i + 1], skip_special_tokens=True)
        delta = parser.extract_tool_calls_streaming(
            previous, current, current[len(previous):], ids[:i], ids[: i + 1], ids[i: i + 1], None)
        previous = current
        if delta is None:
            continue
        content += delta.content or ""
        for call in delta.tool_calls or []:
            slot = calls.setdefault(call.index, {"name": "", "arguments": ""})
            function = call.function if isinstance(call.function, dict) else call.function.model_dump()
            slot["name"] += function.get("name") or ""
            slot["arguments"] += function.get("arguments") or ""
    return {"content": content or None, "calls": [calls[k] for k in sorted(calls)]}


def answer(content, calls, finish, usage) -> dict:
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"chatcmpl-tool-{i:032x}", "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}} for i, c in enumerate(calls)]
    return {"object": "chat.completion", "model": "meta-llama/Llama-3.1-8B-Instruct",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}


def main() -> None:
    setup_imports()
    from vllm.tool_parsers.llama_tool_parser import Llama3JsonToolParser

    tok = hf_raw_tokenizer("llama3.1")
    rows = []
    for name, messages, tools, kwargs, text, end in CASES:
        _, prompt_ids = render(messages, tools, True, kwargs or {})
        model_ids = tok.encode(text, add_special_tokens=False).ids
        ids = model_ids + ([tok.token_to_id(end)] if end else [])
        seen = tok.decode(model_ids, skip_special_tokens=True)
        content, calls = seen, []
        if tools:
            info = Llama3JsonToolParser(VocabOnly()).extract_tool_calls(seen, request=None)
            if info.tools_called:
                content = info.content
                calls = [{"name": c.function.name, "arguments": c.function.arguments}
                         for c in info.tool_calls]
        engine_finish = "length" if end is None else "stop"
        finish = "tool_calls" if calls and engine_finish == "stop" else engine_finish
        usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids),
                 "total_tokens": len(prompt_ids) + len(ids)}
        row = {"name": name, "request": {"messages": messages, "tools": tools,
                                         "chat_template_kwargs": kwargs},
               "model_text": text, "end": end, "seen": seen, "prompt_ids": prompt_ids,
               "completion_ids": ids, "response": answer(content, calls, finish, usage)}
        if tools:
            s = streamed(Llama3JsonToolParser, model_ids, tok)
            s_finish = "tool_calls" if s["calls"] and engine_finish == "stop" else engine_finish
            row["streamed"] = answer(s["content"], s["calls"], s_finish, usage)
        rows.append({k: v for k, v in row.items() if v is not None})
    write_rows(OUT, rows)


if __name__ == "__main__":
    main()
