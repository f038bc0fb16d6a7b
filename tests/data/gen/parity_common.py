"""What the render-parity generators (make_parity_<family>.py) share: the messages made what
the servers hand the template, transformers' render of them, and the loop that draws
make_parity.py's conversations until a corpus has its rows.

Each generator keeps what is its family's own: the template and tokenizer, the request's
switches (`chat_template_kwargs`), its own edits to the conversation, and any cross-check.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Callable

from make_parity import Conversation, write_jsonl
from reference import ASSETS, hf_tokenizer

TARGET = 240
MINIMUM = 200
ATTEMPTS = 4000


def server_messages(messages: list[dict], objects_only: bool = False,
                    edit: Callable[[int, dict], None] | None = None) -> list[dict]:
    """The messages as the servers hand them to the template (see make_client_messages.py):
    missing/`None` content is "", a list of text parts is their texts joined by "\\n", and
    JSON-string tool-call arguments are parsed (vLLM's `_postprocess_messages`; the template
    writes them with `tojson`) — with `objects_only`, arguments that are not an object become
    `{}`. `edit(i, message)` is then the generator's own change to message `i`."""
    out = []
    for i, message in enumerate(copy.deepcopy(messages)):
        content = message.get("content")
        if content is None:
            message["content"] = ""
        elif isinstance(content, list):
            message["content"] = "\n".join(part["text"] for part in content)
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            if isinstance(arguments, str):
                parsed = json.loads(arguments)
                if objects_only and not isinstance(parsed, dict):
                    parsed = {}
                call["function"]["arguments"] = parsed
        if edit is not None:
            edit(i, message)
        out.append(message)
    return out


def render(tokenizer: str, template_file: str, messages, tools, add_generation_prompt,
           kwargs) -> tuple[str, list[int]]:
    """transformers' `render_jinja_template` (as `apply_chat_template` does) with the
    tokenizer's special tokens, and the text's ids by that tokenizer."""
    from transformers.utils.chat_template_utils import (
        _normalize_chat_messages,
        render_jinja_template,
    )

    tok = hf_tokenizer(tokenizer)
    template = (ASSETS / template_file).read_text(encoding="utf-8")
    rendered, _ = render_jinja_template(
        conversations=[_normalize_chat_messages(copy.deepcopy(messages))],
        tools=tools,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        **{**tok.special_tokens_map, **kwargs},
    )
    text = rendered[0]
    return text, tok.encode(text, add_special_tokens=False)


def make_corpus(out: Path, rng, tokenizer: str, template: str,
                prepare: Callable[[dict], None],
                finish: Callable[[dict, str, list[int]], dict | None] | None = None,
                note: str = "",
                render_case: Callable[[dict], tuple[str, list[int]]] | None = None) -> list[dict]:
    """Draw conversations from make_parity.py's generator (`rng`), `prepare` each (its
    messages, its `chat_template_kwargs`), render it, and write `out` once it has TARGET rows
    (also returned). A case the reference refuses is dropped and counted. `finish(case, text,
    ids)` gives the fields the row keeps between the case and its text (a field it names `text`
    or `ids` stands there, the rest after it), or None to skip the case. `render_case(case)`:
    a reference other than transformers' render of `template` (text and ids)."""
    rows, dropped, attempts = [], 0, 0
    while len(rows) < TARGET and attempts < ATTEMPTS:
        attempts += 1
        case = Conversation(rng, kimi_ids=False).build()
        prepare(case)
        try:
            if render_case is not None:
                text, ids = render_case(case)
            else:
                text, ids = render(tokenizer, template, case["messages"], case.get("tools"),
                                   case["add_generation_prompt"],
                                   case.get("chat_template_kwargs", {}))
        except Exception as error:  # the reference refused this case: drop it, count it
            if isinstance(error, AssertionError):
                raise
            dropped += 1
            continue
        extra = {} if finish is None else finish(case, text, ids)
        if extra is None:
            continue
        rows.append({"template": template, **case, **extra, "text": text, "ids": ids})
    assert len(rows) >= MINIMUM, f"only {len(rows)} renders after {attempts} attempts"
    write_jsonl(out, rows)
    print(f"{out}: {len(rows)} rows (reference raised on {dropped} dropped candidates){note}")
    return rows
