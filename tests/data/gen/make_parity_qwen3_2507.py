#!/usr/bin/env python3
"""Render parity corpora for Qwen3-2507 Instruct and Thinking:
tests/data/parity/render_qwen3_2507_{instruct,thinking}.jsonl.

Conversations from make_parity.py's generator (tools, multi-turn, tool rounds, reasoning),
rendered by transformers (`render_jinja_template`, as `apply_chat_template` does) with the
`chat_template` of PyPI `xinference` 4.1.0's `Qwen3-Instruct` / `Qwen3-Thinking` entries
(tests/assets/templates/qwen3-2507-{instruct,thinking}.jinja, Apache-2.0) and the Qwen3
tokenizer's special tokens.

The messages' contents are first made what the servers hand the template (parity_common.py;
see make_client_messages.py): missing/`None` content is "", a list of text parts is their texts
joined by "\\n", and tool-call arguments are objects (vLLM's `_postprocess_messages` parses
JSON-string arguments into dicts; the template then writes them with `tojson`). The stored
messages are those normalized ones.
Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_parity import seeded  # noqa: E402
from parity_common import make_corpus, server_messages  # noqa: E402
from reference import REPO_ROOT  # noqa: E402

VARIANTS = ("instruct", "thinking")


def prepare(case: dict) -> None:
    case["messages"] = server_messages(case["messages"], objects_only=True)


def main() -> None:
    for variant in VARIANTS:
        out = REPO_ROOT / "tests" / "data" / "parity" / f"render_qwen3_2507_{variant}.jsonl"
        make_corpus(out, seeded(f"render:qwen3_2507_{variant}"), "qwen3",
                    f"templates/qwen3-2507-{variant}.jinja", prepare)


if __name__ == "__main__":
    main()
