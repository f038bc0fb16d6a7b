"""Generate the parity corpora in `tests/data/parity/` with the Python reference libraries.

    python3 tests/data/gen/make_parity.py          # (DRAFTGEN_ASSETS=... if ../shared/assets is elsewhere)

Deterministic (fixed seeds, no clock, no hashing of Python objects), so re-running it on the
same library versions rewrites byte-identical files. Before writing anything it checks the Kimi
pipeline in `reference.py` against the published goldens; while building the corpora it
cross-checks the tokenizers against independent routes to the same ids (see `cross_check_*`).
What each output file holds is described in `tests/data/README.md`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import sys
import unicodedata
from pathlib import Path

import regex

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import (  # noqa: E402
    ASSETS,
    KIMI_PAT_STR,
    REPO_ROOT,
    hf_encode,
    hf_render,
    hf_render_keep_none,
    kimi_added_tokens_decoder,
    kimi_encode,
    kimi_encoding,
    kimi_encoding_no_intersection,
    kimi_render,
    split_whitespaces_or_nonwhitespaces,
    versions,
)

OUT = REPO_ROOT / "tests" / "data" / "parity"
SEED = 20260531
# Texts longer than this are stored as `{"repeat": [[piece, count], ...]}` and left out of the
# Hugging Face corpora (the brief allows dropping them there; the 25k/400k pre-split is Kimi's).
LONG_TEXT_CHARS = 100_000
RENDER_TARGET = 240
RENDER_MAX_ATTEMPTS = 4000

KIMI_TEMPLATES = {
    "kimi_k2": "templates/kimi-k2.jinja",
    "kimi_k2_thinking": "templates/kimi-k2-thinking.jinja",
}


def seeded(name: str) -> random.Random:
    """A generator per corpus, seeded from SEED and the corpus name (stable across runs)."""
    digest = hashlib.sha256(f"{SEED}:{name}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def ids_sha256(ids: list[int]) -> str:
    return hashlib.sha256(json.dumps(ids, separators=(",", ":")).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Goldens: published values nobody here computed.
# ---------------------------------------------------------------------------------------------


def check_goldens() -> None:
    golden = json.loads((ASSETS / "golden" / "kimi.json").read_text(encoding="utf-8"))
    checked = 0
    for name, entry in golden.items():
        if not isinstance(entry, dict):
            continue
        if name.startswith("kimi"):
            for encoding in (kimi_encoding(), kimi_encoding_no_intersection()):
                ids = kimi_encode(entry["text"], encoding)
                assert ids == entry["token_ids"], f"golden ids differ: {name}"
                assert ids_sha256(ids) == entry["token_ids_sha256"], f"golden sha256: {name}"
                assert len(ids) == entry["token_count"], f"golden count: {name}"
            checked += 1
        elif name.startswith("qwen3"):
            ids = hf_encode("qwen3", entry["text"])
            assert ids_sha256(ids) == entry["token_ids_sha256"], f"golden sha256: {name}"
            assert len(ids) == entry["token_count"], f"golden count: {name}"
            checked += 1
    assert kimi_encode("Four.<|im_end|>") == [42629, 13, 163586]
    assert kimi_encode("<think>hi</think>") == [163606, 9663, 163607]
    assert kimi_encode("functions.get_weather:0") == [41937, 1150, 21055, 2800, 25, 15]
    print(f"goldens: {checked} published renders + 3 known id lists reproduce")


# ---------------------------------------------------------------------------------------------
# Tokenizer corpus
# ---------------------------------------------------------------------------------------------

SENTENCES = [
    # Latin scripts, contractions, casing
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It's John's book; they're here, we've seen, I'm sure, you'll see, he'd go.",
    "IT'S JOHN'S BOOK; THEY'RE HERE, WE'VE SEEN, I'M SURE, YOU'LL SEE, HE'D GO.",
    "It'S mIxEd'Re 'Ve'M 'll'D 'T 's 'RE",
    "don't   can't  won't shan't y'all o'clock rock'n'roll",
    "Ünïcödé façade naïve coöperate résumé Ångström Øre Straße ßẞ",
    "İstanbul ılık ǅemal ǈubljana ǋavica ᾈ ᾉ ᾊ",  # titlecase letters (Lt)
    "CamelCaseIdentifier XMLHttpRequest getHTTPResponseCode iPhone eBay McDonald",
    "ALLCAPS lowercase Titlecase mIXED 123abc abc123 a1b2c3",
    # CJK / Han and mixtures
    "中华人民共和国成立于1949年。",
    "我喜欢用Python写代码，也喜欢Rust和Go。",
    "漢字ABC漢字abcDEF漢字",
    "混合Han和Latin：GPT模型在2024年发布了v4.0版本。",
    "简体中文與繁體中文混合，還有標點符號！？「」『』【】",
    "𠀀𠀁𠮷𪚥𫝀𬺰𰀀 (CJK extensions B–G)",
    "〇一二三四五六七八九十百千万亿",
    # Japanese, Korean
    "日本語のテキストです。カタカナとひらがな、そして漢字。",
    "ｶﾀｶﾅ半角 ＡＢＣ全角 １２３",
    "東京タワーはTokyoにあります。",
    "한국어 텍스트입니다. 안녕하세요! 한글과 漢字를 섞어서.",
    "ᄀᄁᄂ ᅡᅢᅣ (conjoining jamo)",
    # RTL and Indic, SE Asian
    "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥٦٧٨٩٠.",
    "السَّلَامُ عَلَيْكُمْ (with harakat)",
    "שלום עולם! זהו טקסט בעברית עם ניקוד: שָׁלוֹם.",
    "नमस्ते दुनिया! यह हिंदी पाठ है। १२३४५",
    "क्षत्रिय त्र ज्ञ श्र (conjuncts)",
    "বাংলা ভাষা, தமிழ் மொழி, తెలుగు, ಕನ್ನಡ, മലയാളം",
    "สวัสดีชาวโลก นี่คือข้อความภาษาไทยที่ไม่มีช่องว่างระหว่างคำ",
    "ພາສາລາວ ភាសាខ្មែរ မြန်မာဘာသာ",
    # Cyrillic, Greek, others
    "Привет, мир! Это русский текст. Съешь же ещё этих мягких французских булок.",
    "Ελληνικά: Γειά σου Κόσμε! ΑΒΓΔ αβγδ ς σ Σ",
    "Українська: Ґ ґ Є є І і Ї ї; Српски: Ђ ђ Љ љ Њ њ",
    "Հայերեն, ქართული, አማርኛ, ᏣᎳᎩ, ᠮᠣᠩᠭᠣᠯ",
    "Tiếng Việt có dấu: Đường phố Hà Nội rất đẹp.",
    # emoji
    "😀😃😄😁 😆😅🤣😂",
    "👍👍🏻👍🏼👍🏽👍🏾👍🏿",
    "👨‍👩‍👧‍👦 👩‍❤️‍💋‍👨 🏳️‍🌈 🏴‍☠️ 👁️‍🗨️",
    "🇺🇸🇯🇵🇨🇳🇩🇪🇫🇷 flags",
    "🏴󠁧󠁢󠁳󠁣󠁴󠁿 (tag sequence) 1️⃣ #️⃣ *️⃣",
    "Emoji in text: I ❤️ Rust 🦀 and Python 🐍!",
    "🫨🩷🪿 🫎 (Unicode 15 emoji) 🙂‍↔️ 🐦‍🔥 (15.1)",
    # combining marks
    "e\u0301 a\u0300 o\u0308 n\u0303 (decomposed)",
    "Z\u0351\u0364\u0310a\u0336\u0317l\u0337\u0348g\u0327\u0324o\u0340\u0349 text",
    "\u0301\u0302\u0303 leading combining marks",
    "क\u093f\u094d ि ् (lone Devanagari marks)",
    "a\u200db\u200cc\u200bd\ufeffe (ZWJ, ZWNJ, ZWSP, BOM)",
    "\u202eRTL override\u202c \u2066isolate\u2069",
    # symbols, math, misc
    "∀x∈ℝ: x² ≥ 0 ∧ ∑ᵢ aᵢ = ∫₀^∞ e^{-x} dx ≈ 1.0",
    "©®™ §¶ †‡ •… ‰ ′″ ‹› «» „“ ‘’ ¿¡",
    "$100 €99,99 £50 ¥1000 ₹500 ₿0.5",
    "→ ← ↑ ↓ ⇒ ⇔ ★ ☆ ♠ ♣ ♥ ♦ ✓ ✗",
    "𝐀𝐁𝐂 𝕏𝕐ℤ 𝒜ℬ𝒞 (math alphanumerics)",
    "Ⅰ Ⅱ Ⅲ Ⅳ ⅰ ⅱ ① ② ③ ⁰¹²³ ₀₁₂₃ ½ ¾",
    "\u0000\u0001\u0007\u001b[31mred\u001b[0m \u007f",
    # punctuation runs
    "!!!??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}}",
    " !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    "...\n\n---\n\n***",
]

CODE_SNIPPETS = [
    'def fib(n: int) -> int:\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n',
    "class Foo(Bar):\n\tdef __init__(self, *args, **kwargs):\n\t\tsuper().__init__(*args, **kwargs)\n\t\tself.x = {'a': [1, 2, 3]}\n",
    'fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!("{:?}", v);\n}\n',
    "impl<'a, T: Clone + Send> Iterator for Iter<'a, T> {\n    type Item = &'a T;\n    fn next(&mut self) -> Option<Self::Item> { self.inner.next() }\n}\n",
    '{"name": "draftgen", "version": "0.1.0", "tags": ["a", "b"], "nested": {"x": 1.5e-9, "y": null, "z": true}}',
    '{\n  "key": "value",\n  "unicode": "\\u00e9\\ud83d\\ude00",\n  "escaped": "line\\nbreak\\t\\"quote\\""\n}',
    '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Test &amp; more</title></head>\n<body><p class="x">Hi&nbsp;there &lt;b&gt;</p></body>\n</html>\n',
    "SELECT u.id, COUNT(*) AS n FROM users u LEFT JOIN orders o ON o.user_id = u.id WHERE u.created_at >= '2024-01-01' GROUP BY u.id HAVING n > 5;",
    "#include <stdio.h>\nint main(void) {\n    printf(\"%d\\n\", 42);\n    return 0;\n}\n",
    "const f = async (x) => { await fetch(`/api/${x}?q=1&r=2`); return x ?? null; };",
    "$ ls -la | grep -E '^d' | awk '{print $9}' > out.txt 2>&1 && echo done",
    "diff --git a/src/lib.rs b/src/lib.rs\n@@ -1,3 +1,4 @@\n-use std::io;\n+use std::io::{self, Read};\n+\n",
    "    indented with spaces\n\tindented with tab\n  \t mixed\n",
    "x=1;y=2;z=x+y*3/4-5%6**7//8",
    "0x1F 0b1010 0o777 1_000_000 3.14159e+10 -2.5E-3 .5 5.",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\nOK\n</think>\n\nHi<|im_end|>",
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>",
]

WHITESPACE_TEXTS = [
    "line1\nline2\rline3\r\nline4\n\rline5",
    "\r\n\r\n\r\n",
    "\n\n\n\n",
    "\r\r\r",
    "trailing spaces   ",
    "trailing tab\t",
    "   leading spaces",
    "\t\tleading tabs",
    "a \n b \r\n c \t\n d",
    "  \n  \n  ",
    "word\n \n word",
    "multiple    spaces    between    words",
    "tab\tseparated\tvalues\there",
    " \t \t \t mixed",
    "\u00a0nbsp\u00a0\u00a0and\u2003em\u2009thin\u3000ideographic",
    "\u2028line separator\u2029paragraph separator",
    "\u0085next line\u000bvertical tab\u000cform feed",
    "\u001cfile\u001dgroup\u001erecord\u001funit separators",
    "\u180emongolian vowel separator\u200bzero width",
    " ",
    "  ",
    "\n",
    "\t",
    "\r",
    "\r\n",
    " \n",
    "\n ",
    "a",
    "",
]

BROKEN_SPECIALS = [
    "<|im_end|",
    "<|im_end",
    "|im_end|>",
    "im_end|>",
    "<|im_end |>",
    "< |im_end|>",
    "<|IM_END|>",
    "<|im_end|>>",
    "<<|im_end|>",
    "<|im_end|><|im_end|>",
    "<|im_end||im_end|>",
    "<think",
    "<think >",
    "</think",
    "<thinking>",
    "<think></think>",
    "</think><think>",
    "<|tool_call_section_begin|>",  # singular: not in the vocabulary
    "<|tool_calls_section_begin|",
    "<|reserved_token_163589",
    "<|reserved_token_99|>",
    "<|reserved_token_163840|>",
    "<|reserved_token_163583|>",
    "<|reserved_token_|>",
    "[BOS",
    "[EOS]]",
    "[[PAD]]",
    "[unk]",
    "<|im_user|><|im_middle|",
    "<|<|im_end|>|>",
    "<|im_start|",
    "<tool_call",
    "<｜tool▁sep｜",
    "<|endoftext|",
]


def numbers(rng: random.Random) -> list[str]:
    out = []
    for length in range(1, 41):
        out.append("".join(rng.choice("0123456789") for _ in range(length)))
    out += [
        "0",
        "00",
        "007",
        "1,234,567",
        "1.234.567,89",
        "3.14159265358979323846",
        "-42",
        "+1 (555) 123-4567",
        "2024-05-31T12:34:56.789Z",
        "192.168.0.1:8080",
        "v1.2.3-rc.4+build.5",
        "1e10 1E-10 6.022e23",
        "١٢٣ ۱۲۳ १२३ ১২৩ ๑๒๓ 一二三",
        "12345abc678de90",
        "a1b22c333d4444e55555",
    ]
    return out


def special_literal_texts(rng: random.Random) -> list[str]:
    """Every Kimi special and reserved literal embedded in text, plus the Qwen3 added tokens
    and a sample of DeepSeek-V3's (all its named ones, some of its 800 placeholders)."""
    decoder = kimi_added_tokens_decoder()
    kimi = [decoder.get(i, f"<|reserved_token_{i}|>") for i in range(163584, 163584 + 256)]
    qwen = [t["content"] for t in _added_tokens("qwen3")]
    deepseek = [t["content"] for t in _added_tokens("deepseek-v3")]
    named = [t for t in deepseek if "place▁holder" not in t]
    holders = [t for t in deepseek if "place▁holder" in t]
    deepseek_sample = named + rng.sample(holders, 30)
    contexts = [
        "{}",
        "text{}text",
        "Hello {} world",
        " {} ",
        "\n{}\n",
        "中文{}中文",
        "a{}{}b",
        "{}. {}",
        "x<{}>y",
        "'{}'",
    ]
    out = []
    for tokens in (kimi, qwen, deepseek_sample):
        for token in tokens:
            context = rng.choice(contexts)
            out.append(context.replace("{}", token))
    return out


