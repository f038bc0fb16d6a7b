#!/usr/bin/env python3
"""The prompt ids vLLM 0.33.0 renders for gpt-oss itself (its harmony path, not the chat template):
tests/data/gpt_oss/vllm_prompts.jsonl, read by tests/gpt_oss.rs.

For every conversation of tests/data/parity/render_gpt_oss.jsonl that asks for a generation
prompt, runs what vLLM's `OnlineRenderer` does for a gpt-oss chat request
(`renderers/online_renderer.py`): `extract_instructions_from_messages`, `build_harmony_preamble`
(the request's `reasoning_effort` = the row's `reasoning_effort` kwarg), then
`parse_chat_inputs_to_harmony_messages` and `render_for_completion`
(`entrypoints/openai/parser/harmony_utils.py`), with OpenAI's `openai_harmony` and
`VLLM_SYSTEM_START_DATE` pinned to the row's `date`. Tool-call arguments go in as a client sends
them (`json.dumps` of the row's objects). The code is the pinned wheel's (make_server_corpus.py's
`fetch_wheel`); `o200k_base.tiktoken` is written as make_gpt_oss_shapes.py writes it.
Run from the repository root, with `openai-harmony` importable.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_gpt_oss_shapes import write_o200k  # noqa: E402
from make_server_corpus import setup_imports  # noqa: E402
from reference import REPO_ROOT  # noqa: E402

CORPUS = REPO_ROOT / "tests" / "data" / "parity" / "render_gpt_oss.jsonl"
OUT = REPO_ROOT / "tests" / "data" / "gpt_oss" / "vllm_prompts.jsonl"


def client_messages(messages: list[dict]) -> list[dict]:
    out = []
    for message in json.loads(json.dumps(messages)):
        for call in message.get("tool_calls") or []:
            if not isinstance(call["function"]["arguments"], str):
                call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
        out.append(message)
    return out


def tool_params(tools: list[dict] | None):
    """The request's `tools` as vLLM's request model reads them."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionToolsParam

    return None if tools is None else [ChatCompletionToolsParam.model_validate(t) for t in tools]


def main() -> None:
    encodings = Path(tempfile.mkdtemp(prefix="o200k-"))
    write_o200k(encodings)
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(encodings)
    os.environ["TIKTOKEN_RS_CACHE_DIR"] = str(encodings / "cache")
    import openai_harmony  # noqa: F401  (the real one, before the stubs)

    setup_imports()
    from vllm.entrypoints.openai.parser import harmony_utils as hu

    rows = []
    for line_number, line in enumerate(CORPUS.read_text(encoding="utf-8").split("\n")[:-1], 1):
        case = json.loads(line)
        if not case["add_generation_prompt"]:
            continue
        os.environ["VLLM_SYSTEM_START_DATE"] = case["date"]
        effort = (case.get("chat_template_kwargs") or {}).get("reasoning_effort")
        messages = client_messages(case["messages"])
        instructions, rest = hu.extract_instructions_from_messages(messages)
        harmony = hu.build_harmony_preamble(
            instructions=instructions, tools=tool_params(case.get("tools")),
            reasoning_effort=effort, with_custom_tools=case.get("tools") is not None)
        harmony.extend(hu.parse_chat_inputs_to_harmony_messages(rest))
        ids = hu.render_for_completion(harmony)
        rows.append({"line": line_number, "ids": ids})
    with OUT.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(rows)} rows")


if __name__ == "__main__":
    main()
