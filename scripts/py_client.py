#!/usr/bin/env python3
"""Baseline for `draftgen generate`: an asyncio/aiohttp client written the way such data-generation
pipelines usually are — one aiohttp session, a semaphore, JSONL append, a few retries.

usage: py_client.py --base-url URL --prompts prompts.jsonl --out out.jsonl --concurrency N [--model M]
"""
import argparse
import asyncio
import json
import random
import time

import aiohttp


async def one(session, sem, url, model, prompt, out, max_tokens):
    body = {"model": model, "messages": prompt["messages"], "max_tokens": max_tokens}
    if prompt.get("tools"):
        body["tools"] = prompt["tools"]
    async with sem:
        for attempt in range(1, 7):
            started = time.time()
            try:
                async with session.post(url, json=body) as r:
                    data = await r.json(content_type=None)
                    status = r.status
            except (aiohttp.ClientError, asyncio.TimeoutError, json.JSONDecodeError) as e:
                status, data = None, {"error": str(e)}
            record = {"id": prompt["id"], "attempt": attempt, "status": status,
                      "request": body, "response": data, "started_at": started,
                      "latency_ms": int((time.time() - started) * 1000)}
            out.write(json.dumps(record) + "\n")
            if status == 200 and "error" not in data:
                return True
            if status is not None and status < 500 and status not in (408, 429):
                return False
            await asyncio.sleep(random.uniform(0, min(30, 0.5 * 2 ** attempt)))
    return False


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--model", default="moonshotai/kimi-k2.5")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    with open(args.prompts) as f:
        prompts = [json.loads(line) for line in f if line.strip()]
    sem = asyncio.Semaphore(args.concurrency)
    url = args.base_url.rstrip("/") + "/chat/completions"
    timeout = aiohttp.ClientTimeout(total=600)
    connector = aiohttp.TCPConnector(limit=0)
    t0 = time.time()
    with open(args.out, "a") as out:
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            results = await asyncio.gather(
                *(one(session, sem, url, args.model, p, out, args.max_tokens) for p in prompts))
    ok = sum(results)
    print(json.dumps({"prompts": len(prompts), "succeeded": ok, "wall_s": time.time() - t0}))


if __name__ == "__main__":
    asyncio.run(main())
