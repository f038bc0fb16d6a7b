#!/usr/bin/env python3
"""Render parity corpora for DeepSeek-V3.2: tests/data/parity/render_deepseek_v32.jsonl and
render_deepseek_v32_llama_cpp.jsonl.

DeepSeek-V3.2 ships no Jinja template: its prompt is made by Python, `encoding/encoding_dsv32.py`
of deepseek-ai/DeepSeek-V3.2, which vLLM copies (`tokenizers/deepseek_v32_encoding.py`) and runs
through its own `apply_chat_template` wrapper (`tokenizers/deepseek_v32.py`): tools become a
first system message, thinking is `thinking or enable_thinking`. SGLang 0.5.23 vendors the same
encoding (`entrypoints/openai/encoding_dsv32.py`), reading history reasoning from
`reasoning_content` where vLLM reads `reasoning`.

1. render_deepseek_v32.jsonl: that wrapper, from the pinned vLLM 0.33.0 wheel (fetched and
   sha256-checked by make_server_corpus.py's `fetch_wheel`; heavy dependencies stubbed by
   server_stubs/autostub.py), wrapping DeepSeek-V3.2's tokenizer (reference.py's
   `hf_tokenizer` on assets/deepseek-v3.2, see tests/assets/README.md), rendering generated conversations. draftgen's built-in template
   (src/model/family/templates/deepseek-v3.2.jinja, a rendition of the encoding) must match it.
   The messages are those vLLM hands the encoding (see make_client_messages.py): content a
   string, tool-call arguments objects, and history reasoning under `reasoning` (vLLM's
   `parse_chat_message_content` reads only that key). Conversations the encoding refuses (an
   answer after the last user turn without reasoning or calls in thinking mode) are dropped.
2. render_deepseek_v32_llama_cpp.jsonl: transformers (`render_jinja_template`, as
   `apply_chat_template` does) with llama.cpp's `models/templates/deepseek-ai-DeepSeek-V3.2.jinja`
   as vendored in PyPI `llama-cpp-python` 0.3.36 (tests/assets/templates/deepseek-v3.2-llama.cpp.jinja,
   MIT), on the same kind of conversations (reasoning under `reasoning_content`, which it reads).

A row whose messages the client wrote otherwise (content missing, null or a list of parts,
arguments as JSON strings) also holds them as `client_messages`: draftgen must render those alike.

Each row of corpus 1 also holds `sglang_text`: what SGLang 0.5.23's copy of the encoding renders
for the same request as its `serving_chat.py` feeds it (an empty system message first unless the
request has one, the tools hung on that first system message, history reasoning under
`reasoning_content`; the thinking switch as vLLM reads it). tests/deepseek_v32.rs checks that the
two differ only where the family says so (`FamilyRules::prompt_doubt`).

Each row's `python_text` (corpus 2) is what the Python encoding renders for the same request, so
the corpus also shows where llama.cpp's rendition differs from DeepSeek's encoding.
Run from the repository root.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_parity import seeded  # noqa: E402
from make_server_corpus import setup_imports  # noqa: E402
from parity_common import make_corpus, server_messages  # noqa: E402
from reference import REPO_ROOT, hf_tokenizer  # noqa: E402

BUILTIN = "templates/deepseek-v3.2.jinja"
LLAMA_CPP = "templates/deepseek-v3.2-llama.cpp.jinja"
PARITY = REPO_ROOT / "tests" / "data" / "parity"


def reasoning_under(reasoning_key: str):
    """A message edit: history reasoning under the key the reference reads."""
    def edit(_i: int, message: dict) -> None:
        if "reasoning_content" in message and reasoning_key != "reasoning_content":
            message[reasoning_key] = message.pop("reasoning_content")
    return edit


def encoding_messages(messages: list[dict], reasoning_key: str) -> list[dict]:
    """What the servers hand the encoding: parity_common.py's `server_messages` (arguments that
    are not an object become `{}`), reasoning under `reasoning_key`."""
    return server_messages(messages, objects_only=True, edit=reasoning_under(reasoning_key))


def client_messages(messages: list[dict], reasoning_key: str) -> list[dict]:
    """The messages as the client wrote them (content missing, null or a list of parts, arguments
    as JSON strings or objects), reasoning under the key the reference reads."""
    out = copy.deepcopy(messages)
    for i, message in enumerate(out):
        reasoning_under(reasoning_key)(i, message)
    return out


def thinking_kwargs(rng) -> dict:
    choice = rng.random()
    if choice < 0.3:
        return {"thinking": True}
    if choice < 0.45:
        return {"enable_thinking": True}
    if choice < 0.7:
        return {"thinking": False}
    return {}


def python_render(tok, case) -> str:
    return tok.apply_chat_template(copy.deepcopy(case["messages"]), tools=case.get("tools"),
                                   tokenize=False,
                                   add_generation_prompt=case["add_generation_prompt"],
                                   **case.get("chat_template_kwargs", {}))


def sglang_encoding():
    import importlib.util

    from make_server_corpus import fetch_wheel

    path = fetch_wheel("sglang") / "sglang" / "srt" / "entrypoints" / "openai" / "encoding_dsv32.py"
    spec = importlib.util.spec_from_file_location("sglang_encoding_dsv32", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sglang_render(encoding, case) -> str | None:
    messages = copy.deepcopy(case["messages"])
    for message in messages:
        if "reasoning" in message:
            message["reasoning_content"] = message.pop("reasoning")
    if not messages or messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": ""})
    if case.get("tools"):
        messages[0]["tools"] = case["tools"]
    kwargs = case.get("chat_template_kwargs", {})
    thinking = kwargs.get("thinking", False) or kwargs.get("enable_thinking", False)
    try:
        return encoding.encode_messages(messages, thinking_mode="thinking" if thinking else "chat")
    except Exception:  # noqa: BLE001 - SGLang refuses it too
        return None


def corpus(name: str, template: str, reasoning_key: str, render_text, extra) -> list[dict]:
    """parity_common.py's corpus of `template`'s renders (by `render_text`, else transformers'),
    each row also holding the client's messages where they differ, then `extra(case, text)`."""
    rng = seeded(f"render:{name}")
    written = {}  # the client's messages of the case being drawn, from `prepare` to `finish`

    def prepare(case: dict) -> None:
        kwargs = thinking_kwargs(rng)
        if kwargs:
            case["chat_template_kwargs"] = kwargs
        written["messages"] = client_messages(case["messages"], reasoning_key)
        case["messages"] = encoding_messages(case["messages"], reasoning_key)

    def finish(case: dict, text: str, ids: list[int]) -> dict:
        row = {"text": text, "ids": ids}
        if written["messages"] != case["messages"]:
            row["client_messages"] = written["messages"]
        return {**row, **extra(case, text)}

    def render_case(case: dict) -> tuple[str, list[int]]:
        text = render_text(case)
        return text, hf_tokenizer("deepseek-v3.2").encode(text, add_special_tokens=False)

    return make_corpus(PARITY / f"render_{name}.jsonl", rng, "deepseek-v3.2", template, prepare,
                       finish, render_case=render_case if render_text else None)


def main() -> None:
    setup_imports()
    from vllm.tokenizers.deepseek_v32 import get_deepseek_v32_tokenizer

    dsv32 = get_deepseek_v32_tokenizer(hf_tokenizer("deepseek-v3.2"))
    sglang = sglang_encoding()
    corpus("deepseek_v32", BUILTIN, "reasoning", lambda case: python_render(dsv32, case),
           lambda case, text: {"sglang_text": sglang_render(sglang, case)})

    differ = {"n": 0}  # how many of the llama.cpp renders the encoding writes otherwise

    def python_text(case, text):
        python_case = {**case, "messages": encoding_messages(case["messages"], "reasoning")}
        try:
            python = python_render(dsv32, python_case)
        except Exception as error:  # noqa: BLE001 - the encoding refuses it: say so
            return {"python_text": None, "python_error": type(error).__name__}
        differ["n"] += python != text
        return {"python_text": python}

    rows = corpus("deepseek_v32_llama_cpp", LLAMA_CPP, "reasoning_content", None, python_text)
    print(f"llama.cpp's template differs from the Python encoding on {differ['n']} of {len(rows)}")


if __name__ == "__main__":
    main()
