#!/usr/bin/env python3
"""Check `draftgen export` output against the trainers' own rules and loaders.

Usage: check_export.py BUILD_DIR OUT_DIR [RUN_DIR]   (the layout tests/export.rs makes)

Nothing here comes from draftgen: the vocabulary maps are recomputed from the Parquet shards
with the trainers' code copied below (source lines named at each copy), and every file is read
by the loader its trainer uses:
  * d2t.npy / t2d.npy      numpy.load, and byte-equal to numpy.save of the expected arrays
  * vocab_mapping.pt       torch.load(weights_only=True) when torch is importable, else
    token_freq.pt          `faithful_torch_load` below: torch/serialization.py's zip layout and
                           the persistent-id protocol, with _weights_only_unpickler's allowlist
  * vocab.safetensors      safetensors.numpy.load_file (when installed)
  * specforge.jsonl        SpecForge's own prompt_builder.prepare_prompt_tasks (vendored copy)
  * prepared/              datasets.load_from_disk (when installed)
  * conversations.jsonl    (with RUN_DIR) SpecForge's two loaders: datasets.load_dataset("json")
                           as prompt_builder.py calls it, and safe_conversations_generator
                           (vendored copy); each row equals the conversation rebuilt here from
                           the run's journal (request messages + the answer of the record the
                           build used), and passes parse.py's role-order rules untruncated
Prints one line per check; exits 1 on the first mismatch.
"""

import glob
import io
import json
import math
import os
import pickle
import re
import sys
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "vendor"))

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def ok(msg):
    print(f"ok  {msg}")


