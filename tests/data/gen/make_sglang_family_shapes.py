#!/usr/bin/env python3
"""What SGLang 0.5.23 answers for the model texts of the families checked against vLLM's parsers
(deepseek_v31, qwen3_coder, qwen3_2507, gpt_oss, llama3), not streamed and streamed token by
token: tests/data/<family>/sglang_shapes.jsonl, read by tests/sglang_families.rs.

The texts are the ones each family's vLLM generator uses (make_<family>_shapes.py's `TEXTS` /
`CASES`), encoded with the family's tokenizer (reference.py's `hf_tokenizer`), followed by the
family's end-of-turn token unless the row is cut by `max_tokens`. Each stream is fed through
SGLang's own chat-completion code (server_stubs/sglang_harness.py: `OpenAIServingChat`, the
scheduler's finish checks, the incremental detokenizer, `FunctionCallParser` with the family's
detector and `ReasoningParser`), launched as `--tool-call-parser P --reasoning-parser R` would:

    family        tool parser    reasoning parser
    deepseek_v31  deepseekv31    deepseek-v3   (V3.1's own tokenizer; thinking rows ask `chat_template_kwargs.thinking`)
    qwen3_coder   qwen3_coder    —
    qwen3_2507    qwen25         qwen3 for the thinking model's rows, none for the instruct's
    gpt_oss       gpt-oss        gpt-oss
    llama3        llama3         —

The wheel is make_server_corpus.py's (`fetch_wheel`, sha256-pinned), heavy modules stubbed by
server_stubs/autostub.py as in its `sglang_main`. The prompt is a stand-in (the rendered prompt
is not what this corpus is about: the reading test puts in its own prompt count). Each row holds
`text`, `ids` (without the end token), `end` (the end token, `""` when cut), `stream`, the
request's `chat_template_kwargs`, and `answer`: the body, or the streamed chunks merged as a
client merges them (make_server_corpus.py's `journal_view`); tool-call ids are random uuids
seeded per row. The first line holds the request's `tools`.

    DRAFTGEN_ASSETS=… python3 tests/data/gen/make_sglang_family_shapes.py [family…]

Run from the repository root. (SGLang's harmony parser, `parser/harmony_parser.py`, is its own
Python: gpt_oss needs no `openai_harmony` here.)
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_server_corpus as corpus  # noqa: E402

DATA = HERE.parent

WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]


def deepseek_v31_rows():
    import make_deepseek_v31_shapes as m

    search = {"type": "function", "function": {"name": "search", "description": "Search.",
                                               "parameters": {"type": "object", "properties": {
                                                   "q": {"type": "string"}}}}}
    rows = [(text, {"thinking": thinking}, text.startswith("Cut") or text.endswith(", cut"))
            for text, thinking in m.TEXTS]
    return WEATHER + [search], rows


def qwen3_coder_rows():
    import make_qwen3_coder_shapes as m

    return m.TOOLS, [(text, None, text.startswith("Cut inside")) for text in m.TEXTS]


def qwen3_2507_rows():
    import make_qwen3_2507_shapes as m

    return m.TOOLS, [(text, {"thinking": thinking}, text.endswith(", cut")) for text, thinking in m.TEXTS]


def gpt_oss_rows():
    import make_gpt_oss_shapes as m

    # Every name the texts call is declared: the detector drops a call to an undeclared one.
    tools = WEATHER + [
        {"type": "function", "function": {"name": name, "description": name,
                                          "parameters": {"type": "object", "properties": {}}}}
        for name in ("run", "f")]
    return tools, [(text, {"stop": stop}, stop == "") for text, stop in m.TEXTS]


def llama3_rows():
    import make_llama3_shapes as m

    rows = [(text, {"end": end}, end is None) for name, _, tools, _, text, end in m.CASES
            if tools and not name.startswith("builtin")]
    return m.TOOLS, rows


# family: (tokenizer dir, tool parser, reasoning parser (thinking rows), model_type, end tokens,
# architecture, rows)
FAMILIES = {
    "deepseek_v31": ("deepseek-v3.1", "deepseekv31", "deepseek-v3", "deepseek_v3",
                     ["<｜end▁of▁sentence｜>"], "DeepseekV3ForCausalLM", deepseek_v31_rows),
    "qwen3_coder": ("qwen3", "qwen3_coder", None, "qwen3_moe", ["<|im_end|>", "<|endoftext|>"],
                    "Qwen3MoeForCausalLM", qwen3_coder_rows),
    "qwen3_2507": ("qwen3", "qwen25", "qwen3", "qwen3_moe", ["<|im_end|>", "<|endoftext|>"],
                   "Qwen3MoeForCausalLM", qwen3_2507_rows),
    "gpt_oss": ("gpt-oss", "gpt-oss", "gpt-oss", "gpt_oss", ["<|return|>", "<|call|>", "<|endoftext|>"],
                "GptOssForCausalLM", gpt_oss_rows),
    "llama3": ("llama3.1", "llama3", None, "llama", ["<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"],
               "LlamaForCausalLM", llama3_rows),
}


def install_sglang() -> None:
    """make_server_corpus.py's `sglang_main` set-up: the wheel, the stubs, a CPU-only torch."""
    os.environ["SGLANG_USE_CPU_ENGINE"] = "1"
    sys.path[:0] = [str(HERE / "server_stubs"), str(corpus.fetch_wheel("sglang"))]
    import autostub

    autostub.install(corpus.STUBBED_MODULES + corpus.SGLANG_STUBS)
    import torch

    torch.version = types.SimpleNamespace(hip=None, cuda=None, git_version="stub", __version__="0.0.0+stub")
    torch.cuda.is_available = lambda: False
    torch.cuda.device_count = lambda: 0


