r"""Report-only spot check, written by hand: five twins that draftgen's candidates suggested for
fixtures once marked `determined` (the old `MISSED_AT_MOST` list in tests/server_shapes.rs), each
run through vLLM 0.33.0's own serving code (the corpus harness of make_server_corpus.py): the twin
has the same token count and vLLM sends the same answer (ignoring ids and timestamps), so the
answer does not determine the stream. make_server_corpus.py now generates these families itself
(`hf_twin_cases`: argument spellings combined over the calls, Qwen3's wrapper spelled with a space
before its `}`, every twin of a cut cut by the same `max_tokens`, another call after the last), so
these fixtures are `determined: false` there; this script stays as an independent check of five
of them. Never feeds a fixture.

    DRAFTGEN_ASSETS=... python3 tests/data/gen/check_missed_twins.py

Output when committed (all `same answer: True`, truth and twin of equal length):
    qwen3/…/nonstream/spaces/cut_after_call_end/001   42 42 (a space before the outer `}`, no `</tool_call>`)
    qwen3/…/nonstream/spaces/cut_after_call_end/001   42 42 (compact arguments, the hidden `\n` after the call)
    qwen3/…/nonstream/spaces/random_mix/006           60 60 (the separator spaces moved between the calls)
    qwen3/…/nonstream/spaces/single_call/006          49 49 (compact separators with the `\uXXXX` escapes)
    deepseek_v3/…/nonstream/spaces/cut_before_end/001 42 42 (`\n` instead of `<｜tool▁calls▁end｜>`)
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_server_corpus as m
m.setup_imports()
import vllm_harness
from reference import hf_tokenizer

FX = {}
for fam in ("qwen3", "deepseek_v3"):
    for line in open(HERE.parent / "server_shapes" / f"{fam}.jsonl"):
        fx = json.loads(line)
        FX[fx["name"]] = fx

CASES = [
    # (fixture, how to make the twin's text from the truth text)
    ("qwen3/vllm-0.33.0/nonstream/spaces/cut_after_call_end/001",
     lambda t: t.replace('{"city": "Tokyo"}}\n</tool_call>', '{"city": "Tokyo"} }\n')),
    ("qwen3/vllm-0.33.0/nonstream/spaces/cut_after_call_end/001",
     lambda t: t.replace('{"city": "Tokyo"}}\n</tool_call>', '{"city":"Tokyo"}}\n</tool_call>\n')),
    ("qwen3/vllm-0.33.0/nonstream/spaces/random_mix/006",
     lambda t: t.replace('{"city": "서울"}', '{"city":"서울"}').replace('{"query":"x y"}', '{"query": "x y"}')),
    ("qwen3/vllm-0.33.0/nonstream/spaces/single_call/006",
     lambda t: t.replace('{"city": "\\uc11c\\uc6b8"}', '{"city":"\\uc11c\\uc6b8"}')),
    ("deepseek_v3/vllm-0.33.0/nonstream/spaces/cut_before_end/001",
     lambda t: t[: t.rindex("<｜tool▁calls▁end｜>")] + "\n"),
]
servers = {}
for name, twin_of in CASES:
    fx = FX[name]
    fam = "qwen3" if name.startswith("qwen3") else "deepseek-v3"
    slug = "qwen3" if fam == "qwen3" else "deepseek_v3"
    if fam not in servers:
        tok = hf_tokenizer(fam)
        spec = m.QWEN3 if fam == "qwen3" else m.DSV3
        servers[fam] = (tok, vllm_harness.VllmServer(tok, tool_parser=spec.tool_parser,
            reasoning_parser=spec.reasoning_parser, model_name=fam,
            generation_config={"eos_token_id": tok.eos_token_id}, model_type=slug))
    tok, server = servers[fam]
    truth_ids = fx["truth"]["completion_ids"]
    text = tok.decode(truth_ids, skip_special_tokens=False)
    twin_text = twin_of(text)
    assert twin_text != text, name
    twin_ids = tok.encode(twin_text, add_special_tokens=False)
    prompt_ids = tok.encode("x", add_special_tokens=False)
    shape_stream = fx["server"]["stream"]
    req = fx["request"]
    a = server.complete(req, prompt_ids, truth_ids, 1)["body"]
    b = server.complete(req, prompt_ids, twin_ids, 1)["body"]
    na = m.normalize(a, random_call_ids=True)
    nb = m.normalize(b, random_call_ids=True)
    print(name, "| truth", len(truth_ids), "twin", len(twin_ids), "| same answer:", na == nb)
    print("   twin text:", json.dumps(twin_text[-80:], ensure_ascii=False))