def fail(msg):
    print(f"FAIL {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    ok(msg)


# ---------------------------------------------------------------- reading the build output
def shards(build):
    meta = json.load(open(os.path.join(build, "build.json")))
    listed = [os.path.join(build, s["file"]) for s in meta.get("shards", [])]
    return meta, listed or sorted(glob.glob(os.path.join(build, "samples-*.parquet")))


def rows(build):
    """(id, input_ids, loss_mask) in shard then row order, as numpy int64 arrays."""
    _, files = shards(build)
    for f in files:
        t = pq.read_table(f, columns=["id", "input_ids", "loss_mask"])
        for i, ids, mask in zip(t["id"].to_pylist(), t["input_ids"].to_pylist(), t["loss_mask"].to_pylist()):
            yield i, np.asarray(ids, dtype=np.int64), np.asarray(mask, dtype=np.int64)


# ---------------------------------------------------------------- SpecForge's rule (copied)
def specforge_counts(build):
    # specforge/data/preprocessing.py @a6b6b023, generate_vocab_mapping_file, lines 615-624;
    # torch.unique(return_counts=True) → np.unique (both sorted ascending).
    token_dict = Counter()
    for _, input_ids, loss_mask in rows(build):
        masked_ids = input_ids[loss_mask == 1]
        unique_ids, counts = np.unique(masked_ids, return_counts=True)
        batch_token_dict = dict(zip(unique_ids.tolist(), counts.tolist()))
        token_dict.update(batch_token_dict)
    return token_dict


def process_token_dict_to_mappings(token_dict, draft_vocab_size, target_vocab_size):
    # specforge/data/preprocessing.py @a6b6b023, lines 720-770, verbatim except prints dropped
    # and torch.tensor → np.array (int64 / bool, as torch.tensor infers them).
    if len(token_dict) < draft_vocab_size:
        existing_tokens = set(token_dict.keys())
        missing_tokens = set(range(draft_vocab_size)) - existing_tokens
        for token in missing_tokens:
            token_dict[token] = 0
            if len(token_dict) >= draft_vocab_size:
                break
    total_frequency = sum(token_dict.values())
    top_N = token_dict.most_common(draft_vocab_size)
    top_N_frequency_sum = sum(freq for key, freq in top_N)
    top_N_ratio = 0.0 if total_frequency == 0 else top_N_frequency_sum / total_frequency
    used_tokens = [key for key, freq in top_N]
    used_tokens.sort()
    d2t = [used_tokens[i] - i for i in range(len(used_tokens))]
    t2d = [i in used_tokens for i in range(target_vocab_size)]
    return np.array(d2t, dtype=np.int64), np.array(t2d, dtype=np.bool_), top_N_ratio


# ---------------------------------------------------------------- speculators' rule (copied)
def speculators_counts(build_or_rows):
    # src/speculators/train/vocab_mapping.py @c05b95b, save_token_frequency_distribution,
    # lines 36-43 (torch → numpy).
    token_freq = Counter()
    for _, input_ids, loss_mask in build_or_rows:
        masked_token_ids = input_ids[loss_mask.astype(bool)]
        unique_ids, counts = np.unique(masked_token_ids, return_counts=True)
        batch_token_freq = dict(zip(unique_ids.tolist(), counts.tolist(), strict=True))
        token_freq.update(batch_token_freq)
    return dict(token_freq)


def build_vocab_mappings_from_distribution(token_freq_dict, draft_vocab_size, target_vocab_size):
    # src/speculators/train/vocab_mapping.py @c05b95b, lines 67-98 (torch → numpy).
    sorted_tokens = sorted(token_freq_dict, key=lambda tid: (-token_freq_dict[tid], tid))
    num_tokens_to_select = min(draft_vocab_size, len(sorted_tokens))
    selected_token_ids = sorted_tokens[:num_tokens_to_select]
    if len(selected_token_ids) < draft_vocab_size:
        current_ids = set(selected_token_ids)
        for tid in range(draft_vocab_size):
            if tid not in current_ids:
                selected_token_ids.append(tid)
            if len(selected_token_ids) >= draft_vocab_size:
                break
    selected_token_ids.sort()
    draft_to_target = np.array(selected_token_ids, dtype=np.int64) - np.arange(draft_vocab_size, dtype=np.int64)
    target_to_draft = np.zeros(target_vocab_size, dtype=np.bool_)
    target_to_draft[selected_token_ids] = True
    return draft_to_target, target_to_draft


# ---------------------------------------------------------------- torch.load, faithfully
# torch/serialization.py: _load() reads `<archive>/data.pkl` with an Unpickler whose
# persistent_load gets ('storage', storage_type, key, location, numel) and reads
# `<archive>/data/<key>`; torch._weights_only_unpickler allows only these globals here.
_STORAGE_DTYPES = {
    "LongStorage": np.int64, "IntStorage": np.int32, "BoolStorage": np.bool_,
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "ByteStorage": np.uint8,
}


class _StorageType:
    def __init__(self, name):
        self.name = name


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    n = math.prod(size)
    flat = storage[storage_offset:storage_offset + n]
    if len(size) == 1 and n > 1 and tuple(stride) != (1,):
        raise ValueError(f"unexpected stride {stride}")
    return flat.reshape(size)


def faithful_torch_load(path):
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        prefix = names[0].split("/")[0]
        for required in ("data.pkl", "version"):
            if f"{prefix}/{required}" not in names and f"{prefix}/.data/{required}" not in names:
                raise ValueError(f"{path}: no {required} record")
        version = int(z.read(f"{prefix}/version").strip())
        if not 1 <= version <= 3:
            raise ValueError(f"{path}: unsupported version {version}")
        if f"{prefix}/byteorder" in names and z.read(f"{prefix}/byteorder") != b"little":
            raise ValueError("not little-endian")
        for info in z.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"{info.filename} is compressed: torch expects stored records")

        class Unpickler(pickle.Unpickler):
            def find_class(self, module, name):
                if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                    return _rebuild_tensor_v2
                if (module, name) == ("collections", "OrderedDict"):
                    return OrderedDict
                if module == "torch" and name in _STORAGE_DTYPES:
                    return _StorageType(name)
                raise pickle.UnpicklingError(f"weights_only forbids {module}.{name}")

            def persistent_load(self, saved_id):
                typename, storage_type, key, location, numel = saved_id
                assert typename == "storage" and location == "cpu", saved_id
                dtype = _STORAGE_DTYPES[storage_type.name]
                raw = z.read(f"{prefix}/data/{key}")
                if len(raw) != numel * np.dtype(dtype).itemsize:
                    raise ValueError(f"storage {key}: {len(raw)} bytes for {numel} elements")
                return np.frombuffer(raw, dtype=dtype)

        return Unpickler(io.BytesIO(z.read(f"{prefix}/data.pkl"))).load()


def torch_load(path):
    """Real torch.load (weights_only, torch's default) when importable, else the copy above."""
    if HAVE_TORCH:
        obj = torch.load(path, weights_only=True)
        if isinstance(obj, dict):
            return {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in obj.items()}
        return obj
    return faithful_torch_load(path)


def npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