def _added_tokens(model: str) -> list[dict]:
    data = json.loads((ASSETS / model / "tokenizer.json").read_text(encoding="utf-8"))
    return data["added_tokens"]


def random_mixes(rng: random.Random, pool: list[str], count: int) -> list[str]:
    """Fragments of the fixed texts glued with assorted separators: puts scripts, numbers,
    specials and whitespace kinds next to each other in ways no list above does."""
    separators = ["", " ", "  ", "\n", "\r\n", "\t", "\n\n", " \n", "\r", "\u3000", ". ", "，"]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(2, 6)):
            source = rng.choice(pool)
            if len(source) > 4 and rng.random() < 0.6:
                start = rng.randrange(len(source))
                source = source[start : start + rng.randint(1, 40)]
            parts.append(source)
            parts.append(rng.choice(separators))
        text = "".join(parts)
        if rng.random() < 0.15:
            text = unicodedata.normalize(rng.choice(["NFD", "NFKC", "NFKD"]), text)
        out.append(text)
    return out


def long_texts() -> list[list[tuple[str, int]]]:
    """Texts around Kimi's 25,000-char run limit and 400,000-char chunk limit, as repeat lists.
    Run lengths count code points; whitespace is Python `str.isspace` (which, unlike Rust's
    `char::is_whitespace`, includes U+001C..U+001F)."""
    return [
        [("a", 25_000)],
        [("a", 25_001)],
        [("a", 24_999), (" ", 1), ("b", 25_002)],
        [(" ", 25_001)],
        [(" ", 24_999), ("x", 1)],
        [("\n", 30_000), ("end", 1)],
        [("a", 50_001), (" ", 1), ("bcd", 1)],
        [("x", 20_000), ("\u001f", 1), ("y", 20_000)],
        [("z", 20_000), ("\u3000", 1), ("z", 20_000)],
        [("q", 20_000), ("\u200b", 1), ("q", 20_000)],
        [("\t", 13_000), ("\r\n", 7_000), ("tail", 1)],
        [(" ", 26_000), ("Hello", 6_000)],
        [("中", 30_000)],
        [("😀", 26_000)],
        [("ab", 12_500), ("<|im_end|>", 1), ("cd", 12_500)],
        [("word ", 20_000)],
        [("The quick brown fox. ", 20_000)],
        [("a", 399_990), (" ", 20), ("b", 30_000)],
        [("x ", 199_998), ("<|im_end|>", 1), (" y", 10)],
        [("Lorem ipsum 中文 123 ", 21_000), (" ", 30_000), ("z", 30_001)],
    ]


