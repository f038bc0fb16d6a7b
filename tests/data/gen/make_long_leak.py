"""Write tests/data/server_shapes/kimi_k25_vllm011_long.jsonl: vLLM 0.11.2's OWN answers to long
Kimi K2.5 tool sections (and to the thinking-off answers whose first token is the section opener).

vLLM 0.11.2's streaming `kimi_k2` tool parser keeps a buffer of everything it was sent since the
reasoning ended; past 1024 characters it keeps the last 512 (cut at a delta boundary), past 8192
characters in the section it leaves the section, and at `<|tool_calls_section_end|>` it sends the
buffer as `content`. Long agent arguments (2-10 KB, several calls, content before the section)
hit all of it. The cases here are sent through the same unchanged vLLM 0.11.2 code as
make_server_corpus.py's `vllm011` fixtures (its ChildServer harness, imported, not copied), with
ids from the reference encoder and prompts rendered WITH the tools as Kimi's tokenizer renders
them (`tools_ts_str` from tests/py/vendor/kimi_k25_tokenizer/tool_declaration_ts.py, then the
K2.5-style template), so `usage.prompt_tokens` is the prompt draftgen renders.

Fixtures are made by make_server_corpus.py's own `build_kimi` (render with the tools, its twin
rules, assembled answers compared for `expect.determined`), plus swaps spread over every long argument: a long section hides text the short cases
never could, and a twin that changes it without changing the answer makes the fixture
undetermined.

    DRAFTGEN_ASSETS=/path/to/shared/assets python3 tests/data/gen/make_long_leak.py

Deterministic (fixed texts, seeds and clock): same library versions give a byte-identical file.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(HERE / "server_stubs"), str(HERE), str(REPO / "tests" / "py" / "vendor" / "kimi_k25_tokenizer")]

import make_server_corpus as corpus  # noqa: E402
from make_server_corpus import (  # noqa: E402
    ARG_B, CALL_E, OUT, TOOLS, VLLM011_SHAPES, ChildServer, KCase, Runner, summary, write,
)

# An agent writing files: the tool the long cases call.
WRITE_FILE = {"type": "function", "function": {
    "name": "write_file", "description": "Write a file in the workspace.",
    "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}}}
LONG_TOOLS = TOOLS + [WRITE_FILE]

REASONING = "The user wants the module written. I will write it with the tool."


def source_text(lines: int, seed: int) -> str:
    """A Python module of about 60 characters a line (varied, deterministic)."""
    out = []
    for i in range(lines):
        k = (i * 7 + seed) % 11
        if k == 0:
            out.append(f"def step_{i}(value: int) -> int:")
        elif k in (1, 2, 3):
            out.append(f"    total_{i} = value * {k + seed} + {i}  # accumulate the partial sums")
        elif k == 4:
            out.append(f"    if total_{i - 1} > {100 + i}:\n        return total_{i - 1} - {i}")
        elif k == 5:
            out.append(f'    message = "step {i}: ü, 東京, naïve café"')
        elif k == 6:
            out.append("")
        else:
            out.append(f"    return value + {i} * {k}")
    return "\n".join(out) + "\n"


def write_args(path: str, lines: int, seed: int, style: str = "spaced") -> str:
    return corpus.args({"path": path, "content": source_text(lines, seed)}, style)


def cases() -> list[KCase]:
    out: list[KCase] = []
    add = out.append
    u = "Write the module files."
    # One long call; compact JSON is one line (its newlines escaped), pretty JSON is many.
    for lines, style in [(40, "spaced"), (90, "spaced"), (150, "compact"), (60, "pretty")]:
        add(KCase(f"long_args_{style}_{lines}", reasoning=REASONING, content="Writing it now.", tools=True,
                  calls=[("functions.write_file:0", write_args("src/mod.py", lines, lines, style))], user=u))
    # Long content before the section (the buffer passes its limit before the section opens).
    long_content = " ".join(f"Step {i}: check the inputs, then write the result." for i in range(40))
    add(KCase("long_content_then_call", reasoning=REASONING, content=long_content, tools=True,
              calls=[("functions.get_weather:0", corpus.args({"city": "Tokyo"}))], user=u))
    add(KCase("long_content_then_long_call", reasoning=REASONING, content=long_content, tools=True,
              calls=[("functions.write_file:0", write_args("src/a.py", 50, 3))], user=u))
    # Two long calls, and a short one after a long one.
    add(KCase("two_long_calls", reasoning=REASONING, content="Two files.", tools=True,
              calls=[("functions.write_file:0", write_args("src/a.py", 45, 1)),
                     ("functions.write_file:1", write_args("src/b.py", 45, 2))], user=u))
    add(KCase("long_then_short_call", reasoning=REASONING, content="", tools=True,
              calls=[("functions.write_file:0", write_args("src/a.py", 70, 5)),
                     ("functions.get_weather:1", corpus.args({"city": "東京"}))], user=u))
    # Past the parser's 8192 characters in the section.
    add(KCase("section_past_8192", reasoning=REASONING, content="One big file.", tools=True,
              calls=[("functions.write_file:0", write_args("src/big.py", 170, 7))], user=u))
    # `length` cuts inside a long argument, and after a long call.
    add(KCase("cut_inside_long_args", reasoning=REASONING, content="Writing it now.", tools=True,
              calls=[("functions.write_file:0", write_args("src/mod.py", 60, 4))], user=u,
              cut="arguments", cut_at=0))
    add(KCase("cut_after_long_call", reasoning=REASONING, content="Two files.", tools=True,
              calls=[("functions.write_file:0", write_args("src/a.py", 45, 1)),
                     ("functions.write_file:1", write_args("src/b.py", 10, 2))], user=u,
              cut="after_call_end", cut_at=0))
    # Thinking off, tools, the first token is the section opener (the reasoning parser takes it).
    add(KCase("thinking_off_opener_first", thinking=False, tools=True, content="",
              calls=[("functions.get_weather:0", corpus.args({"city": "Tokyo"}))]))
    add(KCase("thinking_off_opener_first_two_calls", thinking=False, tools=True, content="",
              calls=[("functions.get_weather:0", corpus.args({"city": "Zürich"}, "compact")),
                     ("functions.search:1", corpus.args({"query": "a b", "filters": {"tags": ["x"]}}))]))
    add(KCase("thinking_off_opener_first_long", thinking=False, tools=True, content="",
              calls=[("functions.write_file:0", write_args("src/mod.py", 40, 9))], user=u))
    add(KCase("thinking_off_opener_first_cut", thinking=False, tools=True, content="",
              calls=[("functions.get_weather:0", corpus.args({"city": "Tokyo"}))], cut="arguments", cut_at=0))
    return out


def spread_twins(case: KCase, ids: list[int], specials: set[int], alt_ids: list[int], sid: dict) -> list[list[int]]:
    """One token swapped at eight places spread over each long argument: text a long section may
    hide anywhere, not only in a cut's tail."""
    out = []
    begins = [i for i, t in enumerate(ids) if t == sid[ARG_B]]
    ends = [i for i, t in enumerate(ids) if t == sid[CALL_E]] + [len(ids)]
    for b in begins:
        e = min(x for x in ends if x > b)
        if e - b < 64:
            continue
        for k in range(1, 9):
            p = b + 1 + (e - b - 2) * k // 9
            if ids[p] in specials:
                continue
            for alt in alt_ids:
                if alt != ids[p]:
                    twin = list(ids)
                    twin[p] = alt
                    out.append(twin)
                    break
    return out


def build(runner: Runner) -> list[dict]:
    # make_server_corpus.py's own fixture loop (render with the tools, twins by rule, assembled
    # answers compared), with the long cases, their tools and the spread twins.
    return corpus.build_kimi(runner, base_shapes=VLLM011_SHAPES, token_id_shapes=[], cases=cases(),
                             tools_declared=LONG_TOOLS, extra_twins=spread_twins,
                             not_destroyed={"section_buffer_cut"})


def main() -> None:
    server = ChildServer("serve-vllm011")
    runner = Runner({"vllm": server})
    fixtures = build(runner)
    server.close()
    write(OUT / "kimi_k25_vllm011_long.jsonl", fixtures)
    summary(fixtures)
    print(f"{runner.calls} server runs", file=sys.stderr)


if __name__ == "__main__":
    main()