# ---------------------------------------------------------------- the checks
def check_vocab(build, out, target_vocab_size):
    loader = "torch.load" if HAVE_TORCH else "faithful torch.load copy"
    dirs = sorted(glob.glob(os.path.join(out, "vocab-*")))
    check(len(dirs) >= 2, f"vocab outputs found: {[os.path.basename(d) for d in dirs]}")
    for d in dirs:
        report = json.load(open(os.path.join(d, "vocab.json")))
        rule, n = report["rule"], report["draft_vocab_size"]
        tag = f"{os.path.basename(d)} (rule {rule}, N={n}, {report['padded_ids']} padded)"
        if rule == "specforge":
            d2t, t2d, ratio = process_token_dict_to_mappings(specforge_counts(build), n, target_vocab_size)
            got = torch_load(os.path.join(d, "vocab_mapping.pt"))
            check(list(got.keys()) == ["d2t", "t2d"], f"{tag}: {loader} gives {{d2t, t2d}}")
            check(got["d2t"].dtype == np.int64 and np.array_equal(got["d2t"], d2t), f"{tag}: d2t equals SpecForge's")
            check(got["t2d"].dtype == np.bool_ and np.array_equal(got["t2d"], t2d), f"{tag}: t2d equals SpecForge's")
            check(abs(report["coverage"] - ratio) < 1e-12, f"{tag}: coverage equals SpecForge's top-N ratio {ratio:.4f}")
            if HAVE_TORCH:
                check(np.array_equal(faithful_torch_load(os.path.join(d, "vocab_mapping.pt"))["d2t"], d2t),
                      f"{tag}: the faithful copy agrees with torch.load")
        else:
            freq = speculators_counts(rows(build))
            d2t, t2d = build_vocab_mappings_from_distribution(freq, n, target_vocab_size)
            for name, arr in (("d2t", d2t), ("t2d", t2d)):
                path = os.path.join(d, f"{name}.npy")
                loaded = np.load(path)
                check(loaded.dtype == arr.dtype and np.array_equal(loaded, arr), f"{tag}: np.load({name}.npy) equals speculators'")
                check(open(path, "rb").read() == npy_bytes(arr), f"{tag}: {name}.npy is byte-equal to np.save")
            total = sum(freq.values())
            used = d2t + np.arange(n)
            cov = sum(freq.get(int(t), 0) for t in used) / total
            check(abs(report["coverage"] - cov) < 1e-12, f"{tag}: coverage {cov:.4f}")
        try:
            from safetensors.numpy import load_file
        except ImportError:
            print("skip safetensors (not installed)")
            continue
        st = load_file(os.path.join(d, "vocab.safetensors"))
        check(np.array_equal(st["d2t"], d2t) and np.array_equal(st["t2d"], t2d) and st["t2d"].dtype == np.bool_,
              f"{tag}: vocab.safetensors holds the same maps")


def check_specforge(build, out):
    from specforge_prompt_builder import prepare_prompt_tasks

    path = os.path.join(out, "specforge", "specforge.jsonl")
    tasks = prepare_prompt_tasks(
        path, None, chat_template=None, max_length=1 << 30, is_preformatted=False,
        train_only_last_turn=False, cache_dir=None, cache_key=None, num_proc=None, min_loss_tokens=1,
    )
    expected = [(ids.tolist(), mask.tolist()) for _, ids, mask in rows(build) if mask.sum() >= 1]
    got = [(t["payload"]["input_ids"], t["payload"]["loss_mask"]) for t in tasks]
    check(got == expected, f"SpecForge prepare_prompt_tasks reads specforge.jsonl: {len(got)} prompts, ids and masks equal the Parquet rows")