def expand(repeat: list[tuple[str, int]]) -> str:
    return "".join(piece * count for piece, count in repeat)


def build_text_corpus() -> list[dict]:
    """Entries `{"text": str}` or `{"repeat": [[piece, count], ...]}` (long ones)."""
    rng = seeded("tokenize")
    fixed = SENTENCES + CODE_SNIPPETS + WHITESPACE_TEXTS + BROKEN_SPECIALS
    numbers_ = numbers(rng)
    specials = special_literal_texts(rng)
    embedded_broken = [f"Text with {b} inside." for b in BROKEN_SPECIALS]
    pool = fixed + numbers_ + specials[:60]
    mixes = random_mixes(rng, pool, 520)
    texts = fixed + numbers_ + specials + embedded_broken + mixes
    entries: list[dict] = []
    seen: set[str] = set()
    for text in texts:
        if text in seen:
            continue
        seen.add(text)
        entries.append({"text": text})
    for repeat in long_texts():
        entries.append({"repeat": [[piece, count] for piece, count in repeat]})
    return entries


def entry_text(entry: dict) -> str:
    return entry["text"] if "text" in entry else expand([tuple(p) for p in entry["repeat"]])


def cross_check_kimi(texts: list[str], ids: list[list[int]]) -> None:
    """Two independent routes to the Kimi ids, so a quirk of one engine cannot hide:
    (1) tiktoken with the `&&`-free rewrite of the pattern must agree everywhere (proves the
    intersection is honoured, not ignored); (2) for texts without special literals or long runs,
    Python `regex` (V1) splitting + tiktoken's single-piece BPE must agree."""
    alt = kimi_encoding_no_intersection()
    enc = kimi_encoding()
    pattern = regex.compile(KIMI_PAT_STR, regex.V1)
    specials = set(enc.special_tokens_set)
    regex_checked = 0
    for text, expected in zip(texts, ids):
        assert kimi_encode(text, alt) == expected, f"&&-rewrite disagrees on {text[:60]!r}"
        if len(text) > 20_000 or any(s in text for s in specials):
            continue
        via_regex = []
        for piece in pattern.findall(text):
            via_regex.extend(enc._encode_single_piece(piece.encode("utf-8")))
        assert via_regex == expected, f"regex V1 route disagrees on {text[:60]!r}"
        regex_checked += 1
    print(f"cross-check: &&-rewrite agrees on {len(texts)} texts; regex-V1 route on {regex_checked}")


