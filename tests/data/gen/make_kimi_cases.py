"""Write tests/data/server_shapes/kimi_k25_cases.jsonl (vLLM 0.33.0) and
kimi_k25_cases_sglang.jsonl (SGLang 0.5.23): the servers' OWN answers to four Kimi K2.5 token
streams seen in real traffic that the main corpus did not cover.

1. `opener_from_reasoning*`: the tool section opened straight from the reasoning, no `</think>`
   generated (both servers' kimi reasoning parsers end the reasoning at the section opener).
   Twins: the same answer with `</think>` written before the opener, with the reasoning's
   trailing whitespace varied — the count decides, or nothing does.
2. `end_token_in_call*`: `<|im_end|>` generated inside a call, before `<|tool_call_end|>`
   (K2 does this); generation stops there.
3. `cut_reasoning_ws*`: a `length` cut inside the reasoning right after a token that ends in
   whitespace (`.\\n\\n`) or right before one: vLLM 0.33 strips the reasoning's trailing
   whitespace, and `.\\n\\n` and `.` are one token each. Twins: the same cut with the last
   token's trailing whitespace varied (`T.rstrip() + w`, kept where it is as many tokens).
4. `literal_*`: special-token text (`<|im_end|>`, `<|im_start|>`-like markers, `</think>`)
   written by the model as ordinary tokens in content or reasoning. The true ids spell the
   literal as plain pieces (tiktoken with that literal not allowed as special — the rest of the
   stream's markers stay special). Twins: the same text with the literal as its special id.

Fixtures are made by make_server_corpus.py's own `build_kimi` (same render, same twin rules,
assembled answers compared for `expect.determined`), with the extra twins above.

    DRAFTGEN_ASSETS=/path/to/shared/assets python3 tests/data/gen/make_kimi_cases.py

Deterministic (fixed texts, seeds and clock): same library versions give byte-identical files.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(HERE / "server_stubs"), str(HERE), str(REPO / "tests" / "py" / "vendor" / "kimi_k25_tokenizer")]

import make_server_corpus as corpus  # noqa: E402
from make_server_corpus import (  # noqa: E402
    ARG_B, CALL_B, CALL_E, IM_END, OUT, SEC_B, SEC_E, SGLANG_SHAPES, VLLM_SHAPES, KCase, Runner,
    summary, write,
)

R0 = "The user wants the weather. I should call the tool."
WS = ["", " ", "\n", "\n\n", "  ", " \n", "\t"]
WEATHER = corpus.args({"city": "Tokyo"})


@dataclass
class RawCase(KCase):
    """A stream given as text pieces: `(text, literal)` — `literal` True: the piece is written
    as ordinary tokens even where it spells a special token."""
    pieces: list = field(default_factory=list)

    def text(self) -> str:
        return "".join(p for p, _ in self.pieces)

    def ids(self) -> list[int]:
        return spell(self.pieces)


def spell(pieces) -> list[int]:
    """The stream's ids as tiktoken makes them: the text is split at the special tokens of the
    non-literal pieces (each its id) and every stretch between them — literal pieces included,
    so BPE sees the literal with its neighbours — is encoded with no special token allowed."""
    import re

    from reference import kimi_encode, kimi_encoding

    enc = kimi_encoding()
    if not any(lit for _, lit in pieces):
        return kimi_encode("".join(p for p, _ in pieces))
    special = re.compile("|".join(re.escape(t) for t in sorted(enc._special_tokens, key=len, reverse=True)))
    ids: list[int] = []
    stretch = ""
    for text, literal in pieces:
        if literal:
            stretch += text
            continue
        at = 0
        for m in special.finditer(text):
            stretch += text[at:m.start()]
            ids += enc.encode(stretch, allowed_special=set(), disallowed_special=())
            ids.append(enc._special_tokens[m.group()])
            stretch, at = "", m.end()
        stretch += text[at:]
    return ids + enc.encode(stretch, allowed_special=set(), disallowed_special=())


def raw(label: str, pieces, **kw) -> RawCase:
    return RawCase(label, pieces=[(p, False) if isinstance(p, str) else p for p in pieces], **kw)


def cases() -> list[KCase]:
    from reference import kimi_encode, kimi_encoding

    out: list[KCase] = []
    add = out.append
    # 1. the tool section opened from the reasoning
    for ws in ["", "\n", "\n\n", " "]:
        add(KCase("opener_from_reasoning", reasoning=R0 + ws, tools=True, think_end=False,
                  calls=[("functions.get_weather:0", WEATHER)]))
    add(KCase("opener_from_reasoning_two_calls", reasoning=R0, tools=True, think_end=False,
              calls=[("functions.get_weather:0", WEATHER),
                     ("functions.search:1", corpus.args({"query": "umbrella"}))]))
    add(KCase("opener_from_reasoning_cut", reasoning=R0, tools=True, think_end=False,
              calls=[("functions.get_weather:0", corpus.args({"city": "Tokyo", "unit": "c"}))],
              cut="arguments", cut_at=0))
    # 2. the end token inside a call
    for label, reasoning, content, a in [
        ("end_token_in_call", R0, "", WEATHER),
        ("end_token_in_call_content", R0, "Let me check.", WEATHER),
        ("end_token_in_call_ws", R0, "", WEATHER + "\n"),
    ]:
        add(raw(label, [reasoning, "</think>", content, SEC_B, CALL_B, "functions.get_weather:0", ARG_B, a, IM_END],
                reasoning=reasoning, tools=True))
    add(raw("end_token_after_call_id", [R0, "</think>", SEC_B, CALL_B, "functions.get_weather:0", IM_END],
            reasoning=R0, tools=True))
    # 3. a length cut in the reasoning right after a token that ends in whitespace, or in `.`
    enc = kimi_encoding()
    for reasoning in ["First, the city.\n\nThen the unit.", "I should call the tool.\n\nOK, calling it now.",
                      "Check the city.\nThen answer.", "Hmm. Let me see. Yes."]:
        ids = kimi_encode(reasoning)
        for k in range(2, len(ids)):
            piece = enc.decode([ids[k - 1]])
            if piece.rstrip() != piece or piece.endswith("."):
                add(KCase("cut_reasoning_ws", reasoning=reasoning, content="Sure.", cut="reasoning_at", cut_at=k))
    # 4. special-token text written as ordinary tokens
    for label, content in [
        ("literal_im_end_in_content", ["Each turn ends with ", ("<|im_end|>", True), " in Kimi's format."]),
        ("literal_im_end_content_end", ["The end token is ", ("<|im_end|>", True)]),
        ("literal_im_system_in_content", ["A system turn opens with ", ("<|im_system|>", True), "."]),
        ("literal_think_end_in_content", ["Close reasoning with ", ("</think>", True), " then answer."]),
    ]:
        add(raw(label, [R0, "</think>", *content, IM_END], reasoning=R0))
        add(raw(label + "_tools", [R0, "</think>", *content, IM_END], reasoning=R0, tools=True))
    add(raw("literal_im_end_in_reasoning", ["I must not print ", ("<|im_end|>", True), " here.", "</think>", "OK.", IM_END],
            reasoning="x"))
    # (A tool-section opener's text in content is left out: both servers' parsers act on its
    # text, and draftgen does not yet rebuild the spelled opener.)
    return out


def extra_twins(case: KCase, ids: list[int], specials, alt_ids, sid):
    from reference import kimi_encode, kimi_encoding

    enc = kimi_encoding()
    out = []
    if case.label.startswith("opener_from_reasoning"):
        # `</think>` written before the opener, the reasoning's trailing whitespace varied
        core = case.reasoning.rstrip()
        for w in WS:
            twin = KCase(case.label, reasoning=core + w, tools=True, calls=case.calls)
            t = kimi_encode(twin.text())
            out.append(("reasoning_close_not_shown", t[: len(ids)] if case.cut else t))
            # and without it, the whitespace varied
            t = kimi_encode(KCase(case.label, reasoning=core + w, tools=True, calls=case.calls, think_end=False).text())
            out.append(("server_strips_reasoning_trailing_whitespace", t[: len(ids)] if case.cut else t))
    if case.cut == "reasoning_at":
        text = enc.decode(ids)
        for w in WS:
            t = kimi_encode(text.rstrip() + w)
            if len(t) == len(ids):
                out.append(("server_strips_reasoning_trailing_whitespace", t))
    close = ("</think>", False)
    if isinstance(case, RawCase) and case.thinking and close in case.pieces:
        # the reasoning's trailing whitespace varied (the piece before `</think>`), and for a
        # tool section the `</think>` left out (the opener ends the reasoning too)
        last = case.pieces.index(close) - 1
        for w in WS:
            for drop_close in [False, True] if SEC_B in case.text() else [False]:
                pieces = list(case.pieces)
                pieces[last] = (pieces[last][0].rstrip() + w, pieces[last][1])
                pieces = [p for p in pieces if not (drop_close and p == close)]
                twin = spell(pieces)
                if len(twin) == len(ids):
                    reason = "reasoning_close_not_shown" if drop_close else "server_strips_reasoning_trailing_whitespace"
                    out.append((reason, twin))
                if SEC_B in case.text():
                    for tail in [CALL_E + SEC_E + IM_END, CALL_E + IM_END, "\n" + IM_END]:
                        text = "".join(p for p, _ in pieces)[: -len(IM_END)] + tail
                        twin = kimi_encode(text)
                        if len(twin) == len(ids):
                            out.append(("cut_inside_tool_section", twin))
    if isinstance(case, RawCase):
        literal = next((p for p, lit in case.pieces if lit), None)
        if literal is not None:
            # the literal as its special id (a shorter stream: only a cut could give the same count)
            out.append(("special_token_literal", kimi_encode(case.text())))
            # another special token's text written in its place (vLLM 0.33 drops every special
            # token's text from its answer, spelled or sampled), and the ordinary token after
            # it swapped (a section opener's text ends what the parsers show)
            names = [t for t in enc._special_tokens if "reserved" not in t and t != literal]
            for other in names:
                pieces = [(other, True) if lit else (p, False) for p, lit in case.pieces]
                twin = spell(pieces)
                if len(twin) == len(ids):
                    out.append(("special_token_literal", twin))
            at = next(i for i, (_, lit) in enumerate(case.pieces) if lit)
            after = case.pieces[at + 1][0]
            if after and after[0] not in "<":
                for alt in ["x", "7", "!", "?", ",", ":", ";", ")"]:
                    pieces = list(case.pieces)
                    pieces[at + 1] = (alt + after[1:], False)
                    out.append(("special_token_literal", spell(pieces)))
        if case.label.startswith("end_token"):
            # each ordinary token of the unfinished call swapped: what a server that drops an
            # unclosed call cannot show
            start = ids.index(sid[SEC_B])
            for p in range(start, len(ids)):
                if ids[p] not in specials:
                    for alt in alt_ids:
                        if alt != ids[p]:
                            out.append(("cut_inside_tool_section", ids[:p] + [alt] + ids[p + 1:]))
            # the call closed, and the section, before the end token; and whitespace before it
            text = case.text()[: -len(IM_END)]
            for tail in [CALL_E + SEC_E + IM_END, "\n" + IM_END, " " + IM_END, CALL_E + IM_END]:
                out.append(("cut_inside_tool_section", kimi_encode(text + tail)))
    return out


def build(runner: Runner, shapes) -> list[dict]:
    return corpus.build_kimi(runner, base_shapes=shapes, token_id_shapes=[], cases=cases(),
                             extra_twins=extra_twins)


def main() -> None:
    if sys.argv[1:] == ["sglang"]:
        sglang()
        return
    corpus.setup_imports()
    import kimi_tokenizer
    import vllm_harness

    server = vllm_harness.VllmServer(kimi_tokenizer.load(), tool_parser="kimi_k2", reasoning_parser="kimi_k2",
                                     model_name="kimi-k2.5", generation_config={"eos_token_id": 163586})
    runner = Runner({"vllm": server})
    fixtures = build(runner, VLLM_SHAPES)
    write(OUT / "kimi_k25_cases.jsonl", fixtures)
    summary(fixtures)
    print(f"{runner.calls} server runs", file=sys.stderr)
    import subprocess

    subprocess.run([sys.executable, __file__, "sglang"], check=True)


def sglang() -> None:
    """SGLang's fixtures in a process of their own, set up as make_server_corpus.py's."""
    fixtures = []

    def keep(path, fx):
        fixtures.extend(fx)

    corpus.write = keep
    original = corpus.build_kimi

    def ours(runner, base_shapes=None, **_):
        return original(runner, base_shapes=base_shapes, token_id_shapes=[], cases=cases(),
                        extra_twins=extra_twins)

    corpus.build_kimi = ours
    corpus.summary = lambda fx: None
    corpus.sglang_main()
    write(OUT / "kimi_k25_cases_sglang.jsonl", fixtures)
    summary(fixtures)


if __name__ == "__main__":
    main()
