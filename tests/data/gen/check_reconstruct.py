"""Report-only sanity check: how many non-stream server_shapes fixtures `draftgen reconstruct`
rebuilds to the truth ids. Never used to make or change a fixture.

    python3 tests/data/gen/check_reconstruct.py [path/to/draftgen]   (default: target/debug/draftgen)
"""

import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "server_shapes"
binary = sys.argv[1] if len(sys.argv) > 1 else str(HERE.parents[2] / "target" / "debug" / "draftgen")

for path in sorted(DATA.glob("*.jsonl")):
    fixtures = [json.loads(line) for line in path.open(encoding="utf-8")]
    fixtures = [f for f in fixtures if "response" in f]
    by_model = collections.defaultdict(list)
    for f in fixtures:
        by_model[(f["model"], f["profile"], f["chat_template"])].append(f)
    stats = collections.Counter()
    for (model, profile, template), group in by_model.items():
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as tmp:
            for f in group:
                tmp.write(json.dumps({"request": f["request"], "response": f["response"], "options": {
                    "spaces_around_special_tokens": f["server"]["spaces_between_special_tokens"]}},
                    ensure_ascii=False) + "\n")
        cmd = [binary, "reconstruct", "--model", model, "--profile", profile, "--input", tmp.name]
        if template:
            assets = os.environ.get("DRAFTGEN_ASSETS", str(HERE.parents[3] / "shared" / "assets"))
            cmd += ["--chat-template", str(Path(assets) / template)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        os.unlink(tmp.name)
        lines = [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
        if len(lines) != len(group):
            print(f"{path.name} {model}: {len(lines)} outputs for {len(group)} inputs; stderr: {out.stderr[:500]}")
        for f, r in zip(group, lines):
            s = f["server"]
            shape = f"{s['kind']}-{s['version']} {'spaces' if s['spaces_between_special_tokens'] else 'nospaces'}" \
                    f"{' token_ids' if s['return_token_ids'] else ''}"
            got = r.get("completion_ids")
            ok = got == f["truth"]["completion_ids"]
            flagged = bool(r.get("warnings")) or (r.get("fidelity", {}).get("class") not in (None, "unique", "exact_by_server_ids"))
            stats[(shape, "exact" if ok else ("wrong_flagged" if flagged else "WRONG_UNFLAGGED"),
                   "determined" if f["expect"]["determined"] else "undetermined")] += 1
    for key in sorted(stats):
        print(path.name, *key, stats[key])