def check_split_semantics() -> None:
    """Sanity of the pre-split on hand-computed cases (limit 3)."""
    cases = {
        "": [""],
        "aaa": ["aaa"],
        "aaaa": ["aaa", "a"],
        "aaaaaaa": ["aaa", "aaa", "a"],
        "aa  bb": ["aa  bb"],
        "    x": ["   ", " x"],
    }
    for text, expected in cases.items():
        got = list(split_whitespaces_or_nonwhitespaces(text, 3))
        assert got == expected, (text, got, expected)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
            f.write("\n")


def make_tokenize_corpora() -> dict[str, int]:
    entries = build_text_corpus()
    texts = [entry_text(e) for e in entries]
    kimi_ids = [kimi_encode(t) for t in texts]
    cross_check_kimi(texts, kimi_ids)
    rows = [{**e, "ids": ids} for e, ids in zip(entries, kimi_ids)]
    write_jsonl(OUT / "tokenize_kimi.jsonl", rows)
    counts = {"tokenize_kimi.jsonl": len(rows)}
    for model, name in (("qwen3", "tokenize_qwen3.jsonl"), ("deepseek-v3", "tokenize_deepseek_v3.jsonl")):
        hf_rows = []
        for entry, text in zip(entries, texts):
            if len(text) > LONG_TEXT_CHARS:
                continue
            hf_rows.append({**entry, "ids": hf_encode(model, text)})
        write_jsonl(OUT / name, hf_rows)
        counts[name] = len(hf_rows)
    return counts


