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
    python tests/py/specforge_vs_exact.py --family kimi_k25 [--out tests/data/specforge_vs_exact_kimi_k25.json]

Kimi K2.5 (`--family kimi_k25`): the 120 cases of `tests/data/reconstruct/kimi_k25.jsonl`, with
SpecForge's two Kimi registry entries (`kimi-k2-thinking`, `kimi-k2-instruct`; it has none named
for K2.5) on the tokenizer SpecForge would load for K2.5: Moonshot's own `TikTokenTokenizer`
(tests/py/vendor/kimi_k25_tokenizer/, from MoonshotAI/Kimi-Vendor-Verifier, loaded by
`AutoTokenizer.from_pretrained(trust_remote_code=True)` with the K2.5 ranks and config) and the
K2.5 chat template the true prompt ids were rendered with (`templates/kimi-k2.5-style.jinja`; the
official file is not mirrored). Cases with tools have no true prompt ids (see
make_reconstruct_cases.py), so for them only the supervised tokens are compared.
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
    """src/completion.rs Completion::from_response + src/export/specforge.rs to_conversation."""
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


def spans(mask):
    """Contiguous runs of mask == 1 as (start, end)."""
    out, start = [], None
    for i, m in enumerate(mask + [0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append((start, i))
            start = None
    return out


def reasons(tok, ids, mask, true_ids, true_completion, case):
    """Why SpecForge's sample differs, each checked on the two decoded samples."""
    why = []
    sf_text, true_text = tok.decode(ids), tok.decode(true_ids)
    if sf_text.startswith("<|im_start|>system\nYou are a helpful assistant.") and not true_text.startswith(
            "<|im_start|>system\nYou are a helpful assistant."):
        why.append("system prompt inserted by the SpecForge template entry")
    runs = spans(mask)
    if len(runs) > 1:
        why.append("earlier assistant turns (not regenerated) supervised")
    if runs:
        last = tok.decode(ids[runs[-1][0]:runs[-1][1]])
        if last.endswith("<|im_end|>\n"):
            why.append("the newline after <|im_end|> supervised (the model never produces it)")
        want = tok.decode(true_completion)
        if "<think>\n\n</think>\n\n" in last and "<think>\n\n</think>\n\n" not in want:
            why.append("the empty <think></think> of the prompt supervised as if generated")
        if case["response"]["choices"][0]["message"].get("tool_calls") and last.rstrip("\n") != want.rstrip("\n") \
                and last.replace("<think>\n\n</think>\n\n", "").rstrip("\n") != want.rstrip("\n"):
            why.append("tool-call turn re-rendered differently from what the model wrote")
        if case["response"]["choices"][0].get("finish_reason") == "length":
            why.append("answer cut by max_tokens, closed with <|im_end|> by the render")
    return why


KIMI_THINK, KIMI_THINK_END, KIMI_IM_END = 163606, 163607, 163586


def kimi_tokenizer():
    """Moonshot's TikTokenTokenizer as transformers loads it (trust_remote_code), with the K2.5
    ranks and config from the assets and the K2.5 template as its chat template."""
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix="kimi-k25-tok-")
    vendor = os.path.join(HERE, "vendor", "kimi_k25_tokenizer")
    for f in ("tokenization_kimi.py", "tool_declaration_ts.py"):
        shutil.copy(os.path.join(vendor, f), d)
    for f in ("tiktoken.model", "tokenizer_config.json"):
        shutil.copy(os.path.join(assets(), "kimi-k2.5", f), d)
    tok = AutoTokenizer.from_pretrained(d, trust_remote_code=True)
    with open(os.path.join(assets(), "templates", "kimi-k2.5-style.jinja"), encoding="utf-8") as f:
        tok.chat_template = f.read()
    return tok


def kimi_reasons(tok, ids, mask, true_prompt, true_completion, case):
    """Why SpecForge's K2.5 sample differs, each checked on the two samples."""
    why = []
    msg = case["response"]["choices"][0]["message"]
    runs = spans(mask)
    if len(runs) > 1:
        why.append("earlier assistant turns (not regenerated) supervised")
    if true_prompt is not None and ids[:len(true_prompt)] != true_prompt:
        why.append("prompt ids differ from the served prompt")
    if not runs:
        why.append("nothing supervised")
        return why
    last = ids[runs[-1][0]:runs[-1][1]]
    if last and last[0] == KIMI_THINK and true_completion[:1] != [KIMI_THINK]:
        why.append("<think> (the last prompt token) supervised as if generated")
    reasoning = msg.get("reasoning") or msg.get("reasoning_content") or ""
    true_has_reasoning = KIMI_THINK_END in true_completion and true_completion.index(KIMI_THINK_END) > 0
    if reasoning and true_has_reasoning and KIMI_THINK_END in last and last.index(KIMI_THINK_END) <= 1:
        why.append("the answer's own reasoning dropped (K2.5's template writes <think></think> for the last non-tool-call answer)")
    elif reasoning and reasoning not in tok.decode(last):
        why.append("the answer's own reasoning dropped")
    if case["response"]["choices"][0].get("finish_reason") == "length" and last[-1:] == [KIMI_IM_END]:
        why.append("answer cut by max_tokens, closed with <|im_end|> by the render")
    body = last[1:] if last[:1] == [KIMI_THINK] else last
    if msg.get("tool_calls") and body != true_completion:
        why.append("tool-call turn re-rendered differently from what the model wrote")
    if not msg.get("reasoning") and not msg.get("reasoning_content") and "</think>" in (msg.get("content") or ""):
        why.append("reasoning left in content by the server (no reasoning parser) is rendered as content")
    return why


def main_kimi(out):
    tok = kimi_tokenizer()
    cases = [json.loads(l) for l in open(os.path.join(ROOT, "tests", "data", "reconstruct", "kimi_k25.jsonl"))]
    report = {"family": "kimi_k25", "cases": len(cases), "tokenizer": type(tok).__name__,
              "chat_template": "templates/kimi-k2.5-style.jinja", "templates": {}}
    for name in ("kimi-k2-thinking", "kimi-k2-instruct"):
        template = TEMPLATE_REGISTRY.get(name)
        parser = (ThinkingParser if template.parser_type == "thinking" else GeneralParser)(tok, template)
        rows = []
        t = dict(samples=len(cases), refused=0, with_true_prompt=0, samples_input_ids_differ=0,
                 samples_answer_ids_differ=0, true_tokens=0, specforge_tokens_not_in_true_sample=0,
                 supervised_tokens=0, supervised_not_produced=0, produced_tokens=0,
                 produced_not_supervised=0)
        for case in cases:
            row = conversation_row(case)
            true_prompt = case["expected"].get("prompt_ids")
            true_completion = case["expected"]["completion_ids"]
            try:
                ids, mask = parser.parse(row["conversations"], 1 << 20, tool=row["tools"])
            except Exception as e:  # SpecForge refuses the row: counted, not hidden
                t["refused"] += 1
                rows.append({"case": case["name"], "error": f"{type(e).__name__}: {e}"})
                continue
            ids, mask = ids.tolist(), mask.tolist()
            supervised = [x for x, m in zip(ids, mask) if m == 1]
            matched = len(supervised) - unmatched(supervised, true_completion)
            extra = len(supervised) - matched
            missing = len(true_completion) - matched
            entry = {"case": case["name"], "supervised_not_produced": extra,
                     "produced_not_supervised": missing, "specforge_len": len(ids),
                     "reasons": kimi_reasons(tok, ids, mask, true_prompt, true_completion, case)}
            if true_prompt is not None:
                true_ids = true_prompt + true_completion
                t["with_true_prompt"] += 1
                t["samples_input_ids_differ"] += ids != true_ids
                t["true_tokens"] += len(true_ids)
                t["specforge_tokens_not_in_true_sample"] += unmatched(ids, true_ids)
                entry.update(same_input_ids=ids == true_ids, first_difference=first_difference(ids, true_ids),
                             true_len=len(true_ids))
            t["samples_answer_ids_differ"] += bool(extra or missing)
            t["supervised_tokens"] += len(supervised)
            t["supervised_not_produced"] += extra
            t["produced_tokens"] += len(true_completion)
            t["produced_not_supervised"] += missing
            rows.append(entry)
        counts = {}
        for r in rows:
            for why in r.get("reasons", []):
                counts[why] = counts.get(why, 0) + 1
        report["templates"][name] = {**t, "reason_counts": counts, "rows": rows}
        print(f"{name}: {t['samples']} samples, {t['refused']} refused; supervision differs in "
              f"{t['samples_answer_ids_differ']}; {t['supervised_not_produced']} of {t['supervised_tokens']} supervised "
              f"tokens were never produced by the model, {t['produced_not_supervised']} of {t['produced_tokens']} "
              f"produced tokens not supervised as produced; input_ids differ in {t['samples_input_ids_differ']} of "
              f"{t['with_true_prompt']} with a true prompt ({t['specforge_tokens_not_in_true_sample']} of "
              f"{t['true_tokens']} tokens not in the true samples)")
        for why, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"    {n:3d}  {why}")
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=("qwen3", "kimi_k25"), default="qwen3")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.family == "kimi_k25":
        return main_kimi(args.out or os.path.join(ROOT, "tests", "data", "specforge_vs_exact_kimi_k25.json"))
    args.out = args.out or os.path.join(ROOT, "tests", "data", "specforge_vs_exact.json")
    tok = AutoTokenizer.from_pretrained(os.path.join(assets(), "qwen3"))
    cases = [json.loads(l) for l in open(os.path.join(ROOT, "tests", "data", "reconstruct", "qwen3.jsonl"))]
    report = {"cases": len(cases), "templates": {}}
    for name in ("qwen3-thinking", "qwen3-instruct"):
        template = TEMPLATE_REGISTRY.get(name)
        parser = (ThinkingParser if template.parser_type == "thinking" else GeneralParser)(tok, template)
        rows, differ_ids, differ_sup, tok_total, tok_wrong, sup_total, sup_wrong, miss_total, errors = [], 0, 0, 0, 0, 0, 0, 0, 0
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
            supervised = [t for t, m in zip(ids, mask) if m == 1]
            matched = len(supervised) - unmatched(supervised, true_completion)
            extra = len(supervised) - matched          # trained on, never produced by the model
            missing = len(true_completion) - matched   # produced, not trained on as produced
            same_ids = ids == true_ids
            differ_ids += not same_ids
            differ_sup += bool(extra or missing)
            tok_total += len(true_ids)
            tok_wrong += unmatched(ids, true_ids)
            sup_total += len(supervised)
            sup_wrong += extra
            miss_total += missing
            rows.append({
                "case": case["name"], "same_input_ids": same_ids,
                "supervised_not_produced": extra, "produced_not_supervised": missing,
                "first_difference": first_difference(ids, true_ids),
                "true_len": len(true_ids), "specforge_len": len(ids),
                "reasons": reasons(tok, ids, mask, true_ids, true_completion, case),
            })
        report["templates"][name] = {
            "samples": len(cases), "refused": errors,
            "samples_input_ids_differ": differ_ids, "samples_answer_ids_differ": differ_sup,
            "true_tokens": tok_total, "specforge_tokens_not_in_true_sample": tok_wrong,
            "supervised_tokens": sup_total, "supervised_not_produced": sup_wrong,
            "produced_not_supervised": miss_total,
            "reason_counts": {},
            "rows": rows,
        }
        counts = report["templates"][name]["reason_counts"]
        for r in rows:
            for why in r.get("reasons", []):
                counts[why] = counts.get(why, 0) + 1
        print(f"{name}: {len(cases)} samples, {errors} refused; input_ids differ in {differ_ids}, "
              f"supervision differs in {differ_sup}; {sup_wrong} of {sup_total} supervised tokens were never "
              f"produced by the model, {miss_total} produced tokens not supervised as produced; "
              f"{tok_wrong} tokens of SpecForge's samples not in the true ones")
        for why, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"    {n:3d}  {why}")
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
