"""Write tests/data/server_shapes/*.jsonl: answers made by the servers' OWN code.

For each case we know the model's token ids (reference encoders: `reference.kimi_encode` for Kimi,
`tokenizers` for Qwen3 / DeepSeek-V3), and we ask the unchanged chat-completion code of vLLM
0.33.0 (Kimi, Qwen3, DeepSeek-V3), SGLang 0.5.23 and vLLM 0.11.2 (Kimi; each in a process of its
own: `sglang`, `vllm011` — the latter's server in a child with transformers 4.x, see ChildServer)
— parser, incremental detokenizer, response assembly, SSE framing — what it would send back for
them. Stubs per server: server_stubs/{vllm,sglang,vllm011}_harness.py say what runs unchanged and
what is stood in for. Each fixture holds the request, the server's response (or its stream chunks) and the truth;
`expect` says whether the answer (with its `usage`) pins the ids down: the same case with the
information a server destroys varied ("twins": trailing reasoning whitespace, whitespace-only
content, whitespace around arguments, argument JSON spellings, call wrappers, call-id numbers;
for `length` cuts every such twin cut by the same `max_tokens`, fewer or more calls, and the
tokens the server drops or cannot show: the last ones swapped, a marker swapped for whitespace,
another incomplete character) is sent through the same code, and every twin whose answer —
streamed ones assembled, as a client journals them — is identical to the truth's (ignoring `id`,
`created`, `system_fingerprint`) is counted. The families are listed in tests/data/README.md;
`DRAFTGEN_SHOW_TWINS=1` prints each twin found. Fixture format: tests/data/README.md.

Run (deterministic: fixed seeds, fixed clock; same library versions give byte-identical files):

    DRAFTGEN_ASSETS=/path/to/shared/assets python3 tests/data/gen/make_server_corpus.py   # [kimi|qwen3|deepseek_v3|sglang|vllm011]

It `pip download --no-deps`s the pinned wheels into $DRAFTGEN_REF_CACHE (default
~/.cache/draftgen-ref), checks their sha256, extracts their `.py` files there (never into the
repository) and imports them with the stubs of `server_stubs/` for torch & co. Python deps:
see `server_stubs/requirements.txt`.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import random
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT = REPO / "tests" / "data" / "server_shapes"
CACHE = Path(os.environ.get("DRAFTGEN_REF_CACHE", Path.home() / ".cache" / "draftgen-ref"))

# Pinned wheels (the CPU-independent Python code is what we run; the platform tag only picks
# which file PyPI serves). sha256 of the exact files.
WHEELS = {
    "vllm": ("0.33.0", "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl",
             "4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa"),
    "vllm011": ("0.11.2", "vllm-0.11.2-cp38-abi3-manylinux1_x86_64.whl",
                "ea473bd4fde06940fe3f681a00476060652f62b3279ef11aaffac5768856cfe8"),
    "sglang": ("0.5.23", "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl",
               "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937"),
}

# vLLM 0.11.2 needs transformers < 5 (its tokenizer cache reads `all_special_tokens_extended`,
# gone in 5.x), hence transformers 4.57.6 with the tokenizers / huggingface-hub it accepts; its
# process imports them from $DRAFTGEN_REF_CACHE/vllm011-deps (extracted whole, sha256-checked).
VLLM011_DEPS = [
    ("transformers", "4.57.6", "transformers-4.57.6-py3-none-any.whl",
     "4c9e9de11333ddfe5114bc872c9f370509198acf0b87a832a0ab9458e2bd0550"),
    ("tokenizers", "0.22.1", "tokenizers-0.22.1-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
     "e2ef6063d7a84994129732b47e7915e8710f27f99f3a3260b8a38fc7ccd083f4"),
    ("huggingface-hub", "0.36.0", "huggingface_hub-0.36.0-py3-none-any.whl",
     "7bcc9ad17d5b3f07b57c78e79d527102d08313caa278a641993acddcb894548d"),
]


def fetch_deps(deps, tree_name: str) -> Path:
    tree = CACHE / tree_name
    for name, version, filename, sha in deps:
        path = CACHE / filename
        if not path.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                            "-d", str(CACHE), f"{name}=={version}"], check=True)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != sha:
            raise SystemExit(f"{path}: sha256 {digest} != pinned {sha}")
        marker = tree / f".{filename}.extracted"
        if not marker.exists():
            with zipfile.ZipFile(path) as wheel:
                wheel.extractall(tree)
            marker.write_text(sha)
    return tree


# Top-level modules replaced by inert stubs (server_stubs/autostub.py): GPU, kernels, media,
# metrics, grammar backends — nothing on the text-in / JSON-out path we run.
STUBBED_MODULES = [
    "torch", "triton", "vllm._C", "cv2", "numba", "xgrammar", "outlines_core", "ray",
    "prometheus_client", "gguf", "mistral_common", "openai_harmony", "diskcache", "llguidance",
    "compressed_tensors", "depyf", "einops", "watchfiles", "prometheus_fastapi_instrumentator",
    "scipy", "PIL", "sentencepiece", "torchvision", "torchaudio", "triton_kernels", "flashinfer",
    "pandas", "soundfile", "librosa", "anthropic",
]


def fetch_wheel(key: str) -> Path:
    version, filename, sha = WHEELS[key]
    name = "vllm" if key.startswith("vllm") else key
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / filename
    if not path.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--python-version", "3.11", "--platform", filename.rsplit("-", 1)[1][: -len(".whl")],
             "-d", str(CACHE), f"{name}=={version}"],
            check=True,
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha:
        raise SystemExit(f"{path}: sha256 {digest} != pinned {sha}")
    tree = CACHE / f"{name}-{version}"
    marker = tree / ".extracted"
    if not marker.exists():
        with zipfile.ZipFile(path) as wheel:
            for member in wheel.namelist():
                if member.startswith(f"{name}/") and member.endswith(".py"):
                    wheel.extract(member, tree)
        marker.write_text(sha)
    return tree


def setup_imports() -> None:
    sys.path[:0] = [str(HERE / "server_stubs"), str(HERE), str(fetch_wheel("vllm"))]
    import autostub

    autostub.install(STUBBED_MODULES)


# ---------------------------------------------------------------------------------------------
# Answers and their comparison
# ---------------------------------------------------------------------------------------------

VOLATILE = {"id", "created", "system_fingerprint"}


def normalize(body, random_call_ids: bool):
    """The answer as a client sees it, minus what differs between two identical runs: the
    response / chunk `id`, `created`, `system_fingerprint` (and tool-call ids where the server
    draws them at random)."""
    def walk(v, parent):
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k in ("created", "system_fingerprint"):
                    continue
                if k == "id" and (parent == "top" or (parent == "tool_call" and random_call_ids)):
                    continue
                out[k] = walk(x, "tool_call" if k == "tool_calls" else k)
            return out
        if isinstance(v, list):
            return [walk(x, parent) for x in v]
        return v
    return json.dumps(walk(body, "top"), sort_keys=True, ensure_ascii=False)


def journal_view(stream: bool, body):
    """The answer as a client that keeps the assembled completion sees it (what `generate`
    journals and `reconstruct` reads; OpenAI's SDKs assemble the same way): the body, or the
    stream's chunks merged — string delta fields concatenated under the server's own names, tool
    calls accumulated per `index` (`arguments` concatenated, the other fields as last sent),
    list fields (`token_ids`, …) concatenated, every other choice and top-level field its last
    non-null value, `usage` from the last chunk with one. Two streams whose chunks differ only in
    where the text was split, or in which order content and a call's deltas came, look alike."""
    if not stream:
        return body
    top, choices, usage = {}, {}, None
    for chunk in body:
        for k, v in chunk.items():
            if k not in ("choices", "usage") and v is not None:
                top[k] = v
        if chunk.get("usage"):
            usage = chunk["usage"]
        for ch in chunk.get("choices") or []:
            st = choices.setdefault(ch.get("index", 0), ({"role": "assistant", "content": None}, {}, {}))
            message, calls, fields = st
            for k, v in ch.items():
                if k == "index" or v is None:
                    continue
                if k != "delta":
                    fields[k] = fields.get(k, []) + v if isinstance(v, list) else v
                    continue
                for dk, dv in v.items():
                    if dk == "role" or dv is None:
                        continue
                    if dk != "tool_calls":
                        message[dk] = (message.get(dk) or "") + dv if isinstance(dv, str) else dv
                        continue
                    for tc in dv:
                        slot = calls.setdefault(tc.get("index", 0), {})
                        for ck, cv in tc.items():
                            if ck == "function":
                                fn = slot.setdefault("function", {})
                                for fk, fv in (cv or {}).items():
                                    if fk == "arguments" and fv is not None:
                                        fn["arguments"] = fn.get("arguments", "") + fv
                                    elif fv is not None:
                                        fn[fk] = fv
                            elif cv is not None:
                                slot[ck] = cv
    out = dict(top)
    out["choices"] = []
    for i in sorted(choices):
        message, calls, fields = choices[i]
        message = dict(message)
        if calls:
            message["tool_calls"] = [calls[j] for j in sorted(calls)]
        out["choices"].append({"index": i, "message": message, **fields})
    out["usage"] = usage
    return out


def assemble(shape_stream: bool, body) -> dict:
    """reasoning / content / tool_calls / finish / usage of an answer (for `destroyed` only)."""
    if not shape_stream:
        ch = body["choices"][0]
        msg = ch["message"]
        return {
            "reasoning": msg.get("reasoning") if "reasoning" in msg else msg.get("reasoning_content"),
            "content": msg.get("content"),
            "calls": [(c.get("id"), c["function"]["name"], c["function"]["arguments"])
                      for c in (msg.get("tool_calls") or [])],
            "finish": ch["finish_reason"],
            "usage": body.get("usage"),
        }
    reasoning, content, calls, finish, usage = None, None, {}, None, None
    for chunk in body:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for ch in chunk.get("choices", []):
            d = ch.get("delta", {})
            r = d.get("reasoning", d.get("reasoning_content"))
            if r:
                reasoning = (reasoning or "") + r
            if d.get("content"):
                content = (content or "") + d["content"]
            for tc in d.get("tool_calls") or []:
                slot = calls.setdefault(tc.get("index", 0), [None, "", ""])
                if tc.get("id"):
                    slot[0] = tc["id"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    slot[1] += fn["name"]
                if fn.get("arguments"):
                    slot[2] += fn["arguments"]
            if ch.get("finish_reason"):
                finish = ch["finish_reason"]
    return {"reasoning": reasoning, "content": content,
            "calls": [tuple(calls[i]) for i in sorted(calls)], "finish": finish, "usage": usage}


def assert_plain_json(value, where: str) -> None:
    """Every value in a fixture is plain JSON: a stub object leaking into an answer fails here."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str), where
            assert_plain_json(v, where)
    elif isinstance(value, list):
        for v in value:
            assert_plain_json(v, where)
    else:
        assert value is None or isinstance(value, (str, int, float, bool)), (where, type(value))


# ---------------------------------------------------------------------------------------------
# Kimi K2.5 cases
# ---------------------------------------------------------------------------------------------

SEC_B, SEC_E = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL_B, ARG_B, CALL_E = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"
IM_END = "<|im_end|>"
K25_TEMPLATE = "templates/kimi-k2.5-style.jinja"

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the catalogue.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"},
            "filters": {"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "range": {"type": "object", "properties": {
                    "min": {"type": "integer"}, "max": {"type": "integer"}}}}}},
            "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "set_count", "description": "Set a counter.",
        "parameters": {"type": "object", "properties": {
            "count": {"type": "integer"}, "enabled": {"type": "boolean"},
            "ratio": {"type": "number"}}, "required": ["count"]}}},
]


@dataclass
class KCase:
    label: str
    reasoning: str = ""
    content: str = ""
    calls: list = field(default_factory=list)   # [(id_text, args_text)]
    thinking: bool = True
    tools: bool = False
    history: int = 0           # earlier assistant tool calls in the request
    cut: str | None = None     # cut kind, see cut_index()
    cut_at: int = 0            # which occurrence / offset for the cut
    user: str = "What's the weather in Tokyo?"
    think_end: bool = True     # False: the tool section itself ends the reasoning (no </think>)

    def text(self) -> str:
        out = (self.reasoning + ("</think>" if self.think_end else "")) if self.thinking else ""
        out += self.content
        if self.calls:
            out += SEC_B
            for cid, args in self.calls:
                out += CALL_B + cid + ARG_B + args + CALL_E
            out += SEC_E
        return out + IM_END


VENDOR_KIMI = REPO / "tests" / "py" / "vendor" / "kimi_k25_tokenizer"


def kimi_render_k25(msgs: list, tools: list | None, kwargs: dict) -> str:
    """The prompt as K2.5's own `TikTokenTokenizer.apply_chat_template` renders it
    (tests/py/vendor/kimi_k25_tokenizer/tokenization_kimi.py): tools deep-sorted, turned into
    the TypeScript declaration by Moonshot's `encode_tools_to_typescript_style` (vendored
    unchanged) and handed to the template as `tools_ts_str` beside `tools` (left unset when the
    encoder raises, as upstream does)."""
    import importlib.util

    from reference import deep_sort_dict, kimi_render

    kwargs = dict(kwargs)
    if tools:
        spec = importlib.util.spec_from_file_location("tool_declaration_ts", VENDOR_KIMI / "tool_declaration_ts.py")
        ts = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ts)
        try:
            kwargs["tools_ts_str"] = ts.encode_tools_to_typescript_style(deep_sort_dict(tools))
        except Exception:   # noqa: BLE001 -- upstream prints and renders without it
            pass
    return kimi_render(K25_TEMPLATE, msgs, tools, True, **kwargs)


def history_messages(n: int, user: str) -> list:
    msgs = [{"role": "system", "content": "You are a helpful assistant."}]
    if n:
        msgs.append({"role": "user", "content": "Check Paris and Oslo first."})
        calls = [{"id": f"functions.get_weather:{i}", "type": "function",
                  "function": {"name": "get_weather",
                               "arguments": json.dumps({"city": ["Paris", "Oslo", "Rome"][i % 3]})}}
                 for i in range(n)]
        msgs.append({"role": "assistant", "content": "", "tool_calls": calls})
        for c in calls:
            msgs.append({"role": "tool", "tool_call_id": c["id"], "content": "sunny, 21C"})
    msgs.append({"role": "user", "content": user})
    return msgs


def special_positions(ids: list[int], special_id: int) -> list[int]:
    return [i for i, t in enumerate(ids) if t == special_id]


def kimi_cut_index(case: KCase, ids: list[int], sid: dict) -> int:
    """Token count kept (max_tokens) for the case's cut kind."""
    kind, n = case.cut, case.cut_at
    if kind == "reasoning":
        end = special_positions(ids, sid["</think>"])[0]
        return max(1, min(end - 1, 1 + n))
    if kind == "content":
        start = special_positions(ids, sid["</think>"])[0] + 1 if case.thinking else 0
        stop = (special_positions(ids, sid[SEC_B]) or special_positions(ids, sid[IM_END]))[0]
        return start + max(1, min(stop - start - 1, 1 + n))
    if kind == "tool_section_opener":
        return special_positions(ids, sid[SEC_B])[0] + 1
    if kind == "call_id":
        b = special_positions(ids, sid[CALL_B])[n]
        a = special_positions(ids, sid[ARG_B])[n]
        assert a - b > 2, "id must be several tokens to cut inside it"
        return b + 2
    if kind == "arguments":
        a = special_positions(ids, sid[ARG_B])[n]
        e = special_positions(ids, sid[CALL_E])[n]
        assert e - a > 2
        return a + 1 + (e - a - 1) // 2
    if kind == "between_calls":
        return special_positions(ids, sid[CALL_B])[n]   # after call n-1's end, before call n
    if kind == "after_call_end":
        return special_positions(ids, sid[CALL_E])[n] + 1
    if kind == "after_call_begin":
        return special_positions(ids, sid[CALL_B])[n] + 1
    if kind == "after_arg_begin":
        return special_positions(ids, sid[ARG_B])[n] + 1
    if kind == "before_section_end":
        return special_positions(ids, sid[SEC_E])[0]
    if kind == "after_section_end":
        return special_positions(ids, sid[SEC_E])[0] + 1
    if kind == "before_im_end":
        return special_positions(ids, sid[IM_END])[0]
    if kind in ("mid_character", "reasoning_at"):
        return n   # precomputed by the case builder
    raise ValueError(kind)


def mid_character_cut(enc, text: str, region_start_char: int) -> int | None:
    """A token count whose prefix ends inside a multi-byte character at or after the region."""
    from reference import kimi_encode

    ids = kimi_encode(text)
    offset = len(enc.decode_bytes(kimi_encode(text[:region_start_char])))
    acc = 0
    for i, t in enumerate(ids):
        acc += len(enc.decode_single_token_bytes(t))
        if acc <= offset:
            continue
        prefix = enc.decode_bytes(ids[: i + 1])
        try:
            prefix.decode("utf-8")
        except UnicodeDecodeError:
            return i + 1
    return None


def args(obj, style: str = "spaced") -> str:
    if style == "spaced":
        return json.dumps(obj, ensure_ascii=False)
    if style == "compact":
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if style == "ascii":
        return json.dumps(obj)
    if style == "ascii_compact":
        return json.dumps(obj, separators=(",", ":"))
    if style == "pretty":
        return json.dumps(obj, ensure_ascii=False, indent=2)
    raise ValueError(style)


def kimi_cases() -> list[KCase]:
    rng = random.Random(20261201)
    cities = ["Tokyo", "東京", "Zürich", "São Paulo", "Reykjavík", "Kraków", "Αθήνα", "서울",
              "Москва", "القاهرة", "Paris", "New York"]
    cases: list[KCase] = []
    add = cases.append
    R = ["The user wants the weather. I should call the tool.",
         "Let me think about this step by step.\nFirst, the city.",
         "用户想知道天气。",
         "Simple greeting; answer briefly."]
    # plain and reasoning
    for i, r in enumerate(R):
        add(KCase(f"plain_reasoning_{i}", reasoning=r, content="Hello! How can I help you today?"))
    for ws in [" ", "\n", "\n\n", "  \n", "\t"]:
        add(KCase("reasoning_trailing_ws", reasoning=R[0] + ws, content="Sure."))
    for ws in ["\n", "\n\n", " "]:
        add(KCase("reasoning_leading_ws", reasoning=ws + R[1], content="Done."))
    for c in ["\n\nHello there.", " Hello there.", "Hello there.\n", "Hello there. ", "\n", "   ",
              "Line one\n\nLine two\n", "émoji 🎉 ok", "中文回答：你好。"]:
        add(KCase("content_ws", reasoning=R[3], content=c))
    add(KCase("empty_content", reasoning=R[3], content=""))
    add(KCase("empty_reasoning", reasoning="", content="Hi."))
    for c in ["Hello! How can I help?", "  padded  ", "\nnewline first", "数学：2+2=4。"]:
        add(KCase("thinking_off", thinking=False, content=c))
    # tool calls
    for i in range(10):
        city = cities[i % len(cities)]
        style = ["spaced", "compact", "ascii", "spaced"][i % 4]
        add(KCase("single_call", reasoning=rng.choice(R[:3]), content=["", "Let me check.", "\n", " "][i % 4],
                  calls=[("functions.get_weather:0", args({"city": city}, style))], tools=True,
                  user=f"Weather in {city}?"))
    for n in (2, 3):
        for i in range(3):
            calls = [(f"functions.get_weather:{j}", args({"city": cities[(i + j) % len(cities)], "unit": "c"}))
                     for j in range(n)]
            add(KCase(f"parallel_{n}_calls", reasoning=R[0], content="" if i else "Checking both.",
                      calls=calls, tools=True))
    for h in (1, 2, 3):
        add(KCase("history_offset", reasoning=R[0], history=h, tools=True,
                  calls=[(f"functions.get_weather:{h}", args({"city": "Tokyo"}))]))
        add(KCase("history_offset_model_restarts_at_0", reasoning=R[0], history=h, tools=True,
                  calls=[("functions.get_weather:0", args({"city": "Tokyo"}))]))
        add(KCase("history_offset_parallel", reasoning=R[0], history=h, tools=True,
                  calls=[(f"functions.get_weather:{h}", args({"city": "Tokyo"})),
                         (f"functions.search:{h + 1}", args({"query": "umbrella"}))]))
    add(KCase("model_id_number_odd", reasoning=R[0], tools=True,
              calls=[("functions.get_weather:7", args({"city": "Tokyo"}))]))
    add(KCase("model_id_without_prefix", reasoning=R[0], tools=True,
              calls=[("get_weather:0", args({"city": "Tokyo"}))]))
    nested = {"query": "rain gear", "filters": {"tags": ["umbrella", "☔", "coat"],
                                               "range": {"min": 1, "max": 20}}}
    for style in ("spaced", "compact", "ascii", "pretty"):
        add(KCase("nested_args", reasoning=R[0], tools=True, calls=[("functions.search:0", args(nested, style))]))
    for a in [' {"city": "Tokyo"} ', '\n{"city": "Tokyo"}\n', '{"city": "Tokyo"}\n', '  {"city":"Tokyo"}',
              '{\n  "city": "Tokyo"\n}']:
        add(KCase("args_ws", reasoning=R[0], tools=True, calls=[("functions.get_weather:0", a)]))
    for a in ['{"count": "3"}', '{"count": 3, "enabled": "true"}', '{"count": "7", "ratio": "0.5"}',
              '{"count":"12","enabled":"false"}', '{"count": 3}', '{"count": 3.0}']:
        add(KCase("schema_mismatch", reasoning=R[0], tools=True, calls=[("functions.set_count:0", a)],
                  user="Set the counter."))
    add(KCase("thinking_off_call", thinking=False, tools=True, content="",
              calls=[("functions.get_weather:0", args({"city": "Tokyo"}))]))
    add(KCase("thinking_off_call_content", thinking=False, tools=True, content="Checking.",
              calls=[("functions.get_weather:0", args({"city": "東京"}))]))
    add(KCase("reasoning_ws_then_call", reasoning=R[0] + "\n", tools=True, content="",
              calls=[("functions.get_weather:0", args({"city": "Tokyo"}))]))
    add(KCase("section_without_think_end", reasoning=R[0], tools=True, content="", think_end=False,
              calls=[("functions.get_weather:0", args({"city": "Tokyo"}))]))
    add(KCase("section_without_think_end_ws", reasoning=R[0] + "\n", tools=True, content="", think_end=False,
              calls=[("functions.get_weather:0", args({"city": "Tokyo"}))]))
    # cuts
    base_call = KCase("cut", reasoning=R[0], content="Let me check.", tools=True,
                      calls=[("functions.get_weather:0", args({"city": "Tokyo", "unit": "c"})),
                             ("functions.search:1", args({"query": "umbrella shops"}))])
    for kind, ns in [("tool_section_opener", [0]), ("after_call_begin", [0, 1]), ("call_id", [0, 1]),
                     ("after_arg_begin", [0, 1]), ("arguments", [0, 1]), ("after_call_end", [0, 1]),
                     ("between_calls", [1]), ("before_section_end", [0]), ("after_section_end", [0]),
                     ("reasoning", [0, 3, 6]), ("content", [0, 1])]:
        for n in ns:
            add(replace(base_call, label=f"cut_{kind}", cut=kind, cut_at=n))
            add(replace(base_call, label=f"cut_{kind}_nocontent", content="", cut=kind, cut_at=n))
    single = KCase("cut_single", reasoning=R[2], content="", tools=True,
                   calls=[("functions.get_weather:0", args({"city": "東京"}))])
    for kind in ["tool_section_opener", "after_call_begin", "call_id", "after_arg_begin", "arguments",
                 "after_call_end", "before_section_end", "after_section_end"]:
        add(replace(single, label=f"cut_single_{kind}", cut=kind))
    for r in R:
        add(KCase("cut_reasoning_plain", reasoning=r + " and more words follow here", content="x",
                  cut="reasoning", cut_at=4))
    add(KCase("cut_content_plain", reasoning=R[3], content="Hello! How can I help you today?", cut="content", cut_at=3))
    add(KCase("cut_before_im_end", reasoning=R[3], content="Hello!", cut="before_im_end"))
    add(KCase("cut_before_im_end_ws", reasoning=R[3], content="Hello!\n", cut="before_im_end"))
    add(KCase("cut_thinking_off", thinking=False, content="Hello! How can I help you today?", cut="content", cut_at=2))
    # mid-character cuts: rare characters that tiktoken splits into byte pieces
    for rare in ["𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "🦜🪿🫎", "ꙮꙮ", "𓀀𓁐"]:
        add(KCase("mid_character_content", reasoning=R[3], content="Look: " + rare, cut="mid_character"))
        add(KCase("mid_character_reasoning", reasoning="Hmm " + rare + " ok", content="x", cut="mid_character"))
        add(KCase("mid_character_args", reasoning=R[0], tools=True,
                  calls=[("functions.search:0", args({"query": rare}))], cut="mid_character"))
    # random mixes (seeded)
    for i in range(64):
        n = rng.choice([0, 1, 1, 2, 3])
        calls = []
        for j in range(n):
            t = rng.choice(["get_weather", "search", "set_count"])
            obj = ({"city": rng.choice(cities)} if t == "get_weather" else
                   {"query": rng.choice(["a b", "ñandú", "x\"y", "tab\there", "日本 語"])} if t == "search" else
                   {"count": rng.choice([1, "2", 30]), "enabled": rng.choice([True, "false"])})
            calls.append((f"functions.{t}:{j}", args(obj, rng.choice(["spaced", "compact", "ascii"]))))
        c = KCase("random_mix", reasoning=rng.choice(R) + rng.choice(["", " ", "\n"]),
                  content=rng.choice(["", "OK.", "\n", "Sure thing!\n", " "]), calls=calls, tools=bool(calls) or rng.random() < .3,
                  thinking=rng.random() < .85, history=rng.choice([0, 0, 1, 2]) if calls else 0)
        if not c.thinking:
            c.reasoning = ""
        if rng.random() < .25:
            kinds = ["content"] + (["reasoning"] if c.thinking else [])
            if calls:
                kinds += ["tool_section_opener", "arguments", "after_call_end", "after_arg_begin", "before_section_end"]
            c.cut = rng.choice(kinds)
            c.cut_at = 0 if c.cut != "reasoning" else rng.randrange(6)
        add(c)
    return cases


# ---------------------------------------------------------------------------------------------
# Twins: the same case with destroyed information varied
# ---------------------------------------------------------------------------------------------

WS = ["", " ", "\n", "\n\n", "  ", " \n", "\t"]


def kimi_twin_cases(case: KCase) -> list[tuple[str, KCase]]:
    out = []
    if case.thinking:
        core = case.reasoning.rstrip()
        for w in WS:
            if core + w != case.reasoning:
                out.append(("server_strips_reasoning_trailing_whitespace", replace(case, reasoning=core + w)))
    if case.calls and case.content.strip() == "":
        for w in WS:
            if w != case.content:
                out.append(("server_nulls_whitespace_content", replace(case, content=w)))
    if case.content.strip():
        core = case.content.strip()
        lead = case.content[: len(case.content) - len(case.content.lstrip())]
        trail = case.content[len(case.content.rstrip()):]
        for lw in ["", " "]:
            for tw in ["", " "]:
                if lw + core + tw != case.content:
                    out.append(("spaces_around_special_tokens", replace(case, content=lw + core + tw)))
        del lead, trail
    for i, (cid, a) in enumerate(case.calls):
        core = a.strip()
        for lw in ["", " ", "\n"]:
            for tw in ["", " ", "\n"]:
                if lw + core + tw != a:
                    calls = list(case.calls)
                    calls[i] = (cid, lw + core + tw)
                    out.append(("server_strips_argument_whitespace", replace(case, calls=calls)))
        try:
            obj = json.loads(a)
        except ValueError:
            obj = None
        if obj is not None:
            for style in ("spaced", "compact", "ascii"):
                b = args(obj, style)
                if b != a:
                    calls = list(case.calls)
                    calls[i] = (cid, b)
                    out.append(("arguments_reserialized", replace(case, calls=calls)))
            # a value of another JSON type with the same schema coercion ("3" vs 3)
            if isinstance(obj, dict):
                for k, v in obj.items():
                    alt = str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else (
                        ("true" if v else "false") if isinstance(v, bool) else None)
                    if isinstance(v, str) and v.lstrip("-").isdigit():
                        alt = int(v)
                    if alt is not None:
                        o2 = dict(obj)
                        o2[k] = alt
                        calls = list(case.calls)
                        calls[i] = (cid, args(o2, "spaced"))
                        out.append(("arguments_reserialized", replace(case, calls=calls)))
        name, _, num = cid.rpartition(":")
        if num.isdigit():
            for m in {0, int(num) + 1, case.history + i} - {int(num)}:
                calls = list(case.calls)
                calls[i] = (f"{name}:{m}", a)
                out.append(("server_rewrites_tool_call_ids", replace(case, calls=calls)))
    return out


CUT_REASON = {
    "tool_section_opener": "cut_inside_tool_section", "after_call_begin": "cut_inside_tool_section",
    "call_id": "cut_inside_tool_section", "after_arg_begin": "cut_inside_tool_section",
    "arguments": "cut_inside_tool_section", "between_calls": "cut_after_tool_call",
    "after_call_end": "cut_after_tool_call", "before_section_end": "cut_after_tool_call",
    "after_section_end": "cut_after_tool_call", "mid_character": "partial_character",
}

CUT_FORMAT = {  # the format file's cut vocabulary
    "after_call_begin": "call_id", "after_arg_begin": "arguments", "before_section_end": "after_call_end",
    "after_section_end": "after_call_end", "before_im_end": "content", "reasoning_at": "reasoning",
}


def last_token_twins(ids: list[int], alt_ids: list[int]) -> list[list[int]]:
    """The stream with its last token swapped for each of `alt_ids` (markers included)."""
    return [ids[:-1] + [alt] for alt in alt_ids if alt != ids[-1]]


class Fragments:
    """Tokens whose bytes are clean text followed by an incomplete UTF-8 character (a lead byte
    and fewer continuation bytes than it announces), indexed by that clean text. A `length` cut
    ending in one of them shows the text and one U+FFFD whatever the incomplete bytes were."""

    PER_PREFIX = 3   # twins tried per cut (the lowest ids): one same answer suffices

    def __init__(self, n_vocab: int, token_bytes):
        self.token_bytes = token_bytes
        self.by_prefix: dict[bytes, list[int]] = {}
        for t in range(n_vocab):
            try:
                b = token_bytes(t)
            except (KeyError, ValueError):
                continue
            split = self.split(b)
            if split is not None:
                self.by_prefix.setdefault(split[0], []).append(t)

    @staticmethod
    def split(b: bytes):
        """(clean text, incomplete character) of a token's bytes, or None."""
        for j in range(len(b) - 1, max(-1, len(b) - 4), -1):
            lead, tail = b[j], b[j + 1:]
            if 0x80 <= lead < 0xC0:
                continue   # a continuation byte: the lead is further left
            if lead < 0xC2 or lead > 0xF4:
                return None
            need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            if len(tail) + 1 < need and all(0x80 <= c < 0xC0 for c in tail):
                try:
                    b[:j].decode("utf-8")
                except UnicodeDecodeError:
                    return None
                return b[:j], b[j:]
            return None
        return None

    def same_prefix(self, token: int) -> list[int]:
        split = self.split(self.token_bytes(token))
        if split is None:
            return []
        return [t for t in self.by_prefix.get(split[0], []) if t != token][: self.PER_PREFIX]


def substitution_twins(ids: list[int], k: int, special_ids: set[int], alt_ids: list[int]) -> list[list[int]]:
    """For a cut at k: the last few (non-special) tokens swapped for others — what a server that
    drops an incomplete tail cannot show."""
    out = []
    for p in range(max(0, k - 4), k):
        if ids[p] in special_ids:
            continue
        for alt in alt_ids:
            if alt != ids[p]:
                twin = list(ids[:k])
                twin[p] = alt
                out.append(twin)
    return out


# ---------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    kind: str
    version: str
    stream: bool
    spaces: bool
    return_token_ids: bool = False

    def slug(self) -> str:
        s = f"{self.kind}-{self.version}/{'stream' if self.stream else 'nonstream'}"
        if self.kind == "vllm":
            s += "/spaces" if self.spaces else "/nospaces"
        if self.return_token_ids:
            s += "/token_ids"
        return s


VLLM_SHAPES = [
    Shape("vllm", "0.33.0", False, False), Shape("vllm", "0.33.0", False, True),
    Shape("vllm", "0.33.0", True, False), Shape("vllm", "0.33.0", True, True),
]
HF_SHAPES = [Shape("vllm", "0.33.0", False, True), Shape("vllm", "0.33.0", True, True)]
VLLM_TOKEN_ID_SHAPES = [Shape("vllm", "0.33.0", False, False, True), Shape("vllm", "0.33.0", True, True, True)]
# SGLang's slow-tokenizer detokenizer never inserts spaces (decode_without_hf_kwargs), whatever
# spaces_between_special_tokens says; its return_token_ids is not part of this corpus.
VLLM011_SHAPES = [
    Shape("vllm", "0.11.2", False, False), Shape("vllm", "0.11.2", False, True),
    Shape("vllm", "0.11.2", True, False), Shape("vllm", "0.11.2", True, True),
]
SGLANG_SHAPES = [Shape("sglang", "0.5.23", False, False), Shape("sglang", "0.5.23", True, False)]


def vllm_request(model: str, messages, tools, max_tokens: int, shape: Shape, chat_kwargs) -> dict:
    req = {"model": model, "messages": messages, "max_tokens": max_tokens, "stream": shape.stream}
    if tools:
        req["tools"] = tools
    if chat_kwargs:
        req["chat_template_kwargs"] = chat_kwargs
    if shape.stream:
        req["stream_options"] = {"include_usage": True}
    if not shape.spaces and shape.kind == "vllm":
        req["spaces_between_special_tokens"] = False
    if shape.return_token_ids:
        req["return_token_ids"] = True
    return req


class Runner:
    """Calls a server and memoizes answers by (shape, request, ids)."""

    def __init__(self, servers: dict):
        self.servers = servers
        self.calls = 0

    def answer(self, shape: Shape, request: dict, prompt_ids, completion_ids, seed: int):
        self.calls += 1
        out = self.servers[shape.kind].complete(request, prompt_ids, completion_ids, seed)
        assert out["kind"] == ("chunks" if shape.stream else "response")
        assert_plain_json(out["body"], "answer")
        return out["body"]


def show_twin(name: str, reason: str, truth: str, twin: str) -> None:
    """DRAFTGEN_SHOW_TWINS=1: each twin found, as the text where it departs from the truth."""
    if not os.environ.get("DRAFTGEN_SHOW_TWINS"):
        return
    i = next((j for j, (a, b) in enumerate(zip(truth, twin)) if a != b), min(len(truth), len(twin)))
    print(f"twin {name} [{reason}]\n   truth {truth[max(0, i - 30):]!r}\n   twin  {twin[max(0, i - 30):]!r}",
          file=sys.stderr)


def seed_of(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")


def build_kimi(runner: Runner, base_shapes=None, token_id_shapes=None, cases=None, tools_declared=None,
               extra_twins=None, not_destroyed=frozenset()) -> list[dict]:
    """Fixtures for `cases` (default `kimi_cases()`) through every shape; `tools_declared` replaces
    TOOLS, `extra_twins(case, ids, specials, alt_ids, sid)` adds twin id streams (reason
    `section_buffer_cut`, or `(reason, ids)`), and a twin reason in `not_destroyed` is not reported as destroyed
    (make_long_leak.py uses all four)."""
    from reference import kimi_encode, kimi_encoding

    enc = kimi_encoding()
    sid = {t: enc._special_tokens[t] for t in ["</think>", SEC_B, SEC_E, CALL_B, ARG_B, CALL_E, IM_END]}
    specials = set(enc._special_tokens.values())
    alt_ids = [kimi_encode("x")[0], kimi_encode("7")[0]]
    # single-byte tokens that start a 4-byte / 3-byte UTF-8 sequence
    kimi_fragment_ids = [enc.encode_single_token(bytes([0xF0])), enc.encode_single_token(bytes([0xE6]))]
    kimi_fragments = Fragments(enc.n_vocab, enc.decode_single_token_bytes)
    kimi_ws_ids = [kimi_encode(" ")[0], kimi_encode("\n")[0]]
    fixtures = []
    counter: dict[str, int] = {}

    def completion(case: KCase):
        # a case may spell its stream's ids itself (special-token text written as plain pieces)
        full = case.ids() if hasattr(case, "ids") else kimi_encode(case.text())
        if case.cut is None:
            return full, 4096
        if case.cut == "mid_character":
            region = case.text().find("</think>") + 8 if (case.thinking and "reasoning" not in case.label) else 0
            if "args" in case.label:
                region = case.text().find(ARG_B)
            k = mid_character_cut(enc, case.text(), region)
            assert k is not None, case.label
        else:
            k = kimi_cut_index(case, full, sid)
        assert 0 < k < len(full), (case.label, k, len(full))
        return full[:k], k

    for case in kimi_cases() if cases is None else cases:
        msgs = history_messages(case.history, case.user)
        tools = (TOOLS if tools_declared is None else tools_declared) if case.tools else None
        chat_kwargs = None if case.thinking else {"thinking": False}
        tkw = {} if case.thinking else {"thinking": False}
        prompt_text = kimi_render_k25(msgs, tools, tkw)
        prompt_ids = kimi_encode(prompt_text)
        truth_ids, max_tokens = completion(case)
        # twins: structurally varied cases, cut at the same kind of place, plus token swaps in the
        # tail a cut leaves
        twin_sets = []
        for reason, tc in kimi_twin_cases(case):
            if case.cut:
                # the same request (same max_tokens), the model having written the twin: cut by
                # the same limit wherever that falls in the twin's text
                twin_sets.append((reason, kimi_encode(tc.text())[:max_tokens], max_tokens))
            try:
                t_ids, t_max = completion(tc)
            except (AssertionError, IndexError):
                continue
            twin_sets.append((reason, t_ids, t_max))
        if case.cut and case.cut != "mid_character":
            for t in substitution_twins(truth_ids, len(truth_ids), specials, alt_ids):
                twin_sets.append((CUT_REASON.get(case.cut, "cut"), t, max_tokens))
            # the last token (a marker too) swapped for whitespace: beside a marker, a space or
            # newline may read as the joining space the server puts around special tokens, or be
            # dropped with the marker
            for t in last_token_twins(truth_ids, kimi_ws_ids):
                twin_sets.append((CUT_REASON.get(case.cut, "spaces_around_special_tokens"), t, max_tokens))
        if case.cut and truth_ids[-1] == sid[SEC_B] and sid["</think>"] in truth_ids:
            # a cut right after the opener, with no content: the same count without `</think>`
            # (the opener ends the reasoning) and one token further, on the first call's begin
            t_ids = [t for t in truth_ids if t != sid["</think>"]] + [sid[CALL_B]]
            twin_sets.append(("cut_inside_tool_section", t_ids, max_tokens))
        if case.cut == "mid_character":
            # the last token is a fragment of a character: other fragments read the same
            for t in substitution_twins(truth_ids, len(truth_ids), specials, kimi_fragment_ids)[-len(kimi_fragment_ids):]:
                twin_sets.append(("partial_character", t, max_tokens))
            # the same clean text before another incomplete character (" \xf0\x9f" for " \xea")
            for t in last_token_twins(truth_ids, kimi_fragments.same_prefix(truth_ids[-1])):
                twin_sets.append(("partial_character", t, max_tokens))
        if extra_twins is not None:
            for t in extra_twins(case, truth_ids, specials, alt_ids, sid):
                # a twin is its ids, or (reason, ids)
                reason, t = t if isinstance(t, tuple) else ("section_buffer_cut", t)
                twin_sets.append((reason, t, max_tokens))
        seen = {tuple(truth_ids)}
        uniq = []
        for reason, t_ids, t_max in twin_sets:
            if tuple(t_ids) not in seen:
                seen.add(tuple(t_ids))
                uniq.append((reason, t_ids, t_max))
        shapes = list(VLLM_SHAPES if base_shapes is None else base_shapes)
        token_id_shapes = VLLM_TOKEN_ID_SHAPES if base_shapes is None else (token_id_shapes or [])
        if token_id_shapes and counter.get("token_ids", 0) < 12 and (case.calls or case.cut):
            counter["token_ids"] = counter.get("token_ids", 0) + 1
            shapes += token_id_shapes
        for shape in shapes:
            key = f"{case.label}/{shape.slug()}"
            counter[key] = counter.get(key, 0) + 1
            name = f"kimi_k25/{shape.slug()}/{case.label}/{counter[key]:03d}"
            request = vllm_request("kimi-k2.5", msgs, tools, max_tokens, shape, chat_kwargs)
            body = runner.answer(shape, request, prompt_ids, truth_ids, seed_of(name))
            again = runner.answer(shape, request, prompt_ids, truth_ids, seed_of(name))
            assert body == again, f"{name}: not deterministic"
            norm = normalize(journal_view(shape.stream, body), random_call_ids=False)
            norm_chunks = normalize(body, random_call_ids=False)
            twins, twins_in_chunks, twin_reasons = 0, 0, set()
            for reason, t_ids, t_max in uniq:
                if t_max != max_tokens and case.cut:
                    continue   # a different max_tokens is a different request
                if not case.cut and len(t_ids) != len(truth_ids):
                    continue   # usage.completion_tokens differs: never the same answer
                t_req = vllm_request("kimi-k2.5", msgs, tools, max_tokens, shape, chat_kwargs)
                t_body = runner.answer(shape, t_req, prompt_ids, t_ids, seed_of(name))
                twins_in_chunks += normalize(t_body, random_call_ids=False) == norm_chunks
                if normalize(journal_view(shape.stream, t_body), random_call_ids=False) == norm:
                    twins += 1
                    twin_reasons.add(reason)
                    show_twin(name, reason, enc.decode(truth_ids), enc.decode(t_ids))
            view = assemble(shape.stream, body)
            complete = truth_ids.count(sid[CALL_E])
            destroyed = [d for d in kimi_destroyed(case, shape, view, twin_reasons, complete)
                         if d not in not_destroyed]
            fx = {
                "name": name, "family": "kimi-k2.5", "profile": "kimi-k2.5", "model": "kimi-k2.5",
                "chat_template": K25_TEMPLATE,
                "server": {"kind": shape.kind, "version": shape.version, "stream": shape.stream,
                           "spaces_between_special_tokens": shape.spaces, "tool_parser": "kimi_k2",
                           "reasoning_parser": "kimi_k2", "return_token_ids": shape.return_token_ids},
                "request": request,
            }
            fx["chunks" if shape.stream else "response"] = body
            fx["truth"] = {"completion_ids": truth_ids, "completion_text": enc.decode(truth_ids),
                           "prompt_ids": prompt_ids}
            fx["expect"] = {"determined": twins == 0, "twins": twins, "destroyed": destroyed,
                            "cut": None if case.cut is None else CUT_FORMAT.get(case.cut, case.cut)}
            if shape.stream:
                fx["expect"]["twins_in_chunks"] = twins_in_chunks
            fixtures.append(fx)
    return fixtures


def kimi_destroyed(case: KCase, shape: Shape, view: dict, twin_reasons: set, complete: int) -> list[str]:
    d = set(twin_reasons)
    if case.thinking and case.reasoning != case.reasoning.rstrip() and view["reasoning"] is not None \
            and not view["reasoning"].endswith(case.reasoning[len(case.reasoning.rstrip()):]):
        d.add("server_strips_reasoning_trailing_whitespace")
    if case.calls and case.content and not case.content.strip() and view["content"] is None:
        d.add("server_nulls_whitespace_content")
    for (cid, a), got in zip(case.calls[:complete], view["calls"][:complete]):
        got_args = got[2]
        if shape.spaces and shape.stream:   # one inserted space each side, not a change of the model's text
            got_args = got_args[1:] if got_args.startswith(" ") else got_args
            got_args = got_args[:-1] if got_args.endswith(" ") else got_args
        got = (got[0], got[1], got_args)
        if got[2] != a and got[2].strip() == a.strip():
            d.add("server_strips_argument_whitespace")
        elif got[2].strip() != a.strip():
            d.add("arguments_reserialized")
        if got[0] is not None and got[0] != cid:
            d.add("server_rewrites_tool_call_ids")
    if shape.spaces and shape.kind == "vllm":
        d.add("spaces_around_special_tokens")
    elif "spaces_around_special_tokens" in d:
        d.discard("spaces_around_special_tokens")
        print(f"note: content-whitespace twin without spaces: {case.label} {shape.slug()}", file=sys.stderr)
    if case.cut in CUT_REASON:
        d.add(CUT_REASON[case.cut])
    return sorted(d)



# ---------------------------------------------------------------------------------------------
# Qwen3 and DeepSeek-V3 (HF fast tokenizers → vLLM's fast incremental detokenizer)
# ---------------------------------------------------------------------------------------------

@dataclass
class HCase:
    label: str
    reasoning: str | None = None    # Qwen3 thinking: text between "<think>\n" and "\n</think>"
    content: str = ""
    calls: list = field(default_factory=list)   # [(name, args_text)]
    thinking: bool = True
    cut: str | None = None
    cut_at: int = 0
    history: int = 0
    canonical: bool = True   # layout checked against the model's own chat template
    wrapper: str = "spaced"  # Qwen3: how the `{"name": …, "arguments": …}` around each call is spelled


@dataclass(frozen=True)
class HFamily:
    slug: str          # fixture-name prefix
    family: str        # family / profile / model
    tool_parser: str
    reasoning_parser: str
    end: str
    open_marks: tuple  # tokens that open a call (for cuts)
    close_mark: str    # token that closes a call


# Spellings of hermes' call wrapper (its parser json.loads it and re-serializes the arguments).
QWEN3_WRAPPERS = {"spaced": '{{"name": "{name}", "arguments": {args}}}',
                  "space_before_close": '{{"name": "{name}", "arguments": {args} }}',
                  "compact": '{{"name":"{name}","arguments":{args}}}'}

QWEN3 = HFamily("qwen3", "qwen3", "hermes", "qwen3", "<|im_end|>", ("<tool_call>",), "</tool_call>")
DSV3 = HFamily("deepseek_v3", "deepseek-v3", "deepseek_v3", "deepseek_v3", "<｜end▁of▁sentence｜>",
               ("<｜tool▁call▁begin｜>",), "<｜tool▁call▁end｜>")


def hf_text(fam: HFamily, case: HCase) -> str:
    if fam is QWEN3:
        out = ""
        if case.thinking:
            out += "<think>\n" + (case.reasoning or "") + "\n</think>\n\n"
        out += case.content
        for i, (name, a) in enumerate(case.calls):
            if i or case.content:
                out += "\n"
            out += "<tool_call>\n" + QWEN3_WRAPPERS[case.wrapper].format(name=name, args=a) + "\n</tool_call>"
        return out + fam.end
    out = case.content
    if case.calls:
        out += "<｜tool▁calls▁begin｜>"
        for i, (name, a) in enumerate(case.calls):
            out += ("\n" if i else "") + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n" + a \
                + "\n```<｜tool▁call▁end｜>"
        out += "<｜tool▁calls▁end｜>"
    return out + fam.end


def hf_messages(case: HCase) -> list:
    msgs = [{"role": "system", "content": "You are a helpful assistant."}]
    if case.history:
        msgs.append({"role": "user", "content": "Check Paris first."})
        msgs.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}} for i in range(case.history)]})
        for i in range(case.history):
            msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "sunny"})
    msgs.append({"role": "user", "content": "What's the weather in Tokyo?"})
    return msgs


def check_layout(fam: HFamily, case: HCase, msgs: list, tools, prompt_text: str, kwargs: dict) -> None:
    """The completion text is what the model's own template writes for this answer (Qwen3)."""
    from reference import hf_render

    if fam is not QWEN3 or not case.canonical:
        return
    answer = {"role": "assistant", "content": case.content}
    if case.thinking:
        answer["reasoning_content"] = case.reasoning or ""
    if case.calls:
        answer["tool_calls"] = [{"type": "function", "function": {"name": n, "arguments": json.loads(a)}}
                                for n, a in case.calls]
    full, _ = hf_render(fam.family, msgs + [answer], tools, False, **kwargs)
    assert full.startswith(prompt_text), case.label
    rest = full[len(prompt_text):]
    mine = hf_text(fam, case)
    assert rest.startswith(mine) and rest[len(mine):] in ("\n", ""), (case.label, rest, mine)


def hf_cases(fam: HFamily) -> list[HCase]:
    rng = random.Random(7 if fam is QWEN3 else 8)
    cases = []
    add = cases.append
    think = fam is QWEN3
    R = ["The user wants the weather in Tokyo. I'll call the tool.", "Simple question.", "思考一下。"]
    for r in R:
        add(HCase("plain", reasoning=r if think else None, content="Hello! How can I help?", thinking=think))
    if think:
        for r in ["\n" + R[0], R[0] + "\n", R[0] + " "]:
            add(HCase("reasoning_ws", reasoning=r, content="Sure.", canonical=False))
        add(HCase("thinking_off", content="Hello! How can I help?", thinking=False))
        add(HCase("thinking_off_call", content="", thinking=False, calls=[("get_weather", '{"city": "Tokyo"}')]))
        add(HCase("empty_reasoning", reasoning="", content="Hi."))
    for c in ["\nHello.", "Hello.\n", " Hello.", "中文：你好。", "Line one\n\nLine two"]:
        add(HCase("content_ws", reasoning=R[1] if think else None, content=c, thinking=think, canonical=False))
    cities = ["Tokyo", "東京", "Zürich", "São Paulo", "Αθήνα", "서울"]
    for i in range(8):
        style = ["spaced", "compact", "ascii"][i % 3]
        add(HCase("single_call", reasoning=R[0] if think else None, content=["", "Let me check."][i % 2],
                  thinking=think, calls=[("get_weather", args({"city": cities[i % len(cities)]}, style))],
                  canonical=style == "spaced"))
    for n in (2, 3):
        add(HCase(f"parallel_{n}_calls", reasoning=R[0] if think else None, thinking=think,
                  calls=[("get_weather", args({"city": cities[j]})) for j in range(n)]))
    nested = {"query": "rain gear", "filters": {"tags": ["umbrella", "☔"], "range": {"min": 1, "max": 20}}}
    for style in ("spaced", "compact", "ascii", "pretty"):
        add(HCase("nested_args", reasoning=R[0] if think else None, thinking=think,
                  calls=[("search", args(nested, style))], canonical=style == "spaced"))
    for a in ['{"count": "3"}', '{"count": 3, "enabled": "true"}', '{"count":"12"}']:
        add(HCase("schema_mismatch", reasoning=R[0] if think else None, thinking=think,
                  calls=[("set_count", a)], canonical=False))
    add(HCase("history", reasoning=R[0] if think else None, thinking=think, history=2,
              calls=[("get_weather", args({"city": "Tokyo"}))], canonical=False))
    base = HCase("cut", reasoning=R[0] if think else None, content="Let me check.", thinking=think,
                 calls=[("get_weather", args({"city": "Tokyo"})), ("search", args({"query": "umbrella"}))])
    for kind, ns in [("reasoning", [0, 4]) if think else ("content", [1]), ("content", [0]),
                     ("tool_section_opener", [0, 1]), ("arguments", [0, 1]), ("after_call_end", [0, 1]),
                     ("between_calls", [1]), ("before_end", [0])]:
        for n in ns:
            add(replace(base, label=f"cut_{kind}", cut=kind, cut_at=n))
            add(replace(base, label=f"cut_{kind}_nocontent", content="", cut=kind, cut_at=n))
    for rare in ["𝔘𝔫𝔦", "🦜🪿"]:
        add(HCase("mid_character_content", reasoning=R[1] if think else None, thinking=think,
                  content="Look: " + rare, cut="mid_character"))
    for i in range(16):
        n = rng.choice([0, 1, 2])
        calls = [(t, args({"city": rng.choice(cities)} if t == "get_weather" else {"query": "x y"},
                          rng.choice(["spaced", "compact"]))) for t in rng.choices(["get_weather", "search"], k=n)]
        c = HCase("random_mix", reasoning=rng.choice(R) if think else None, thinking=think,
                  content=rng.choice(["", "OK.", "Sure!"]), calls=calls, canonical=False)
        if rng.random() < .3:
            c.cut = rng.choice(["content"] + (["arguments", "after_call_end"] if calls else []))
        add(c)
    return cases


def hf_cut_index(fam: HFamily, case: HCase, ids: list[int], tok) -> int:
    kind, n = case.cut, case.cut_at
    opens = [i for i, t in enumerate(ids) if tok.convert_ids_to_tokens(t) in fam.open_marks]
    closes = [i for i, t in enumerate(ids) if tok.convert_ids_to_tokens(t) == fam.close_mark]
    end = len(ids) - 1
    if kind == "reasoning":
        think_end = [i for i, t in enumerate(ids) if tok.convert_ids_to_tokens(t) == "</think>"][0]
        return 2 + min(n, think_end - 3)
    if kind == "content":
        start = ([i for i, t in enumerate(ids) if tok.convert_ids_to_tokens(t) == "</think>"] or [-1])[0] + 2
        if not case.thinking:
            start = 0
        stop = (opens or [end])[0]
        return min(start + 1 + n, stop - 1)
    if kind == "tool_section_opener":
        return opens[n] + 1
    if kind == "arguments":
        return (opens[n] + closes[n]) // 2 + 2
    if kind == "after_call_end":
        return closes[n] + 1
    if kind == "between_calls":
        return opens[n]
    if kind == "before_end":
        return end
    raise ValueError(kind)


def build_hf(fam: HFamily, runner: Runner) -> list[dict]:
    from reference import hf_encode, hf_render, hf_tokenizer

    tok = hf_tokenizer(fam.family)
    specials = set(tok.get_added_vocab().values())
    alt_ids = [hf_encode(fam.family, "x")[0], hf_encode(fam.family, "7")[0]]
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_char = bytes_to_unicode()   # byte-level BPE: the token for a lone lead byte
    fragment_ids = [tok.convert_tokens_to_ids(byte_char[0xF0]), tok.convert_tokens_to_ids(byte_char[0xE6])]
    char_byte = {c: b for b, c in byte_char.items()}
    vocab = {i: t for t, i in tok.get_vocab().items()}

    def token_bytes(i: int) -> bytes:
        t = vocab[i]
        if i in specials:
            return t.encode()
        return bytes(char_byte[c] for c in t)

    fragments = Fragments(max(vocab) + 1, token_bytes)
    ws_ids = [hf_encode(fam.family, " ")[0], hf_encode(fam.family, "\n")[0]]
    fixtures = []
    counter: dict[str, int] = {}

    def completion(case: HCase):
        text = hf_text(fam, case)
        full = hf_encode(fam.family, text)
        if case.cut is None:
            return full, 4096
        if case.cut == "mid_character":
            k = None
            for i in range(1, len(full)):
                if "\ufffd" in tok.decode(full[:i]) and "\ufffd" not in text:
                    k = i
                    break
            assert k is not None, case.label
        else:
            k = hf_cut_index(fam, case, full, tok)
        assert 0 < k < len(full), (case.label, k)
        return full[:k], k

    for case in hf_cases(fam):
        msgs = hf_messages(case)
        tools = TOOLS if case.calls or "call" in case.label else None
        kwargs = {} if fam is not QWEN3 or case.thinking else {"enable_thinking": False}
        if fam is DSV3:
            from reference import hf_render_keep_none
            prompt_text, prompt_ids = hf_render_keep_none(fam.family, msgs, tools, True)
        else:
            prompt_text, prompt_ids = hf_render(fam.family, msgs, tools, True, **kwargs)
        check_layout(fam, case, msgs, tools, prompt_text, kwargs)
        if case.cut == "content" and not case.content:
            continue   # nothing to cut in
        truth_ids, max_tokens = completion(case)
        twins_in = []
        for reason, tc in hf_twin_cases(fam, case):
            if case.cut:
                # the same request (same max_tokens), the model having written the twin: cut by
                # the same limit wherever that falls in the twin's text
                twins_in.append((reason, hf_encode(fam.family, hf_text(fam, tc))[:max_tokens]))
            try:
                t_ids, t_max = completion(tc)
            except (AssertionError, IndexError):
                continue
            if t_max == max_tokens:
                twins_in.append((reason, t_ids))
        if case.cut and case.cut != "mid_character":
            for t in substitution_twins(truth_ids, len(truth_ids), specials, alt_ids):
                twins_in.append((HF_CUT_REASON.get(case.cut, "cut_inside_tool_section"), t))
            for t in last_token_twins(truth_ids, ws_ids):
                twins_in.append((HF_CUT_REASON.get(case.cut, "cut_inside_tool_section"), t))
        if case.cut == "mid_character":
            for t in substitution_twins(truth_ids, len(truth_ids), specials, fragment_ids)[-len(fragment_ids):]:
                twins_in.append(("partial_character", t))
            for t in last_token_twins(truth_ids, fragments.same_prefix(truth_ids[-1])):
                twins_in.append(("partial_character", t))
        seen, uniq = {tuple(truth_ids)}, []
        for reason, t in twins_in:
            if tuple(t) not in seen:
                seen.add(tuple(t))
                uniq.append((reason, t))
        for shape in HF_SHAPES:
            key = f"{case.label}/{shape.slug()}"
            counter[key] = counter.get(key, 0) + 1
            name = f"{fam.slug}/{shape.slug()}/{case.label}/{counter[key]:03d}"
            request = vllm_request(fam.family, msgs, tools, max_tokens, shape,
                                   {"enable_thinking": False} if kwargs else None)
            body = runner.answer(shape, request, prompt_ids, truth_ids, seed_of(name))
            assert body == runner.answer(shape, request, prompt_ids, truth_ids, seed_of(name)), name
            norm = normalize(journal_view(shape.stream, body), random_call_ids=True)
            norm_chunks = normalize(body, random_call_ids=True)
            # The fast detokenizer ignores spaces_between_special_tokens on these streams: the
            # same request with it off gives the same answer (so that shape is not written twice).
            off = replace(shape, spaces=False)
            off_body = runner.answer(off, vllm_request(fam.family, msgs, tools, max_tokens, off,
                                                       {"enable_thinking": False} if kwargs else None),
                                     prompt_ids, truth_ids, seed_of(name))
            assert normalize(off_body, True) == norm_chunks, f"{name}: spaces_between_special_tokens matters here"
            twins, twins_in_chunks, reasons = 0, 0, set()
            for reason, t in uniq:
                if not case.cut and len(t) != len(truth_ids):
                    continue   # usage.completion_tokens differs: never the same answer
                t_body = runner.answer(shape, request, prompt_ids, t, seed_of(name))
                twins_in_chunks += normalize(t_body, True) == norm_chunks
                if normalize(journal_view(shape.stream, t_body), True) == norm:
                    twins += 1
                    reasons.add(reason)
                    show_twin(name, reason, tok.decode(truth_ids, skip_special_tokens=False),
                              tok.decode(t, skip_special_tokens=False))
            view = assemble(shape.stream, body)
            destroyed = set(reasons)
            if view["calls"]:
                destroyed.add("server_rewrites_tool_call_ids")
            for (n_, a), got in zip(case.calls, view["calls"]):
                if got[2] != a:
                    destroyed.add("arguments_reserialized" if got[2].strip() != a.strip()
                                  else "server_strips_argument_whitespace")
            if case.cut in HF_CUT_REASON:
                destroyed.add(HF_CUT_REASON[case.cut])
            if fam is QWEN3 and case.thinking and view["calls"] and view["content"] is None:
                destroyed.add("server_nulls_whitespace_content")   # the "\n\n" after </think>
            fx = {
                "name": name, "family": fam.family, "profile": fam.family, "model": fam.family,
                "chat_template": None,
                "server": {"kind": "vllm", "version": shape.version, "stream": shape.stream,
                           "spaces_between_special_tokens": shape.spaces, "tool_parser": fam.tool_parser,
                           "reasoning_parser": fam.reasoning_parser, "return_token_ids": False},
                "request": request,
            }
            fx["chunks" if shape.stream else "response"] = body
            fx["truth"] = {"completion_ids": truth_ids,
                           "completion_text": tok.decode(truth_ids, skip_special_tokens=False),
                           "prompt_ids": prompt_ids}
            fx["expect"] = {"determined": twins == 0, "twins": twins, "destroyed": sorted(destroyed),
                            "cut": {"before_end": "content"}.get(case.cut, case.cut)}
            if shape.stream:
                fx["expect"]["twins_in_chunks"] = twins_in_chunks
            fixtures.append(fx)
    return fixtures


HF_CUT_REASON = {"tool_section_opener": "cut_inside_tool_section", "arguments": "cut_inside_tool_section",
                 "after_call_end": "cut_after_tool_call", "between_calls": "cut_after_tool_call",
                 "mid_character": "partial_character"}


def hf_twin_cases(fam: HFamily, case: HCase) -> list[tuple[str, HCase]]:
    out = []
    if fam is QWEN3 and case.thinking and case.reasoning is not None:
        core = case.reasoning.strip()
        for lw in ["", "\n"]:
            for tw in ["", "\n", " "]:
                if lw + core + tw != case.reasoning:
                    out.append(("server_strips_reasoning_trailing_whitespace", replace(case, reasoning=lw + core + tw)))
    if case.content.strip():
        core = case.content.strip()
        for lw in ["", " ", "\n"]:
            for tw in ["", " ", "\n"]:
                if lw + core + tw != case.content:
                    out.append(("server_nulls_whitespace_content", replace(case, content=lw + core + tw)))
    elif case.calls:
        for w in WS:
            if w != case.content:
                out.append(("server_nulls_whitespace_content", replace(case, content=w)))
    # every argument spelling at once (each call its own): the re-serialized answer shows none
    spellings = []
    for name, a in case.calls:
        try:
            obj = json.loads(a)
        except ValueError:
            spellings.append([a])
            continue
        spellings.append(list(dict.fromkeys([a] + [args(obj, st) for st in ARG_STYLES])))
    for combo in itertools.islice(itertools.product(*spellings), 1, 256):
        calls = [(name, b) for (name, _), b in zip(case.calls, combo)]
        if calls != case.calls:
            out.append(("arguments_reserialized", replace(case, calls=calls)))
    if fam is QWEN3 and case.calls:
        for w in QWEN3_WRAPPERS:
            if w != case.wrapper:
                out.append(("arguments_reserialized", replace(case, wrapper=w)))
    if case.cut and case.calls:
        # The limit hides how the answer went on: the model may have closed the section after
        # fewer calls or gone on with another one, and written other whitespace before the
        # section (the two together: a `\n` moved from after a call to before the section).
        reason = HF_CUT_REASON.get(case.cut, "cut_after_tool_call")
        contents = [case.content] + ([] if case.content.strip() else [w for w in WS if w != case.content]) \
            + ([case.content.rstrip() + w for w in WS if case.content.rstrip() + w != case.content]
               if case.content.strip() else [])
        for content in contents:
            for calls in [case.calls[:j] for j in range(1, len(case.calls))] + [case.calls + case.calls[-1:]]:
                out.append((reason, replace(case, content=content, calls=calls)))
    return out


ARG_STYLES = ("spaced", "compact", "ascii", "ascii_compact", "pretty")


# SGLang imports more of its engine at module level than vLLM does: these are stubbed on top of
# STUBBED_MODULES, in the SGLang process only (model layers and kernels, disaggregation transfer,
# the HTTP server runner, ZMQ — none of them on the text-in / JSON-out path; see sglang_harness.py).
SGLANG_STUBS = ["zmq", "sgl_kernel", "torch_memory_saver", "setproctitle", "uvicorn",
                "sglang.kernels", "sglang.srt.layers", "sglang.srt.disaggregation"]


def sglang_main() -> None:
    """The SGLang fixtures, in a process of their own (other stubs than vLLM's)."""
    import types

    os.environ["SGLANG_USE_CPU_ENGINE"] = "1"   # the CPU platform, as on a machine without a GPU
    sys.path[:0] = [str(HERE / "server_stubs"), str(HERE), str(fetch_wheel("sglang"))]
    import autostub

    autostub.install(STUBBED_MODULES + SGLANG_STUBS)
    import torch   # the stub: make it read as a CPU-only build (no CUDA, no ROCm)

    torch.version = types.SimpleNamespace(hip=None, cuda=None, git_version="stub", __version__="0.0.0+stub")
    torch.cuda.is_available = lambda: False
    torch.cuda.device_count = lambda: 0
    from sglang.srt import runtime_context
    from sglang.srt.server_args import ServerArgs

    # `ServerArgs` resolves its model's config.json: a minimal one (the real K2.5 config needs
    # its remote code); nothing on the text path reads more than model_type.
    model_dir = CACHE / "sglang-model-kimi"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps({
        "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 1,
        "hidden_size": 64, "num_attention_heads": 1, "vocab_size": 163840, "max_position_embeddings": 262144,
        "eos_token_id": 163586}))
    runtime_context.publish(ServerArgs(model_path=str(model_dir), tool_call_parser="kimi_k2",
                                       reasoning_parser="kimi_k2", device="cpu"), role="tokenizer")
    import kimi_tokenizer
    import sglang_harness

    server = sglang_harness.SglangServer(kimi_tokenizer.load(), tool_parser="kimi_k2", reasoning_parser="kimi_k2",
                                         model_name="kimi-k2.5", eos_ids=[163586], model_type="kimi_k2")
    runner = Runner({"sglang": server})
    fixtures = build_kimi(runner, SGLANG_SHAPES)
    write(OUT / "kimi_k25_sglang.jsonl", fixtures)
    summary(fixtures)
    print(f"{runner.calls} server runs", file=sys.stderr)


class ChildServer:
    """A server whose code runs in a child process (`make_server_corpus.py serve-vllm011`): vLLM
    0.11.2 needs transformers 4.x, the reference encoders here are pinned to transformers 5, so
    they cannot share a process. One JSON line per call each way, through stdin/stdout."""

    def __init__(self, mode: str):
        self.proc = subprocess.Popen([sys.executable, __file__, mode], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def complete(self, request_json, prompt_ids, completion_ids, seed):
        msg = {"request": request_json, "prompt_ids": prompt_ids, "completion_ids": completion_ids, "seed": seed}
        self.proc.stdin.write(json.dumps(msg, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the vLLM 0.11 child process died (see its stderr above)")
        out = json.loads(line)
        if "error" in out:
            raise AssertionError(out["error"])
        return out

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def serve_vllm011() -> None:
    """The child process of ChildServer: vLLM 0.11.2's code with transformers 4.57.6."""
    # The answers go to the parent through the original stdout; everything else written to
    # fd 1 (vLLM's log handler holds sys.stdout) goes to stderr.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.path[:0] = [str(fetch_deps(VLLM011_DEPS, "vllm011-deps")), str(HERE / "server_stubs"),
                    str(HERE), str(fetch_wheel("vllm011"))]
    import autostub

    autostub.install(STUBBED_MODULES + ["lmformatenforcer"])
    import transformers

    assert transformers.__version__ == "4.57.6", transformers.__version__
    import kimi_tokenizer
    import vllm011_harness

    server = vllm011_harness.Vllm011Server(kimi_tokenizer.load(), tool_parser="kimi_k2", reasoning_parser="kimi_k2",
                                           model_name="kimi-k2.5", generation_config={"eos_token_id": 163586})
    for line in sys.stdin:
        msg = json.loads(line)
        try:
            answer = server.complete(msg["request"], msg["prompt_ids"], msg["completion_ids"], msg["seed"])
        except AssertionError as e:
            answer = {"error": str(e)}
        out.write(json.dumps(answer, ensure_ascii=False) + "\n")
        out.flush()


def vllm011_main() -> None:
    """The vLLM 0.11.2 fixtures: cases and truth here, the server in a child process."""
    sys.path[:0] = [str(HERE / "server_stubs"), str(HERE)]
    server = ChildServer("serve-vllm011")
    runner = Runner({"vllm": server})
    fixtures = build_kimi(runner, VLLM011_SHAPES)
    server.close()
    write(OUT / "kimi_k25_vllm011.jsonl", fixtures)
    summary(fixtures)
    print(f"{runner.calls} server runs", file=sys.stderr)


def main() -> None:
    if sys.argv[1:] == ["sglang"]:
        sglang_main()
        return
    if sys.argv[1:] == ["vllm011"]:
        vllm011_main()
        return
    if sys.argv[1:] == ["serve-vllm011"]:
        serve_vllm011()
        return
    setup_imports()
    import kimi_tokenizer
    import vllm_harness

    OUT.mkdir(parents=True, exist_ok=True)
    kimi = vllm_harness.VllmServer(kimi_tokenizer.load(), tool_parser="kimi_k2", reasoning_parser="kimi_k2",
                                   model_name="kimi-k2.5", generation_config={"eos_token_id": 163586})
    runner = Runner({"vllm": kimi})
    from reference import hf_tokenizer

    only = sys.argv[1:]
    every = []
    if not only or "kimi" in only:
        fixtures = build_kimi(runner)
        write(OUT / "kimi_k25.jsonl", fixtures)
        every += fixtures
    for fam in (QWEN3, DSV3):
        if only and fam.slug not in only:
            continue
        tok = hf_tokenizer(fam.family)
        runner.servers["vllm"] = vllm_harness.VllmServer(
            tok, tool_parser=fam.tool_parser, reasoning_parser=fam.reasoning_parser, model_name=fam.family,
            generation_config={"eos_token_id": tok.eos_token_id}, model_type=fam.slug)
        fixtures = build_hf(fam, runner)
        write(OUT / f"{fam.slug}.jsonl", fixtures)
        every += fixtures
    summary(every)
    print(f"{runner.calls} server runs", file=sys.stderr)
    if not only:
        subprocess.run([sys.executable, __file__, "sglang"], check=True)
        subprocess.run([sys.executable, __file__, "vllm011"], check=True)


def write(path: Path, fixtures: list[dict]) -> None:
    names = [f["name"] for f in fixtures]
    assert len(names) == len(set(names)), "duplicate fixture names"
    with path.open("w", encoding="utf-8") as f:
        for fx in fixtures:
            assert_plain_json(fx, fx["name"])
            f.write(json.dumps(fx, ensure_ascii=False, separators=(",", ":")) + "\n")


def summary(fixtures: list[dict]) -> None:
    per: dict[str, list[int]] = {}
    for fx in fixtures:
        s = fx["server"]
        key = f"{fx['family']} {s['kind']}-{s['version']} {'stream' if s['stream'] else 'nonstream'}" \
              f"{' spaces' if s['spaces_between_special_tokens'] else ''}{' token_ids' if s['return_token_ids'] else ''}"
        c = per.setdefault(key, [0, 0])
        c[0] += 1
        c[1] += fx["expect"]["determined"]
    for key, (n, det) in sorted(per.items()):
        print(f"{key}: {n} fixtures, {det} determined", file=sys.stderr)


if __name__ == "__main__":
    main()