# ---------------------------------------------------------------------------------------------
# Render corpora
# ---------------------------------------------------------------------------------------------

WORDS = [
    "hello", "world", "Paris", "東京", "数据", "données", "München", "Москва", "مرحبا", "שלום",
    "नमस्ते", "สวัสดี", "😀", "🦀", "naïve", "Ångström", "x<y", "a&b", "'quoted'", '"double"',
    "back\\slash", "tab\there", "new\nline", "<b>bold</b>", "100%", "$5", "1e-09", "  spaced  ",
]

USER_TURNS = [
    "What is the weather in Paris?",
    "请帮我查一下北京明天的天气。",
    "東京とニューヨークの時差は？",
    "Résume ce texte en une phrase, s'il te plaît.",
    "Напиши функцию на Python, которая сортирует список.",
    "ما هي عاصمة فرنسا؟",
    "Can you search for 'Rust async' and summarise the top 3 results?",
    "Compute 2+2, then 3*7.",
    "Write a haiku about the sea 🌊.",
    "  leading and trailing spaces  ",
    "Line one\nLine two\r\nLine three",
    "Tell me about <html> & \"quotes\" and 'apostrophes'.",
    "Literal specials: <|im_end|> <think> </think> <|im_start|> <tool_call>",
    "",
    "한국어로 대답해 주세요.",
    "Explain the difference between TCP and UDP.",
    "Find flights from SFO to NRT on 2025-03-14 for 2 adults.",
    "What's 1e-9 in decimal? And 0.1 + 0.2?",
]

