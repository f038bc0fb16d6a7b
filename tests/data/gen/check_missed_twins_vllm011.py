r"""Report-only: vLLM 0.11.2 fixtures of `server_shapes/kimi_k25_vllm011.jsonl` marked
`determined` that draftgen flags `ambiguous` instead, each with the twin draftgen found (its
`synth::hidden_section_whitespace`), run through vLLM 0.11.2's own serving code (the ChildServer
harness of make_server_corpus.py): the twin has the same token count and vLLM sends the same
answer (ignoring ids and timestamps), so the answer does not determine the stream. Never feeds
a fixture. "Same answer" is the answer as a client assembles the chunks (what `generate`
journals); the chunks themselves differ (an empty `content` delta more or less), which is why
make_server_corpus.py, comparing chunks, counts these fixtures as determined.

    DRAFTGEN_ASSETS=... python3 tests/data/gen/check_missed_twins_vllm011.py

The twins: whitespace after `<|tool_calls_section_begin|>` (suppressed by the streaming parser
until the section closes, and a cut never closes it), with the last token dropped so the count
stays: a cut right after an argument opener reads the same as one right after the call's id.
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "server_stubs"), str(HERE)]
import make_server_corpus as m  # noqa: E402
from reference import kimi_encode, kimi_render  # noqa: E402

FX = {}
for line in open(HERE.parent / "server_shapes" / "kimi_k25_vllm011.jsonl", encoding="utf-8"):
    fx = json.loads(line)
    FX[fx["name"]] = fx

OPENER = m.SEC_B


def after_opener(ws):
    return lambda t: t.replace(OPENER, OPENER + ws, 1)


CASES = [(f"kimi_k25/vllm-0.11.2/stream/{spaces}/{label}/001", ws)
         for label in ["cut_after_arg_begin", "cut_after_arg_begin_nocontent", "cut_single_after_arg_begin",
                       "cut_after_call_begin", "cut_after_call_begin_nocontent", "cut_single_after_call_begin"]
         for spaces in ["nospaces", "spaces"] for ws in [" ", "\n"]]
CASES += [(f"kimi_k25/vllm-0.11.2/stream/{spaces}/random_mix/{n}", ws)
          for n in ["023", "028"] for spaces in ["nospaces", "spaces"] for ws in [" ", "\n"]]

server = m.ChildServer("serve-vllm011")
seen = set()
all_same = True
for name, ws in CASES:
    if (name, ws) in seen or name not in FX:
        continue
    seen.add((name, ws))
    fx = FX[name]
    truth = fx["truth"]["completion_ids"]
    twin = kimi_encode(after_opener(ws)(fx["truth"]["completion_text"]))[: len(truth)]
    assert twin != truth
    request = fx["request"]
    # The prompt as make_server_corpus.py rendered it (its `</think>` decides how vLLM streams).
    kwargs = request.get("chat_template_kwargs") or {}
    prompt_ids = kimi_encode(kimi_render(m.K25_TEMPLATE, request["messages"], None, True, **kwargs))
    a = server.complete(request, prompt_ids, truth, 1)["body"]
    b = server.complete(request, prompt_ids, twin, 1)["body"]
    chunks_same = m.normalize(a, random_call_ids=False) == m.normalize(b, random_call_ids=False)
    # What a client (and draftgen's journal) keeps of a stream: the chunks assembled.
    same = m.assemble(True, a) == m.assemble(True, b)
    all_same &= same
    print(f"{name:70} {len(truth)} {len(twin)} same answer: {same} (same chunks: {chunks_same})"
          f"  (whitespace {ws!r} after the opener)")
server.close()
sys.exit(0 if all_same else 1)
