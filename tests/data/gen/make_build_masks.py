#!/usr/bin/env python3
"""Loss-mask expectations for `draftgen build`, derived from the parity render corpora.

For every line of `parity/render_{family}.jsonl` that renders a conversation ending in an
assistant message (add_generation_prompt false), the same reference that made the line renders
the prompt — the messages before that assistant message, add_generation_prompt true. When that
prompt's ids are a prefix of the line's ids (the template writes the last turn after exactly its
generation prompt), the line is a single-turn training sample whose expectation comes from the
reference alone:

    input_ids = line ids up to and including the first end-of-turn token after the prompt
    loss_mask = 0 on the first prompt_len ids, 1 on the rest

The template must also write the assistant message *verbatim*: its `content` (and
`reasoning_content`, when it has one) must appear unchanged in the decoded completion text. A
template that rewrites the message (strips leading newlines, splits `<think>` out of content,
cuts at a special-token literal) renders tokens no model produced, so those lines say nothing
about a model's answer and are left out (counted in the printout). So are lines whose content
spells reasoning inline (`<think>…</think>` in `content`): K2-Thinking's template then writes an
empty `<think></think>` before it, a stream no model writes either.

For each kept line a journal record is written: the request (prompt messages, tools, kwargs) and the
chat.completion a parser-free server would send for that assistant message (content,
reasoning_content, tool_calls as the line has them; usage counts from the reference ids).

Writes tests/data/build/masks_{family}.jsonl, one {"family", "template"?, "request", "response",
"input_ids", "prompt_len"} per kept line, and prints how many lines were kept and why others were not.

    DRAFTGEN_ASSETS=/path/to/shared/assets python3 tests/data/gen/make_build_masks.py
"""
import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from reference import hf_render, hf_render_keep_none, hf_tokenizer, kimi_encode, kimi_render  # noqa: E402

DATA = Path(__file__).resolve().parent.parent
FAMILIES = {
    # family: (reference model dir or None for Kimi, end-of-turn token)
    "qwen3": ("qwen3", "<|im_end|>"),
    "deepseek_v3": ("deepseek-v3", "<｜end▁of▁sentence｜>"),
    "kimi_k2": (None, "<|im_end|>"),
    "kimi_k2_thinking": (None, "<|im_end|>"),
}
KIMI_IM_END = 163586


def prompt_render(family, line, messages):
    kwargs = line.get("chat_template_kwargs") or {}
    tools = copy.deepcopy(line.get("tools"))
    model, _ = FAMILIES[family]
    if model is None:
        text = kimi_render(line["template"], copy.deepcopy(messages), tools, True, **kwargs)
        return kimi_encode(text)
    render = hf_render_keep_none if model == "deepseek-v3" else hf_render
    return render(model, copy.deepcopy(messages), tools, True, **kwargs)[1]


def end_token_id(family):
    model, token = FAMILIES[family]
    if model is None:
        return KIMI_IM_END
    return hf_tokenizer(model).convert_tokens_to_ids(token)


def decode(family, ids):
    model, _ = FAMILIES[family]
    if model is None:
        from reference import kimi_encoding
        return kimi_encoding().decode(ids)
    return hf_tokenizer(model).decode(ids, skip_special_tokens=False)


def response_for(assistant, completion_len, prompt_len):
    message = {"role": "assistant", "content": assistant.get("content")}
    if assistant.get("reasoning_content"):
        message["reasoning_content"] = assistant["reasoning_content"]
    if assistant.get("tool_calls"):
        message["tool_calls"] = assistant["tool_calls"]
    return {
        "id": "chatcmpl-parity",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": "tool_calls" if assistant.get("tool_calls") else "stop",
        }],
        "usage": {"prompt_tokens": prompt_len, "completion_tokens": completion_len,
                  "total_tokens": prompt_len + completion_len},
    }


def main():
    for family in FAMILIES:
        lines = [json.loads(l) for l in (DATA / "parity" / f"render_{family}.jsonl").open(encoding="utf-8")]
        end = end_token_id(family)
        kept, why = [], {}
        for line in lines:
            messages = line["messages"]
            if line["add_generation_prompt"] or messages[-1]["role"] != "assistant":
                why["not a finished assistant turn"] = why.get("not a finished assistant turn", 0) + 1
                continue
            try:
                prompt = prompt_render(family, line, messages[:-1])
            except Exception:
                why["the reference refuses the prompt"] = why.get("the reference refuses the prompt", 0) + 1
                continue
            ids = line["ids"]
            if ids[: len(prompt)] != prompt:
                why["prompt is not a prefix of the full render"] = why.get("prompt is not a prefix of the full render", 0) + 1
                continue
            try:
                stop = ids.index(end, len(prompt))
            except ValueError:
                why["no end-of-turn token"] = why.get("no end-of-turn token", 0) + 1
                continue
            input_ids = ids[: stop + 1]
            written = decode(family, input_ids[len(prompt):])
            message = messages[-1]
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            pieces = [content or "", message.get("reasoning_content") or ""]
            if "<think>" in (content or "") or "</think>" in (content or ""):
                why["reasoning inline in content"] = why.get("reasoning inline in content", 0) + 1
                continue
            if any(piece not in written for piece in pieces):
                why["the template rewrites the message"] = why.get("the template rewrites the message", 0) + 1
                continue
            request = {"messages": messages[:-1]}
            if line.get("tools"):
                request["tools"] = line["tools"]
            if line.get("chat_template_kwargs"):
                request["chat_template_kwargs"] = line["chat_template_kwargs"]
            row = {"family": family}
            if "template" in line:
                row["template"] = line["template"]
            row.update({
                "request": request,
                "response": response_for(messages[-1], len(input_ids) - len(prompt), len(prompt)),
                "input_ids": input_ids,
                "prompt_len": len(prompt),
            })
            kept.append(row)
        out = DATA / "build" / f"masks_{family}.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as f:
            for row in kept:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{out.name}: {len(kept)} of {len(lines)} lines; not used: {why}")


if __name__ == "__main__":
    main()