def server(tok, tool_parser, reasoning_parser, model_type, architecture, eos_ids):
    """A fresh SGLang chat server as `launch_server` with these parsers sets it up."""
    from sglang.srt import runtime_context
    from sglang.srt.server_args import ServerArgs

    import sglang_harness

    model_dir = corpus.CACHE / f"sglang-model-{model_type}"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps({
        "model_type": model_type, "architectures": [architecture], "num_hidden_layers": 1,
        "hidden_size": 64, "num_attention_heads": 1, "vocab_size": len(tok),
        "max_position_embeddings": 131072, "eos_token_id": eos_ids}))
    runtime_context.publish(ServerArgs(model_path=str(model_dir), tool_call_parser=tool_parser,
                                       reasoning_parser=reasoning_parser, device="cpu"), role="tokenizer")
    return sglang_harness.SglangServer(tok, tool_parser=tool_parser, reasoning_parser=reasoning_parser,
                                       model_name=model_type, eos_ids=eos_ids, model_type=model_type,
                                       architecture=architecture)


def family_rows(family: str) -> list[dict]:
    from reference import hf_tokenizer

    tok_dir, tool_parser, reasoning_parser, model_type, ends, architecture, make = FAMILIES[family]
    tok = hf_tokenizer(tok_dir)
    eos_ids = [tok.convert_tokens_to_ids(e) for e in ends]
    tools, rows = make()
    servers = {}
    out = [{"tools": tools}]
    prompt_ids = tok.encode("Weather in Paris?", add_special_tokens=False)
    for n, (text, extra, cut) in enumerate(rows):
        extra = extra or {}
        thinking = bool(extra.get("thinking"))
        end = extra.get("stop", extra.get("end", ends[0]))
        end = "" if cut else end
        rp = reasoning_parser if (family != "qwen3_2507" or thinking) else None
        key = rp
        if key not in servers:
            servers[key] = server(tok, tool_parser, rp, model_type, architecture, eos_ids)
        ids = tok.encode(text, add_special_tokens=False)
        completion = ids + ([tok.convert_tokens_to_ids(end)] if end else [])
        kwargs = {"thinking": True} if family == "deepseek_v31" and thinking else None
        for stream in (False, True):
            request = {"model": model_type, "messages": [{"role": "user", "content": "Weather in Paris?"}],
                       "tools": tools, "max_tokens": len(completion) if cut else len(completion) + 16,
                       "stream": stream}
            if kwargs:
                request["chat_template_kwargs"] = kwargs
            if stream:
                request["stream_options"] = {"include_usage": True}
            got = servers[key].complete(request, prompt_ids, completion, seed=corpus.seed_of(f"{family}/{n}/{stream}"))
            answer = corpus.journal_view(stream, got["body"])
            answer.pop("created", None)
            answer.pop("id", None)
            out.append({"text": text, "ids": ids, "end": end, "thinking": thinking, "stream": stream,
                        "chat_template_kwargs": kwargs, "answer": answer})
    return out


def main() -> None:
    families = sys.argv[1:] or list(FAMILIES)
    install_sglang()
    for family in families:
        rows = family_rows(family)
        path = DATA / family / "sglang_shapes.jsonl"
        with path.open("w", encoding="utf-8", newline="\n") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{path}: {len(rows) - 1} answers")


if __name__ == "__main__":
    main()
