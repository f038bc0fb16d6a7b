"""Thin loaders around the reference libraries that produce draftgen's expected values.

Every expected token id and rendered text under `tests/data/` comes from code nobody on this
project wrote: OpenAI's `tiktoken` (with Moonshot's Kimi ranks, pattern and special tokens, built
the way Moonshot's `tokenization_kimi.py` builds them), Hugging Face `transformers` and
`tokenizers`. This module only wires those libraries to the asset files; it holds no tokenizing
or rendering logic of its own, apart from Kimi's two input-side steps that live in Moonshot's
tokenizer class rather than in a library (the long-input pre-split and `deep_sort_dict`), which
follow the upstream source line by line (see the notes on each).

Importable by the other generators (`make_parity.py`, `make_reconstruct_cases.py`):

    from reference import kimi_encode, kimi_render, hf_tokenizer, hf_render, ASSETS

Assets: `$DRAFTGEN_ASSETS`, else `../shared/assets` beside the repository root.
"""

from __future__ import annotations

import copy
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import tiktoken
from tiktoken.load import load_tiktoken_bpe

REPO_ROOT = Path(__file__).resolve().parents[3]


def _assets_root() -> Path:
    env = os.environ.get("DRAFTGEN_ASSETS")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "assets")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    raise SystemExit(
        f"reference assets not found (tried {', '.join(map(str, candidates))}); "
        "set DRAFTGEN_ASSETS to the shared assets directory"
    )


ASSETS = _assets_root()

# ---------------------------------------------------------------------------------------------
# Kimi: tiktoken built as Moonshot's `tokenization_kimi.py` (class TikTokenTokenizer) builds it.
# Source consulted: the `tokenization_kimi.py` shipped in the moonshotai/Kimi-K2-Instruct model
# repository (modified MIT), as mirrored publicly (e.g. github.com/troy12x/quasar-kimi).
# ---------------------------------------------------------------------------------------------

KIMI_DIR = ASSETS / "kimi-k2.5"