def check_speculators(build, out):
    spec = os.path.join(out, "speculators")
    lines = [json.loads(l) for l in open(os.path.join(spec, "speculators.jsonl"))]
    expected = [(i, ids.tolist(), mask.tolist()) for i, ids, mask in rows(build)]
    check([(l["id"], l["input_ids"], l["loss_mask"]) for l in lines] == expected,
          "speculators.jsonl rows equal the Parquet rows")
    # prepare_data.py's pass-through keeps rows with a supervised token (_append_row).
    kept = [(ids, mask) for _, ids, mask in rows(build) if mask.sum() > 0]
    freq = torch_load(os.path.join(spec, "prepared", "token_freq.pt"))
    want = speculators_counts(("", i, m) for i, m in kept)
    check(isinstance(freq, dict) and freq == want, f"token_freq.pt ({len(freq)} ids) equals save_token_frequency_distribution's dict")
    try:
        import datasets
    except ImportError:
        print("skip datasets.load_from_disk (datasets not installed)")
        return
    prepared = os.path.join(spec, "prepared")
    state = json.load(open(os.path.join(prepared, "state.json")))
    check(state["_format_type"] == "torch", "state.json keeps speculators' set_format('torch')")
    if not HAVE_TORCH:
        # load_from_disk would apply the torch format and need torch: load a copy whose
        # state.json has no format, which reads the same Arrow files.
        import shutil
        import tempfile

        copy = tempfile.mkdtemp()
        for name in os.listdir(prepared):
            shutil.copy(os.path.join(prepared, name), copy)
        state["_format_type"] = None
        json.dump(state, open(os.path.join(copy, "state.json"), "w"))
        prepared = copy
        print("note: torch not installed; load_from_disk reads a copy without the torch format")
    ds = datasets.load_from_disk(prepared)
    check(set(ds.column_names) == {"input_ids", "loss_mask", "seq_len"}, f"load_from_disk: columns {ds.column_names}")
    check(str(ds.features["input_ids"].feature.dtype) == "int64", "load_from_disk: input_ids are int64")
    plain = ds.with_format(None)
    got = [(r["input_ids"], r["loss_mask"], r["seq_len"]) for r in plain]
    check(got == [(i.tolist(), m.tolist(), len(i)) for i, m in kept], f"load_from_disk: {len(got)} rows equal the supervised Parquet rows")

# ---------------------------------------------------------------- conversations.jsonl
TURN_ID = re.compile(r"^(.+):turn(\d+)/(\d+)$")


