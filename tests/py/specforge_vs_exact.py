#!/usr/bin/env python3
"""Why exact ids matter, measured: SpecForge's own preprocessing vs the ids the model produced.

For every case of `tests/data/reconstruct/qwen3.jsonl` (requests, the servers' answers, and the
true prompt + completion ids made by the reference libraries — the ids `draftgen reconstruct`
and `build` are tested to produce), this script
  1. turns request + answer into the conversation row `draftgen export specforge --run` writes
     (`to_conversation` in src/export/specforge.rs, mirrored below),
  2. runs SpecForge's own preprocessing on it — `specforge/data/parse.py` (ThinkingParser /
     GeneralParser, what `preprocess_conversations` calls) with a TEMPLATE_REGISTRY entry, copied
     unchanged under tests/py/vendor/specforge_data/, on real torch + transformers with the Qwen3
     tokenizer and chat template from the assets,
  3. compares SpecForge's input_ids and its supervised (loss_mask = 1) ids with the true ones.

Run (needs torch, transformers, pydantic; prints a table and writes JSON):
    python tests/py/specforge_vs_exact.py [--out tests/data/specforge_vs_exact.json]
"""

import argparse
import difflib
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "vendor"))

from specforge_data.parse import GeneralParser, ThinkingParser  # noqa: E402
from specforge_data.template import TEMPLATE_REGISTRY  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

warnings.filterwarnings("ignore")


def assets():
    env = os.environ.get("DRAFTGEN_ASSETS")
    return env if env else os.path.join(os.path.dirname(ROOT), "shared", "assets")


def answer_message(response):
    """src/api/completion.rs Completion::from_response + src/export/specforge.rs to_conversation."""
    msg = response["choices"][0]["message"]
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if not reasoning and msg.get("reasoning_details"):
        reasoning = "".join(d.get("text", "") for d in msg["reasoning_details"] if d.get("type") == "reasoning.text") or None
    content = msg.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content)
    out = {"role": "assistant", "content": content or ""}
    if reasoning:
        out["reasoning_content"] = reasoning
    calls = []
    for c in msg.get("tool_calls") or []:
        args = c["function"]["arguments"]
        calls.append({"id": c.get("id"), "type": "function",
                      "function": {"name": c["function"]["name"],
                                   "arguments": args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))}})
    if calls:
        out["tool_calls"] = calls
    return out


def conversation_row(case):
    request = case["request"]
    conv = []
    for m in request["messages"]:
        c = m.get("content")
        if isinstance(c, list):
            c = "".join(p.get("text", "") for p in c)
        row = {"role": m["role"], "content": c or ""}
        r = m.get("reasoning_content", m.get("reasoning"))
        if isinstance(r, str):
            row["reasoning_content"] = r
        for k in ("tool_calls", "tool_call_id", "name"):
            if m.get(k) is not None:
                row[k] = m[k]
        conv.append(row)
    conv.append(answer_message(case["response"]))
    return {"id": case["name"], "conversations": conv, "tools": request.get("tools") or []}


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else None


def unmatched(a, b):
    """Tokens of `a` not in the longest matching blocks with `b` (difflib)."""
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return len(a) - sum(block.size for block in sm.get_matching_blocks())


def reasons(case, tok, got_ids):
    """Why the render differs, from what the conversation holds (checked, not guessed)."""
    why = []
    msgs = case["request"]["messages"]
    if msgs[0]["role"] != "system":
        why.append("SpecForge inserts its template's system prompt")
    if any(m.get("role") == "assistant" for m in msgs):
        why.append("history re-rendered by the template")
    ans = case["response"]["choices"][0]["message"]
    for c in ans.get("tool_calls") or []:
        a = c["function"]["arguments"]
        if isinstance(a, str) and json.dumps(json.loads(a), ensure_ascii=False) != a:
            why.append("tool arguments re-serialized (json.loads then the template's tojson)")
            break
    fr = case["response"]["choices"][0].get("finish_reason")
    if fr == "length":
        why.append("answer cut by max_tokens: SpecForge's render closes it with <|im_end|>")
    return why


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "specforge_vs_exact.json"))
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(os.path.join(assets(), "qwen3"))
    cases = [json.loads(l) for l in open(os.path.join(ROOT, "tests", "data", "reconstruct", "qwen3.jsonl"))]
    report = {"cases": len(cases), "templates": {}}
    for name in ("qwen3-thinking", "qwen3-instruct"):
        template = TEMPLATE_REGISTRY.get(name)
        parser = (ThinkingParser if template.parser_type == "thinking" else GeneralParser)(tok, template)
        rows, differ_ids, differ_sup, tok_total, tok_wrong, sup_total, sup_wrong, errors = [], 0, 0, 0, 0, 0, 0, 0
        for case in cases:
            row = conversation_row(case)
            true_prompt = case["expected"]["prompt_ids"]
            true_completion = case["expected"]["completion_ids"]
            true_ids = true_prompt + true_completion
            try:
                ids, mask = parser.parse(row["conversations"], 1 << 20, tool=row["tools"])
            except Exception as e:  # SpecForge refuses the row: counted, not hidden
                errors += 1
                rows.append({"case": case["name"], "error": f"{type(e).__name__}: {e}"})
                continue
            ids, mask = ids.tolist(), mask.tolist()
            # the ids SpecForge would train on: the last supervised span (the regenerated answer)
            supervised = [t for t, m in zip(ids, mask) if m == 1]
            # the tail of SpecForge's supervision that corresponds to the last answer
            last = supervised[-len(true_completion):] if true_completion else []
            same_ids = ids == true_ids
            same_sup = last == true_completion
            differ_ids += not same_ids
            differ_sup += not same_sup
            tok_total += len(true_ids)
            tok_wrong += unmatched(true_ids, ids)
            sup_total += len(true_completion)
            sup_wrong += unmatched(true_completion, last)
            rows.append({
                "case": case["name"], "same_input_ids": same_ids, "same_supervised_answer": same_sup,
                "first_difference": first_difference(ids, true_ids),
                "true_len": len(true_ids), "specforge_len": len(ids),
                "reasons": [] if same_ids else reasons(case, tok, ids),
            })
        report["templates"][name] = {
            "samples": len(cases), "refused": errors,
            "samples_input_ids_differ": differ_ids, "samples_answer_ids_differ": differ_sup,
            "tokens": tok_total, "tokens_not_matching": tok_wrong,
            "answer_tokens": sup_total, "answer_tokens_not_matching": sup_wrong,
            "rows": rows,
        }
        print(f"{name}: {len(cases)} samples, {errors} refused; input_ids differ in {differ_ids}, "
              f"the supervised answer differs in {differ_sup}; {tok_wrong}/{tok_total} tokens "
              f"and {sup_wrong}/{sup_total} answer tokens not as the model produced them")
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