# `TikTokenTokenizer.pat_str`, the eight alternatives joined with "|" (Moonshot's tokenization_kimi.py, tests/py/vendor/kimi_k25_tokenizer/).
KIMI_PAT_STR = "|".join(
    [
        r"""[\p{Han}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# The same pattern with each `[X&&[^\p{Han}]]` intersection written as `(?:(?!\p{Han})[X])`, the
# rewrite known for engines without `&&`. Used only to cross-check that tiktoken's engine
# really applies the intersection (make_parity.py asserts both give identical ids).
KIMI_PAT_STR_NO_INTERSECTION = (
    KIMI_PAT_STR.replace(
        r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]",
        r"(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])",
    ).replace(
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]",
        r"(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])",
    )
)

KIMI_NUM_RESERVED_SPECIAL_TOKENS = 256
# `encode()` constants, with upstream's reasons: tiktoken handles <= 400k chars without a
# pyo3 PanicException; runs above 25k whitespace/non-whitespace chars are split
# (https://github.com/openai/tiktoken/issues/195).
TIKTOKEN_MAX_ENCODE_CHARS = 400_000
MAX_NO_WHITESPACES_CHARS = 25_000


def kimi_added_tokens_decoder() -> dict[int, str]:
    """`added_tokens_decoder` of the Kimi tokenizer_config.json, as id -> content."""
    config = json.loads((KIMI_DIR / "tokenizer_config.json").read_text(encoding="utf-8"))
    return {int(i): entry["content"] for i, entry in config["added_tokens_decoder"].items()}


def kimi_special_tokens(num_base_tokens: int) -> dict[str, int]:
    """Upstream: `{special_tokens_mapping.get(i, f"<|reserved_token_{i}|>"): i for i in
    range(num_base_tokens, num_base_tokens + num_reserved_special_tokens)}`."""
    mapping = kimi_added_tokens_decoder()
    return {
        mapping.get(i, f"<|reserved_token_{i}|>"): i
        for i in range(num_base_tokens, num_base_tokens + KIMI_NUM_RESERVED_SPECIAL_TOKENS)
    }


def _kimi_encoding_with(pat_str: str, name: str) -> tiktoken.Encoding:
    mergeable_ranks = load_tiktoken_bpe(str(KIMI_DIR / "tiktoken.model"))
    return tiktoken.Encoding(
        name=name,
        pat_str=pat_str,
        mergeable_ranks=mergeable_ranks,
        special_tokens=kimi_special_tokens(len(mergeable_ranks)),
    )


@lru_cache(maxsize=None)
def kimi_encoding() -> tiktoken.Encoding:
    """The Kimi `tiktoken.Encoding`, exactly as `TikTokenTokenizer.__init__` builds it."""
    return _kimi_encoding_with(KIMI_PAT_STR, "tiktoken.model")


@lru_cache(maxsize=None)
def kimi_encoding_no_intersection() -> tiktoken.Encoding:
    """Cross-check encoding with the `&&`-free rewrite of the pattern (not a reference itself)."""
    return _kimi_encoding_with(KIMI_PAT_STR_NO_INTERSECTION, "tiktoken.model-no-intersection")


def split_whitespaces_or_nonwhitespaces(s: str, max_consecutive_slice_len: int) -> Iterator[str]:
    """`TikTokenTokenizer._split_whitespaces_or_nonwhitespaces` (originally Meta's Llama 3
    tokenizer): yield pieces of `s` such that no piece holds more than
    `max_consecutive_slice_len` consecutive whitespace or non-whitespace characters (per
    `str.isspace`). Same state machine as upstream, statement for statement: the run length
    starts at 0, a class change resets it to 1, an overflow cuts before the current character;
    the rest of the string (possibly empty) is always yielded last."""
    current_slice_len = 0
    current_slice_is_space = s[0].isspace() if len(s) > 0 else False
    slice_start = 0
    for i in range(len(s)):
        is_now_space = s[i].isspace()
        if current_slice_is_space ^ is_now_space:
            current_slice_len = 1
            current_slice_is_space = is_now_space
        else:
            current_slice_len += 1
            if current_slice_len > max_consecutive_slice_len:
                yield s[slice_start:i]
                slice_start = i
                current_slice_len = 1
    yield s[slice_start:]


def kimi_encode(text: str, encoding: tiktoken.Encoding | None = None) -> list[int]:
    """Ids as `TikTokenTokenizer.encode(text)` returns them (its default
    `allow_special_tokens=True`, i.e. tiktoken `allowed_special="all"`), including the
    400,000-char chunking and the 25,000-char run splitting done before tiktoken sees the text."""
    enc = encoding or kimi_encoding()
    substrs = (
        substr
        for i in range(0, len(text), TIKTOKEN_MAX_ENCODE_CHARS)
        for substr in split_whitespaces_or_nonwhitespaces(
            text[i : i + TIKTOKEN_MAX_ENCODE_CHARS], MAX_NO_WHITESPACES_CHARS
        )
    )
    ids: list[int] = []
    for substr in substrs:
        ids.extend(enc.encode(substr, allowed_special="all"))
    return ids


def deep_sort_dict(obj: Any) -> Any:
    """`tokenization_kimi.deep_sort_dict`: sort every nested dict's keys; lists keep their order.
    `TikTokenTokenizer.apply_chat_template` applies it to `tools` before rendering."""
    if isinstance(obj, dict):
        return {k: deep_sort_dict(v) for k, v in sorted(obj.items())}
    if isinstance(obj, list):
        return [deep_sort_dict(item) for item in obj]
    return obj


def _kimi_special_tokens_map() -> dict[str, Any]:
    """What `tokenizer.special_tokens_map` would hand the template as variables (transformers
    passes `{**special_tokens_map, **kwargs}`); the Kimi templates read none of them."""
    config = json.loads((KIMI_DIR / "tokenizer_config.json").read_text(encoding="utf-8"))
    keys = ("bos_token", "eos_token", "unk_token", "pad_token", "additional_special_tokens")
    return {k: config[k] for k in keys if k in config}


def kimi_render(
    template_path: str | Path,
    messages: list[dict],
    tools: list[dict] | None = None,
    add_generation_prompt: bool = False,
    **kwargs: Any,
) -> str:
    """Text of `TikTokenTokenizer.apply_chat_template(messages, tools, tokenize=False, ...)` with
    the given template: tools deep-sorted, then transformers' own pipeline — message
    normalization (`None` values dropped) and `render_jinja_template`, which compiles the template
    in transformers' ImmutableSandboxedEnvironment (trim_blocks, lstrip_blocks, loopcontrols,
    transformers' `tojson`, `raise_exception`, `strftime_now`, `namespace`). Relative template
    paths are resolved against ASSETS."""
    from transformers.utils.chat_template_utils import (
        _normalize_chat_messages,
        render_jinja_template,
    )

    path = Path(template_path)
    if not path.is_absolute():
        path = ASSETS / path
    chat_template = path.read_text(encoding="utf-8")
    sorted_tools = deep_sort_dict(tools)
    template_kwargs = {**_kimi_special_tokens_map(), **kwargs}
    rendered, _ = render_jinja_template(
        conversations=[_normalize_chat_messages(messages)],
        tools=sorted_tools,
        chat_template=chat_template,
        add_generation_prompt=add_generation_prompt,
        **template_kwargs,
    )
    return rendered[0]


# ---------------------------------------------------------------------------------------------
# Hugging Face families (qwen3, deepseek-v3): transformers and tokenizers used as they are.
# ---------------------------------------------------------------------------------------------


def _model_dir(model_dir: str | Path) -> Path:
    path = Path(model_dir)
    return path if path.is_absolute() else ASSETS / path


@lru_cache(maxsize=None)
def hf_tokenizer(model_dir: str | Path):
    """`transformers.AutoTokenizer.from_pretrained(dir)` (relative dirs resolved against ASSETS)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(_model_dir(model_dir)))


@lru_cache(maxsize=None)
def hf_raw_tokenizer(model_dir: str | Path):
    """The `tokenizers` library's `Tokenizer.from_file(dir/tokenizer.json)`."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(_model_dir(model_dir) / "tokenizer.json"))


def hf_encode(model_dir: str | Path, text: str) -> list[int]:
    """`Tokenizer.from_file(tokenizer.json).encode(text, add_special_tokens=False).ids`: added
    tokens (special or not) written literally in the text become their ids; no BOS/EOS added."""
    return hf_raw_tokenizer(model_dir).encode(text, add_special_tokens=False).ids


def hf_render(
    model_dir: str | Path,
    messages: list[dict],
    tools: list[dict] | None = None,
    add_generation_prompt: bool = False,
    **kwargs: Any,
) -> tuple[str, list[int]]:
    """(`apply_chat_template(..., tokenize=False)`, ids of `apply_chat_template(...,
    tokenize=True)`). transformers 5 returns a `BatchEncoding` for `tokenize=True` (return_dict
    now defaults to True), so the ids are its `input_ids`. They are asserted equal to
    `tokenizer.encode(text, add_special_tokens=False)`: the rendered text alone determines them."""
    tok = hf_tokenizer(model_dir)
    text = tok.apply_chat_template(
        messages, tools=tools, add_generation_prompt=add_generation_prompt, tokenize=False, **kwargs
    )
    out = tok.apply_chat_template(
        messages, tools=tools, add_generation_prompt=add_generation_prompt, tokenize=True, **kwargs
    )
    ids = list(out["input_ids"]) if not isinstance(out, list) else list(out)
    encoded = tok.encode(text, add_special_tokens=False)
    if ids != encoded:
        raise AssertionError(
            f"apply_chat_template(tokenize=True) ids differ from encode(text) for {model_dir}"
        )
    return text, ids


def versions() -> dict[str, str]:
    """Versions of every library that produces expected values."""
    import sys

    import jinja2
    import regex
    import tokenizers
    import transformers

    return {
        "python": sys.version.split()[0],
        "tiktoken": tiktoken.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "jinja2": jinja2.__version__,
        "regex": regex.__version__,
    }


def hf_render_keep_none(model: str, messages: list[dict], tools: list[dict] | None,
                        add_generation_prompt: bool, **kwargs: Any) -> tuple[str, list[int]]:
    """`apply_chat_template` without transformers 5's first step, which drops every None-valued
    message key. The DeepSeek-V3 template tests `message['content'] is none` to render tool
    calls, so with the key dropped it cannot render an assistant tool-call turn at all (it raises);
    transformers 4.x passed `content: None` through. Everything else is transformers' own
    pipeline: `render_jinja_template` with the tokenizer's template and special-tokens map, then
    `encode(text, add_special_tokens=False)`. Asserted equal to `hf_render` whenever the
    messages hold no None value."""
    from transformers.utils.chat_template_utils import render_jinja_template

    tok = hf_tokenizer(model)
    rendered, _ = render_jinja_template(
        conversations=[copy.deepcopy(messages)], tools=tools, chat_template=tok.get_chat_template(None, tools),
        add_generation_prompt=add_generation_prompt, **{**tok.special_tokens_map, **kwargs})
    text = rendered[0]
    ids = tok.encode(text, add_special_tokens=False)
    if not any(v is None for m in messages for v in m.values()):
        assert (text, ids) == hf_render(model, messages, tools, add_generation_prompt, **kwargs)
    return text, ids
