"""Independent reference for tests/prepare.rs: reads ../shared/datasets with plain Python
(json, re, hashlib) and writes expected.json: per file the prompt, duplicate and skip counts and
the sorted prompt ids. It re-implements the prompt rules of DESIGN.md / issue 3 from scratch
(no draftgen code): a prompt is the conversation up to its last user turn; tool calls get
neutral ids call_N counted over the conversation; arguments are the dataset's JSON text;
id = sha256(json.dumps({"messages", "tools"}, sort_keys=True, separators=(",", ":"),
ensure_ascii=False))[:32].

Run: python3 tests/data/prepare/expected.py /work/shared/datasets > tests/data/prepare/expected.json
"""
import hashlib
import json
import re
import sys
from pathlib import Path

ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant",
         "bing": "assistant", "bard": "assistant", "assistant": "assistant",
         "model": "assistant", "system": "system"}


def pid(messages, tools):
    body = json.dumps({"messages": messages, "tools": tools or None}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def wrap(tools):
    return [t if "function" in t else {"type": "function", "function": t} for t in tools]


class Calls:
    def __init__(self):
        self.n, self.pending = 0, []

    def call(self, name, args):
        cid = f"call_{self.n}"
        self.n += 1
        self.pending.append(cid)
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}

    def answer(self):
        return self.pending.pop(0)


def user(text):
    return {"role": "user", "content": text}


def asst(text):
    return {"role": "assistant", "content": text}


def alpaca(r):
    q = r["instruction"] + ("\n\n" + r["input"] if r.get("input", "").strip() else "")
    return [user(q), asst(r.get("output", r.get("response")))], None


def sharegpt(r):
    return [{"role": ROLES[t["from"]], "content": t["value"]} for t in r["conversations"]], None


def llamafactory(r):
    calls, out = Calls(), []
    for t in r["conversations"]:
        if t["from"] == "function_call":
            c = json.loads(t["value"])
            calls.pending = []
            tc = calls.call(c["name"], json.dumps(c["arguments"], ensure_ascii=False))
            out.append({"role": "assistant", "content": "", "tool_calls": [tc]})
        elif t["from"] == "observation":
            out.append({"role": "tool", "tool_call_id": calls.answer(), "content": t["value"]})
        else:
            out.append({"role": ROLES[t["from"]], "content": t["value"]})
    return out, wrap(json.loads(r["tools"])) if r["tools"] else None


def reason(r):
    calls, out = Calls(), []
    for m in r["messages"]:
        by = {}
        for p in m["content"]:
            by.setdefault(p["type"], []).append(p["value"])
        text = by.get("text", [])
        content = "" if not text else text[0] if len(text) == 1 else [
            {"type": "text", "text": t} for t in text]
        if m["role"] == "assistant":
            calls.pending = []
            msg = {"role": "assistant", "content": content}
            if "reasoning" in by:
                msg["reasoning_content"] = "\n".join(by["reasoning"])
            tcs = []
            for v in by.get("tool_call", []):
                c = json.loads(v)
                tcs.append(calls.call(c["name"], json.dumps(c["arguments"], ensure_ascii=False)))
            if tcs:
                msg["tool_calls"] = tcs
            out.append(msg)
        elif m["role"] == "tool":
            t = "\n".join(text)
            results = [t]
            if len(calls.pending) >= 2:
                items = json.loads(t)
                if len(items) == len(calls.pending) and all("content" in i for i in items):
                    results = [i["content"] if isinstance(i["content"], str)
                               else json.dumps(i["content"], separators=(",", ":"),
                                               ensure_ascii=False) for i in items]
            for res in results:
                out.append({"role": "tool", "tool_call_id": calls.answer(), "content": res})
        else:
            out.append({"role": m["role"], "content": content})
    return out, wrap(json.loads(r["tools"]))


def glaive_v2(r):
    body = r["system"].strip().removeprefix("SYSTEM:").strip()
    out, tools = [], []
    i = body.find("{")
    pre = (body if i < 0 else body[:i]).rstrip().removesuffix("-").rstrip()
    if pre:
        out.append({"role": "system", "content": pre})
    if i >= 0:
        dec, rest = json.JSONDecoder(), body[i:]
        while rest.strip():
            f, end = dec.raw_decode(rest.strip())
            rest = rest.strip()[end:]
            if f["name"] not in [t["function"]["name"] for t in tools]:
                tools.append({"type": "function", "function": f})
    calls = Calls()
    parts = re.split(r"(?m)^[ \t]*(USER|ASSISTANT|FUNCTION RESPONSE):[ \t]?", r["chat"])
    for who, text in zip(parts[1::2], parts[2::2]):
        text = text.replace("<|endoftext|>", "").strip()
        if who == "USER":
            out.append(user(text))
        elif who == "ASSISTANT":
            calls.pending = []
            if "<functioncall>" in text:
                before, call = text.split("<functioncall>", 1)
                m = re.fullmatch(r'\s*\{"name": "([^"]+)", "arguments": \'(.*)\'\}\s*', call, re.S)
                out.append({"role": "assistant", "content": before.strip(),
                            "tool_calls": [calls.call(m.group(1), m.group(2))]})
            else:
                out.append(asst(text))
        else:
            out.append({"role": "tool", "tool_call_id": calls.answer(), "content": text})
    return out, tools


ADAPTERS = {
    "evol_instruct_shape_sample.jsonl": alpaca,
    "glaive_toolcall_en_demo.json": llamafactory,
    "glaive_v2_shape_sample.jsonl": glaive_v2,
    "magicoder_oss_shape_sample.jsonl": lambda r: ([user(r["problem"]), asst(r["solution"])], None),
    "opencodeinstruct_shape_sample.jsonl": lambda r: ([user(r["input"]), asst(r["output"])], None),
    "reason_tool_use_demo_50.jsonl": reason,
    "sharegpt_v3_sample_200.jsonl": sharegpt,
    "ultrachat_shape_sample.jsonl": lambda r: (r["messages"], None),
}


def main(root):
    expected = {}
    for name, adapter in ADAPTERS.items():
        path = Path(root) / name
        records = json.load(open(path)) if name.endswith(".json") else [
            json.loads(line) for line in open(path) if line.strip()]
        ids, dups, skipped = [], 0, {}
        for r in records:
            messages, tools = adapter(r)
            users = [i for i, m in enumerate(messages) if m["role"] == "user"]
            if not users:
                skipped["no user turn"] = skipped.get("no user turn", 0) + 1
                continue
            if not messages[users[-1]]["content"].strip():
                skipped["last user turn is empty"] = skipped.get("last user turn is empty", 0) + 1
                continue
            i = pid(messages[: users[-1] + 1], tools)
            if i in ids:
                dups += 1
            else:
                ids.append(i)
        expected[name] = {"read": len(records), "prompts": len(ids), "duplicates": dups,
                          "skipped": skipped, "ids": sorted(ids)}
    json.dump(expected, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
