#!/usr/bin/env python3
"""Expected multi-turn sample for tests/multiturn.rs, from the reference template and tokenizer.

Input: tests/data/multiturn/regenerated.json — the simulator's recorded 3-turn regeneration
(each turn's request messages, each turn's answer `{reasoning, content}`), written by the test.
Output: tests/data/multiturn/expected.json — `input_ids`, `loss_mask`, `history_rerender_differs`.

Reference: transformers' Jinja pipeline (`reference.kimi_render`) with the K2.5-style template in
ASSETS/templates/kimi-k2.5-style.jinja, ids by `reference.kimi_encode` (tiktoken, Kimi ranks).
- P_k: the render of turn k's request with the generation prompt (what the model saw for turn k).
- C_k: turn k's answer as K2.5 writes it after `<think>` (which the generation prompt holds):
  `reasoning + "</think>" + content + "<|im_end|>"` (the layout of the Kimi chat template).
- input_ids = P_3 + C_3 (the last prompt is the template's render of the whole regenerated
  history; the last completion is what the model wrote).
- loss_mask: 1 on C_3; for each earlier turn k, 1 from the end of the longest common prefix of P_k
  and P_3 through the first `<|im_end|>` after it (the turn as the history shows it); else 0.
- history_rerender_differs: some earlier C_k does not appear right after P_k inside P_3 (the
  template dropped its reasoning).

    DRAFTGEN_ASSETS=/path/to/shared/assets python3 tests/data/gen/make_multiturn.py
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from reference import kimi_encode, kimi_render  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "multiturn"
TEMPLATE = "templates/kimi-k2.5-style.jinja"
IM_END = 163586


def main():
    regenerated = json.loads((DATA / "regenerated.json").read_text(encoding="utf-8"))
    prompts = [kimi_encode(kimi_render(TEMPLATE, msgs, None, True)) for msgs in regenerated["requests"]]
    completions = [
        kimi_encode((a.get("reasoning") or "") + "</think>" + (a.get("content") or "") + "<|im_end|>")
        for a in regenerated["answers"]
    ]
    last = prompts[-1]
    mask = [0] * len(last)
    differs = False
    for p, c in zip(prompts[:-1], completions[:-1]):
        start = 0
        while start < min(len(p), len(last)) and p[start] == last[start]:
            start += 1
        end = last.index(IM_END, start)
        for i in range(start, end + 1):
            mask[i] = 1
        if start != len(p) or last[len(p):len(p) + len(c)] != c:
            differs = True
    input_ids = last + completions[-1]
    mask += [1] * len(completions[-1])
    out = {"input_ids": input_ids, "loss_mask": mask, "history_rerender_differs": differs}
    (DATA / "expected.json").write_text(json.dumps(out) + "\n", encoding="utf-8")
    print(f"expected.json: {len(input_ids)} ids, {sum(mask)} masked, history_rerender_differs={differs}")


if __name__ == "__main__":
    main()
