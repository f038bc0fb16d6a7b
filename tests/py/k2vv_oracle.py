#!/usr/bin/env python3
"""K2-Vendor-Verifier's tool-call figures, computed from a draftgen run's journal.

Written from K2-Vendor-Verifier's published code, independently of draftgen's Rust code:
- `tool_calls_eval.py` (MoonshotAI/K2-Vendor-Verifier @ 7e5a06e), `ToolCallsValidator`:
  `process_request` reads `choices[0].finish_reason`; when it is "tool_calls",
  `tool_calls_valid = all(self.validate_tool_call(tc, tools) for tc in tool_calls)` with
  `tools = request.get("tools", [])` and `tool_calls = message.get("tool_calls", [])`;
  `validate_tool_call` looks the name up with
  `next((t["function"]["parameters"] for t in tools if t["function"]["name"] == tool_name), None)`,
  fails when that is falsy, `json.loads` string arguments and runs `jsonschema.validate`; any
  exception fails the call. `compute_summary` counts `finish_tool_calls` and
  `successful_tool_call_count`; ToolCall-Schema Accuracy is their ratio (README).
- ToolCall-Trigger Similarity (README "Evaluation Metrics"; `f1_score.py` itself was not readable
  here, so this is the README's definition): over prompts answered in both runs, TP = both end with
  finish_reason "tool_calls", FP = only ours, FN = only the reference's; F1 = 2PR/(P+R).

draftgen's additions, each defined here from the request and response alone:
- the strict figure: an answer ending with "tool_calls" without calls fails;
- the same two figures over requests whose tools are written only into the system prompt as
  function JSON (glaive style), each JSON object there with a string "name" (or a
  {"function": {...}} wrapper) being a declaration, the first of a name winning;
- per-call checks, each on its own: name declared; arguments JSON; arguments fit the declared
  schema (where the name is declared, the arguments parse and the declaration has "parameters").

Usage: k2vv_oracle.py RUN_DIR [REFERENCE_RUN_DIR]; prints JSON on stdout.
"""

import glob
import json
import os
import sys

import jsonschema
from jsonschema import ValidationError, validate


def latest_successes(run_dir):
    """id -> journal line: the latest successful attempt of every prompt (first one on a tie)."""
    answers = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "journal", "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for text in f:
                try:
                    line = json.loads(text)
                except json.JSONDecodeError:
                    continue
                if line.get("status") != "success" or line.get("response") is None:
                    continue
                held = answers.get(line["id"])
                if held is None or line["attempt"] > held["attempt"]:
                    answers[line["id"]] = line
    return answers


def provider_of(line):
    response = line["response"]
    for name in (line.get("provider"), response.get("provider")):
        if isinstance(name, str) and name:
            return name
    return line.get("endpoint") or "(unknown)"


def validate_tool_call(tool_call, tools):
    """K2-Vendor-Verifier's `ToolCallsValidator.validate_tool_call`, as published."""
    try:
        tool_name = tool_call["function"]["name"]
        schema = next(
            (t["function"]["parameters"] for t in tools if t["function"]["name"] == tool_name),
            None,
        )
        if not schema:
            return False
        args = tool_call["function"]["arguments"]
        if isinstance(args, str):
            args = json.loads(args)
        validate(instance=args, schema=schema)
        return True
    except (json.JSONDecodeError, ValidationError):
        return False
    except Exception:
        return False