def journal_records(run):
    """Every parseable journal line, segments in number order (the journal's own rule)."""
    journal = os.path.join(run, "journal")
    segments = sorted((int(n[:-6]), n) for n in os.listdir(journal) if n.endswith(".jsonl") and n[:-6].isdigit())
    for _, name in segments:
        with open(os.path.join(journal, name), encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n") or not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def chosen_records(run):
    """Sample id -> the record its ids were built from: the first success, and for a
    multi-turn conversation the first success of its last turn (docs/FORMATS.md)."""
    best = {}
    for r in journal_records(run):
        if r.get("status") != "success":
            continue
        m = TURN_ID.match(r["id"])
        prompt, turn = (m.group(1), int(m.group(2))) if m else (r["id"], 0)
        if prompt not in best or turn > best[prompt][0]:
            best[prompt] = (turn, r)
    return {k: v[1] for k, v in best.items()}


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def expected_conversation(sample_id, record):
    """The row SpecForge's preprocessing expects (ShareGPT-style `conversations` of OpenAI
    messages with `reasoning_content`, plus `tools`), from the request and the raw answer."""
    conv = []
    for m in record["request"]["messages"]:
        row = {"role": m["role"], "content": text_of(m.get("content"))}
        r = m.get("reasoning_content", m.get("reasoning"))
        if isinstance(r, str):
            row["reasoning_content"] = r
        for k in ("tool_calls", "tool_call_id", "name"):
            if m.get(k) is not None:
                row[k] = m[k]
        conv.append(row)
    msg = record["response"]["choices"][0]["message"]
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if not reasoning and msg.get("reasoning_details"):
        reasoning = "".join(d.get("text", "") for d in msg["reasoning_details"] if d.get("type") == "reasoning.text") or None
    answer = {"role": "assistant", "content": text_of(msg.get("content"))}
    if reasoning:
        answer["reasoning_content"] = reasoning
    calls = []
    for c in msg.get("tool_calls") or []:
        function = c.get("function", c)
        args = function.get("arguments")
        args = "" if args is None else args
        calls.append({"id": c.get("id") if isinstance(c.get("id"), str) else None, "type": "function",
                      "function": {"name": function["name"],
                                   "arguments": args if isinstance(args, str)
                                   else json.dumps(args, separators=(",", ":"), ensure_ascii=False)}})
    if calls:
        answer["tool_calls"] = calls
    conv.append(answer)
    row = {"id": sample_id, "conversations": conv}
    tools = record["request"].get("tools")
    row["tools"] = tools if isinstance(tools, list) else []
    return row


def parse_py_reading(conv):
    """What specforge/data/parse.py GeneralParser.parse @a6b6b023 does with the row's messages:
    "ok" (every message rendered), "leading dropped" (it drops messages before the first user
    turn after an optional system message, with a warning: data whose conversation opens with an
    assistant greeting), or "truncated" (it stops at a tool message not after an assistant/tool
    one, or an assistant message not after a user/tool one)."""
    roles = [m["role"] for m in conv]
    if roles and roles[0] == "system":
        roles = roles[1:]
    status = "ok"
    while roles and roles[0] != "user":
        roles = roles[1:]
        status = "leading dropped"
    if not roles:
        return "truncated"
    for prev, role in zip(roles, roles[1:]):
        if role == "tool" and prev not in ("assistant", "tool"):
            return "truncated"
        if role == "assistant" and prev not in ("user", "tool"):
            return "truncated"
    return status


def check_conversations(build, out, run):
    from specforge_utils import safe_conversations_generator

    path = os.path.join(out, "specforge", "conversations.jsonl")
    lines = [json.loads(l) for l in open(path, encoding="utf-8")]
    ids = [i for i, _, _ in rows(build)]
    check([l["id"] for l in lines] == ids, f"conversations.jsonl: {len(lines)} rows, one per sample, in build order")
    records = chosen_records(run)
    want = [expected_conversation(i, records[i]) for i in ids]
    check(lines == want, "conversations.jsonl rows equal the request + answer of the journal record each sample was built from")
    for l in lines:
        check_keys = set(l) <= {"id", "conversations", "tools"}
        if not check_keys:
            fail(f"{l['id']}: extra columns {sorted(set(l))} would reach apply_chat_template as keyword arguments")
    ok("only id, conversations and tools columns (build_eagle3_dataset passes any other column to the template)")
    multi = sum(1 for l in lines if sum(m["role"] == "assistant" for m in l["conversations"]) > 1)
    tools = sum(1 for l in lines if l.get("tools"))
    calls = sum(1 for l in lines if any(m.get("tool_calls") for m in l["conversations"]))
    print(f"note: {multi} conversations with several assistant turns, {tools} with tools, {calls} with tool calls")
    readings = Counter(parse_py_reading(l["conversations"]) for l in lines)
    print(f"note: parse.py renders {readings['ok']} conversations whole and drops the leading assistant "
          f"message(s) of {readings['leading dropped']} (their datasets open with one; the model saw it)")
    check(readings["truncated"] == 0, "no conversation is truncated by parse.py's role-order rules")
    gen = list(safe_conversations_generator(path))
    check(len(gen) == len(lines), f"safe_conversations_generator (prepare_hidden_states.py's loader) yields {len(gen)} rows")
    for g, l in zip(gen, lines):
        back = [{k: (json.loads(v) if k == "tool_calls" else v) for k, v in m.items()} for m in g["conversations"]]
        if back != l["conversations"] or json.loads(g.get("tools") or "[]") != l.get("tools", []):
            fail(f"{l['id']}: safe_conversations_generator changed the row")
    ok("safe_conversations_generator rows hold the same messages, tool calls and tools")
    try:
        import datasets
    except ImportError:
        print("skip datasets.load_dataset / Dataset.from_generator (datasets not installed)")
        return
    ds = datasets.load_dataset("json", data_files=path, split="train")
    check(len(ds) == len(lines) and "conversations" in ds.column_names,
          f"datasets.load_dataset('json') (prompt_builder.py's loader) reads {len(ds)} rows")
    got = [r["content"] for row in ds["conversations"] for r in row]
    check(got == [m["content"] for l in lines for m in l["conversations"]], "load_dataset keeps every message's content")
    ds = datasets.Dataset.from_generator(safe_conversations_generator, gen_kwargs={"file_path": path})
    check(len(ds) == len(lines), "Dataset.from_generator(safe_conversations_generator) builds the Arrow dataset")


def main():
    build, out = sys.argv[1], sys.argv[2]
    run = sys.argv[3] if len(sys.argv) > 3 else None
    meta, _ = shards(build)
    print(f"torch: {'real torch ' + torch.__version__ if HAVE_TORCH else 'not installed, faithful copy of torch.load'}")
    check_vocab(build, out, meta["model"]["vocab_size"])
    check_specforge(build, out)
    check_speculators(build, out)
    if run:
        check_conversations(build, out, run)
    print("all export checks passed")


if __name__ == "__main__":
    main()