ASSISTANT_TEXTS = [
    "The weather in Paris is sunny, 22 °C.",
    "北京明天多云，最高气温25度。",
    "Here is a function:\n\n```python\ndef sort_list(xs):\n    return sorted(xs)\n```",
    "La capitale de la France est Paris.",
    "2 + 2 = 4, and 3 × 7 = 21.",
    "Waves fold on the shore —\nsalt wind carries gull voices —\nthe tide breathes again.",
    "",
    "  spaced answer  ",
    "I'll look that up for you.",
    "TCP is connection-oriented; UDP is connectionless.",
    "مرحبا! كيف يمكنني مساعدتك؟",
    "Answer with a literal <|im_end|> inside.",
    "\n\nLeading newlines.",
]

REASONINGS = [
    "The user wants the weather. I should call the tool.",
    "用户想知道天气，我需要调用工具。",
    "Let me think step by step.\n1. Parse the request.\n2. Answer.",
    "  reasoning with spaces  ",
    "\nreasoning surrounded by newlines\n",
    "Thinking about <think> tags and </think> literals.",
    "Simple arithmetic: 2+2=4.",
    "",
]

SYSTEMS = [
    "You are a helpful assistant.",
    "You are concise.",
    "你是一个乐于助人的助手。",
    "Réponds toujours en français. Utilise des « guillemets ».",
    "You are Kimi, an AI assistant created by Moonshot AI.",
    "System prompt with\nmultiple lines\n\nand a blank one.",
    "",
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Return the weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris or 東京"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "function": {
            "parameters": {
                "required": ["query"],
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "options": {
                        "type": "object",
                        "properties": {
                            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                            "lang": {"type": "string", "pattern": "^[a-z]{2}$"},
                            "filters": {
                                "type": "object",
                                "properties": {
                                    "sites": {"type": "array", "items": {"type": "string"}},
                                    "date_range": {
                                        "type": "object",
                                        "properties": {
                                            "from": {"type": "string", "format": "date"},
                                            "to": {"type": "string", "format": "date"},
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
            "name": "search_web",
            "description": "Search the web. Returns <title> & snippet pairs.",
        },
        "type": "function",
    },
    {
        "type": "function",
        "function": {
            "name": "run_code",
            "description": "执行代码并返回输出。",
            "parameters": {
                "type": "object",
                "properties": {
                    "language": {"type": "string", "enum": ["python", "rust", "bash"]},
                    "code": {"type": "string"},
                    "timeout": {"type": "number", "default": 1.5},
                },
                "required": ["language", "code"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "create_event",
            "description": "Create a calendar event (Événement).",
            "parameters": {
                "type": "object",
                "required": ["title", "start"],
                "properties": {
                    "title": {"type": "string"},
                    "start": {"type": "string", "description": "ISO 8601"},
                    "all_day": {"type": "boolean"},
                    "attendees": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                            "required": ["email"],
                        },
                    },
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "noop",
            "description": "",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]

FLOATS = [1e-09, 0.1, 1.0, 0.5, -0.0, 2.5e-5, 1e16, 1.5e300, 123456789.123, 3.141592653589793, 1e-7, 100.0]
INTS = [0, -1, 42, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 10**15]
STRINGS = WORDS + ["", "<|im_end|>", "</think>", "\u2028", "\\u00e9", "emoji 👨‍👩‍👧"]


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.random()
    if depth < 3 and kind < 0.15:
        return random_object(rng, depth + 1)
    if depth < 3 and kind < 0.25:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind < 0.4:
        return rng.choice(FLOATS)
    if kind < 0.55:
        return rng.choice(INTS)
    if kind < 0.62:
        return rng.choice([True, False, None])
    return rng.choice(STRINGS)


def random_object(rng: random.Random, depth: int = 0) -> dict:
    """An arguments object with deliberately unsorted keys (insertion order must survive)."""
    keys = ["zeta", "alpha", "Mid", "_under", "数字", "b", "a", "key with space", "ключ", "émoji😀"]
    chosen = rng.sample(keys, rng.randint(1, 5))
    return {k: random_value(rng, depth) for k in chosen}


def arguments_for(rng: random.Random, name: str):
    base = {
        "get_weather": lambda: {"city": rng.choice(["Paris", "北京", "東京", "São Paulo", "Zürich"]), "unit": rng.choice(["celsius", "fahrenheit"])},
        "search_web": lambda: {"query": rng.choice(WORDS), "options": {"limit": rng.choice(INTS[:4]), "filters": {"sites": ["a.com", "b.org"], "date_range": {"to": "2025-12-31", "from": "2025-01-01"}}}},
        "run_code": lambda: {"language": "python", "code": "print('héllo')\nfor i in range(3):\n\tprint(i < 2 and i > 0 & 1)", "timeout": rng.choice(FLOATS)},
        "create_event": lambda: {"title": rng.choice(WORDS), "start": "2025-03-14T09:00:00+09:00", "all_day": rng.choice([True, False]), "attendees": [{"email": "a@b.c", "name": "Ünal"}]},
        "noop": lambda: {},
    }.get(name, lambda: random_object(rng))()
    if rng.random() < 0.35:
        base.update(random_object(rng))
    return base


def arguments_as_string(rng: random.Random, obj) -> str:
    """The JSON-string form, in the odd shapes real clients send (the template keeps it verbatim)."""
    style = rng.randrange(6)
    if style == 0:
        return json.dumps(obj, ensure_ascii=False)
    if style == 1:
        return json.dumps(obj, ensure_ascii=True)
    if style == 2:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if style == 3:
        return json.dumps(obj, ensure_ascii=False, indent=2)
    if style == 4:
        return json.dumps(obj, ensure_ascii=False, separators=(" , ", " :  "))
    return rng.choice(
        [
            '{ "city" :"Paris" ,"unit":"c" }',
            '{"q": "line\\nbreak \\"quoted\\" \\u00e9 \\ud83d\\ude00 \\/ slash"}',
            '{\n\t"nested": {"deep": [1, 2.50, 3e2, -0.0]}\n}',
            "{}",
            '  {"padded": true}  ',
            '{"x":"<|im_end|>"}',
        ]
    )


def text_content(rng: random.Random, text: str):
    """Content as a plain string, or sometimes as a list of text parts."""
    if rng.random() < 0.12:
        cut = rng.randint(0, len(text))
        return [{"type": "text", "text": text[:cut]}, {"type": "text", "text": text[cut:]}]
    return text


class Conversation:
    """Random OpenAI-style conversations with a conversation-global tool-call counter."""

    def __init__(self, rng: random.Random, kimi_ids: bool):
        self.rng = rng
        self.kimi_ids = kimi_ids
        self.calls = 0

    def call_id(self, name: str) -> str:
        index = self.calls
        self.calls += 1
        if self.kimi_ids and self.rng.random() < 0.9:
            return f"functions.{name}:{index}"
        return "call_" + "".join(self.rng.choice("0123456789abcdef") for _ in range(24))

    def assistant(self, final: bool) -> dict:
        rng = self.rng
        msg: dict = {"role": "assistant", "content": text_content(rng, rng.choice(ASSISTANT_TEXTS))}
        if rng.random() < 0.5:
            msg["reasoning_content"] = rng.choice(REASONINGS)
        if final and rng.random() < 0.1:
            # reasoning written inline, the way some clients send it back
            msg = {"role": "assistant", "content": f"<think>\n{rng.choice(REASONINGS)}\n</think>\n\n{rng.choice(ASSISTANT_TEXTS)}"}
        return msg

    def tool_round(self, tools: list[dict]) -> list[dict]:
        rng = self.rng
        names = [t["function"]["name"] for t in tools] or ["get_weather"]
        calls = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            name = rng.choice(names)
            args = arguments_for(rng, name)
            arguments = arguments_as_string(rng, args) if rng.random() < 0.5 else args
            calls.append({"id": self.call_id(name), "type": "function", "function": {"name": name, "arguments": arguments}})
        content_choice = rng.random()
        content = None if content_choice < 0.35 else ("" if content_choice < 0.55 else rng.choice(ASSISTANT_TEXTS))
        msg: dict = {"role": "assistant", "content": content, "tool_calls": calls}
        if rng.random() < 0.6:
            msg["reasoning_content"] = rng.choice(REASONINGS)
        results = []
        for call in calls:
            result = {"role": "tool", "tool_call_id": call["id"], "content": rng.choice(
                ['{"temperature": 22, "unit": "celsius"}', "晴天，25°C", "Error: timeout", "", "[1, 2, 3]", "<result>ok & done</result>"]
            )}
            if rng.random() < 0.3:
                result["name"] = call["function"]["name"]
            results.append(result)
        return [msg] + results

    def build(self) -> dict:
        rng = self.rng
        case: dict = {"messages": []}
        messages = case["messages"]
        tools = None
        if rng.random() < 0.45:
            tools = copy.deepcopy(rng.sample(TOOLS, rng.randint(1, len(TOOLS))))
            case["tools"] = tools
        if rng.random() < 0.6:
            messages.append({"role": "system", "content": text_content(rng, rng.choice(SYSTEMS))})
        for turn in range(rng.randint(1, 4)):
            user: dict = {"role": "user", "content": text_content(rng, rng.choice(USER_TURNS))}
            if rng.random() < 0.05:
                user["name"] = "alice"
            messages.append(user)
            if tools and rng.random() < 0.6:
                messages.extend(self.tool_round(tools))
                if rng.random() < 0.3:
                    messages.extend(self.tool_round(tools))
                if rng.random() < 0.5:
                    break  # end on tool results: the model answers next
            messages.append(self.assistant(final=True))
        ends_with_assistant = messages[-1]["role"] == "assistant"
        if ends_with_assistant and rng.random() < 0.5:
            messages.append({"role": "user", "content": text_content(rng, rng.choice(USER_TURNS))})
        ends_with_assistant = messages[-1]["role"] == "assistant"
        case["add_generation_prompt"] = (rng.random() < 0.2) if ends_with_assistant else (rng.random() < 0.9)
        return case


def render_family(family: str) -> tuple[list[dict], int]:
    rng = seeded(f"render:{family}")
    rows: list[dict] = []
    dropped = 0
    attempts = 0
    while len(rows) < RENDER_TARGET and attempts < RENDER_MAX_ATTEMPTS:
        attempts += 1
        case = Conversation(rng, kimi_ids=family.startswith("kimi")).build()
        kwargs = {}
        if family == "qwen3" and rng.random() < 0.35:
            kwargs = {"enable_thinking": rng.random() < 0.3}
        if kwargs:
            case["chat_template_kwargs"] = kwargs
        messages = copy.deepcopy(case["messages"])
        tools = copy.deepcopy(case.get("tools"))
        try:
            if family in KIMI_TEMPLATES:
                text = kimi_render(KIMI_TEMPLATES[family], messages, tools, case["add_generation_prompt"], **kwargs)
                ids = kimi_encode(text)
            else:
                model = {"qwen3": "qwen3", "deepseek_v3": "deepseek-v3"}[family]
                # DeepSeek-V3's template needs `content: None` on tool-call turns, which
                # transformers 5 drops (it then raises): render those as transformers 4 did.
                render = hf_render_keep_none if model == "deepseek-v3" else hf_render
                text, ids = render(model, messages, tools, case["add_generation_prompt"], **kwargs)
        except Exception as error:  # the reference refused this case: drop it, count it
            if isinstance(error, AssertionError):
                raise
            dropped += 1
            continue
        row = {}
        if family in KIMI_TEMPLATES:
            row["template"] = KIMI_TEMPLATES[family]
        row.update(case)
        row["text"] = text
        row["ids"] = ids
        rows.append(row)
    assert len(rows) >= 200, f"{family}: only {len(rows)} renders after {attempts} attempts"
    return rows, dropped


def make_render_corpora() -> dict[str, str]:
    counts = {}
    for family in ("qwen3", "deepseek_v3", "kimi_k2", "kimi_k2_thinking"):
        rows, dropped = render_family(family)
        name = f"render_{family}.jsonl"
        write_jsonl(OUT / name, rows)
        counts[name] = f"{len(rows)} (reference raised on {dropped} dropped candidates)"
    return counts


def main() -> None:
    check_goldens()
    check_split_semantics()
    OUT.mkdir(parents=True, exist_ok=True)
    counts: dict[str, object] = {}
    counts.update(make_tokenize_corpora())
    counts.update(make_render_corpora())
    with (OUT / "VERSIONS.txt").open("w", encoding="utf-8", newline="\n") as f:
        f.write("# Reference libraries that produced tests/data/parity (make_parity.py)\n")
        for name, version in versions().items():
            f.write(f"{name} {version}\n")
    for name, count in counts.items():
        size = (OUT / name).stat().st_size
        print(f"{name}: {count} lines, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