def functions_in_text(text):
    """Function declarations written as JSON objects into prose."""
    decoder = json.JSONDecoder()
    found, at = [], 0
    while True:
        start = text.find("{", at)
        if start < 0:
            return found
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            at = start + 1
            continue
        function = value.get("function", value) if isinstance(value, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            if all(f["name"] != function["name"] for f in found):
                found.append(function)
        at = max(end, start + 1)


def system_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return None


def declared(request):
    """('parameter' | 'system_prompt' | None, the declarations as {"name", "parameters"?})."""
    tools = request.get("tools")
    if isinstance(tools, list) and tools:
        functions = []
        for t in tools:
            f = t.get("function", t) if isinstance(t, dict) else None
            if isinstance(f, dict) and isinstance(f.get("name"), str):
                functions.append(f)
        return "parameter", functions
    functions = []
    for m in request.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "system":
            text = system_text(m.get("content"))
            if text is not None:
                functions.extend(functions_in_text(text))
    return ("system_prompt" if functions else None), functions


def arguments_of(call):
    args = call["function"]["arguments"]
    return json.loads(args) if isinstance(args, str) else args


def call_problems(call, functions):
    """draftgen's three per-call checks, each on its own."""
    name = call["function"]["name"]
    function = next((f for f in functions if f["name"] == name), None)
    problems = []
    if function is None:
        problems.append("undeclared_name")
    try:
        args = arguments_of(call)
        parsed = True
    except json.JSONDecodeError:
        problems.append("invalid_json")
        parsed = False
    if function is not None and parsed and "parameters" in function:
        schema = function["parameters"]
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError:
            problems.append("unusable_schema")
            return problems
        if not cls(schema).is_valid(args):
            problems.append("schema_violation")
    return problems


def empty_group():
    accuracy = lambda: {
        "answers": 0,
        "count_finish_reason_tool_calls": 0,
        "count_successful_tool_call": 0,
        "count_finish_reason_tool_calls_without_calls": 0,
        "count_successful_tool_call_with_calls": 0,
    }
    return {
        "answers": 0,
        "calls": 0,
        "problems": {"undeclared_name": 0, "invalid_json": 0, "schema_violation": 0, "unusable_schema": 0},
        "schema_accuracy": accuracy(),
        "schema_accuracy_system_prompt": accuracy(),
        "trigger_similarity": {"compared": 0, "tp": 0, "fp": 0, "fn": 0, "tn": 0},
    }


def ratio(num, den):
    return num / den if den else None


def finish(group, with_reference):
    for key in ("schema_accuracy", "schema_accuracy_system_prompt"):
        a = group[key]
        a["schema_accuracy"] = ratio(a["count_successful_tool_call"], a["count_finish_reason_tool_calls"])
        a["schema_accuracy_calls_required"] = ratio(
            a["count_successful_tool_call_with_calls"], a["count_finish_reason_tool_calls"]
        )
    if not with_reference:
        del group["trigger_similarity"]
        return
    t = group["trigger_similarity"]
    p, r = ratio(t["tp"], t["tp"] + t["fp"]), ratio(t["tp"], t["tp"] + t["fn"])
    t["tool_call_precision"], t["tool_call_recall"] = p, r
    t["tool_call_f1"] = None if p is None or r is None else (2 * p * r / (p + r) if p + r > 0 else 0.0)


def add(group, line, reference):
    request, response = line["request"], line["response"]
    choice = response["choices"][0] if response.get("choices") else {}
    finish_reason = choice.get("finish_reason")
    # `message.get("tool_calls", [])`; a `null` there (openai-python's `model_dump()` of an answer
    # without calls) is taken as no calls, `all()` over none.
    tool_calls = choice.get("message", {}).get("tool_calls") or []
    group["answers"] += 1
    group["calls"] += len(tool_calls)
    place, functions = declared(request)
    for call in tool_calls:
        for problem in call_problems(call, functions):
            group["problems"][problem] += 1
    if place is not None:
        tools = request["tools"] if place == "parameter" else [{"type": "function", "function": f} for f in functions]
        a = group["schema_accuracy" if place == "parameter" else "schema_accuracy_system_prompt"]
        a["answers"] += 1
        if finish_reason == "tool_calls":
            tool_calls_valid = all(validate_tool_call(tc, tools) for tc in tool_calls)
            a["count_finish_reason_tool_calls"] += 1
            a["count_finish_reason_tool_calls_without_calls"] += not tool_calls
            a["count_successful_tool_call"] += bool(tool_calls_valid)
            a["count_successful_tool_call_with_calls"] += bool(tool_calls_valid and tool_calls)
    if reference is not None:
        theirs = reference["response"]["choices"][0].get("finish_reason") == "tool_calls"
        ours = finish_reason == "tool_calls"
        key = {(True, True): "tp", (True, False): "fp", (False, True): "fn", (False, False): "tn"}[(ours, theirs)]
        group["trigger_similarity"][key] += 1
        group["trigger_similarity"]["compared"] += 1


def main():
    answers = latest_successes(sys.argv[1])
    reference = latest_successes(sys.argv[2]) if len(sys.argv) > 2 else None
    out = {"all": empty_group(), "by_provider": {}, "by_source": {}}
    for id_ in sorted(answers):
        line = answers[id_]
        theirs = reference.get(id_) if reference is not None else None
        groups = [
            out["all"],
            out["by_provider"].setdefault(provider_of(line), empty_group()),
            out["by_source"].setdefault(line.get("source") or "(unknown)", empty_group()),
        ]
        for group in groups:
            add(group, line, theirs)
    for group in [out["all"], *out["by_provider"].values(), *out["by_source"].values()]:
        finish(group, reference is not None)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
