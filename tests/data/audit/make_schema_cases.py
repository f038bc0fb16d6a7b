#!/usr/bin/env python3
"""Argument sets for Kimi-Vendor-Verifier's walle schemas, with Python `jsonschema`'s verdict.

The walle snapshot (MIT, see SOURCE.md) holds only schemas (`valid.jsonl`: schemas a validator
must accept), no argument sets. So this script derives argument sets from each schema by fixed
rules, and the verdict -- valid or not -- comes from Python `jsonschema` (the library
K2-Vendor-Verifier's `validate_tool_call` uses: `jsonschema.validate(instance, schema)`), never
from draftgen. The rules (a rule that does not apply to a schema is skipped):

  example        an instance built from the schema (required and optional properties filled
                 with a value of their declared type, enums/consts/defaults taken, bounds met,
                 `$ref` followed, first `anyOf`/`oneOf` branch) -- usually valid
  empty_object   {}
  drop_required  `example` without its first required property
  wrong_type     `example` with its first property's value replaced by one of another type
  extra_property `example` plus an undeclared property "zz_extra"
  not_an_object  [] (arguments must be a JSON object)

Usage: make_schema_cases.py KVV_CHECKOUT_DIR > schema_cases.jsonl
  where KVV_CHECKOUT_DIR is a checkout of MoonshotAI/Kimi-Vendor-Verifier at the commit in
  SOURCE.md. Output: one line per (schema, rule):
  {"suite", "line", "rule", "schema", "arguments", "valid"} with `valid` from
  `jsonschema.validators.validator_for(schema)(schema).is_valid(arguments)` (what `validate`
  decides when the schema itself passes `check_schema`; `schema_ok` records that check).
"""
import copy
import json
import pathlib
import sys

import jsonschema

DEPTH = 6


def resolve(schema, root):
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        node = root
        for part in ref[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, dict) else {}
        schema = node
        seen += 1
    return schema


def example(schema, root, depth=0):
    schema = resolve(schema, root)
    if not isinstance(schema, dict):
        return None
    for key in ("const",):
        if key in schema:
            return copy.deepcopy(schema[key])
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][0])
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return example(schema[key][0], root, depth + 1)
    if schema.get("allOf"):
        merged = {}
        for part in schema["allOf"]:
            merged.update(resolve(part, root))
        return example(merged, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        out = {}
        if depth < DEPTH:
            for name, sub in (schema.get("properties") or {}).items():
                out[name] = example(sub, root, depth + 1)
        return out
    if kind == "array":
        if depth >= DEPTH:
            return []
        items = schema.get("items")
        n = min(max(1, schema.get("minItems", 1)), 64)
        if isinstance(items, dict):
            return [example(items, root, depth + 1) for _ in range(n)]
        return []
    if kind == "string":
        text = "abc"
        n = min(schema.get("minLength", 0), 4096)  # huge minLength: stays short, verdict says so
        if len(text) < n:
            text = text + "a" * (n - len(text))
        if "maxLength" in schema:
            text = text[: schema["maxLength"]]
        return text
    if kind in ("integer", "number"):
        value = 1
        if "minimum" in schema:
            value = max(value, schema["minimum"])
        if "exclusiveMinimum" in schema and isinstance(schema["exclusiveMinimum"], (int, float)):
            value = max(value, schema["exclusiveMinimum"] + 1)
        if "maximum" in schema:
            value = min(value, schema["maximum"])
        if "exclusiveMaximum" in schema and isinstance(schema["exclusiveMaximum"], (int, float)):
            value = min(value, schema["exclusiveMaximum"] - 1)
        if kind == "integer":
            value = int(value)
        return value
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "abc"


def other_type(value):
    if isinstance(value, list):
        return {"x": 1}
    if isinstance(value, str):
        return 12345
    return "not the declared type"


def cases(schema):
    root = resolve(schema, schema)
    base = example(schema, schema)
    yield "example", base
    yield "empty_object", {}
    if isinstance(base, dict):
        required = [r for r in root.get("required", []) if r in base] if isinstance(root, dict) else []
        if required:
            dropped = dict(base)
            del dropped[required[0]]
            yield "drop_required", dropped
        if base:
            first = next(iter(base))
            wrong = dict(base)
            wrong[first] = other_type(base[first])
            yield "wrong_type", wrong
        extra = dict(base)
        extra["zz_extra"] = 1
        yield "extra_property", extra
    yield "not_an_object", []


def main():
    checkout = pathlib.Path(sys.argv[1])
    suites = sorted((checkout / "testdata/walle_validator_cases/validator_cases").glob("*/valid.jsonl"))
    for path in suites:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            schema = json.loads(line)
            cls = jsonschema.validators.validator_for(schema)
            try:
                cls.check_schema(schema)
                schema_ok = True
            except jsonschema.SchemaError:
                schema_ok = False
            validator = cls(schema)
            seen = set()
            for rule, arguments in cases(schema):
                key = json.dumps(arguments, sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                try:
                    valid = validator.is_valid(arguments)
                except Exception as e:  # an unresolvable $ref: K2VV's validate_tool_call -> False
                    print(f"{path.parent.name}:{n} {rule}: {e!r}", file=sys.stderr)
                    continue
                print(json.dumps({
                    "suite": path.parent.name, "line": n, "rule": rule, "schema_ok": schema_ok,
                    "schema": schema, "arguments": arguments, "valid": valid,
                }, ensure_ascii=False))


if __name__ == "__main__":
    main()
