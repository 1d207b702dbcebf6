"""The ``llm`` policy on a real model, beside the built-in policy, on shared HotpotQA questions.

Starts the llama.cpp server that ``scripts/llm_server.sh`` prepares (Qwen2.5-Coder-1.5B-Instruct
Q4_K_M, CPU) on a free loopback port, runs ``c1 eval hotpotqa`` once with ``--systems
builtin,llm`` (the same questions, the same pooled index, the same budget and turn limit for
both), stops the server, and prints one table per system and a JSON summary:

- answer found, full recall, recall (the eval's own metrics),
- turns, tool calls, calls per turn, prompt tokens, the context's token count error (c1's count
  against the server's ``usage.prompt_tokens``), seconds — means per question,
- where the harness broke: stop reasons (``answer``, ``unparsed_answer`` — the answer named no
  document it was shown, ``truncated`` — cut by the reply cap, ``budget``, ``max_turns``, ``error``),
  tool errors (malformed calls: bad JSON, unknown tools, bad arguments) and repeated calls (the
  same call word for word, a loop).

Not a quality claim for c1 (a 1.5B coder model is not Context-1): it shows that the harness drives
a real model end to end, and where it breaks. Slow on CPU (~10 tokens/s generated, ~60 prompt
tokens/s on 2 cores): size it with ``--questions`` and ``--budget``.

    nice -n 10 python bench/llm_eval.py --questions 8 --budget 4096 --max-turns 4
    nice -n 10 python bench/llm_eval.py --kinds legal,scifact --questions 30     # the suite's kinds (issue 31)

Figures and the command that made them: docs/llm-eval.md. The JSON summary also goes to
``bench/out/llm_eval.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "llm_server.sh"
DEFAULT_DATA = Path(os.environ.get("C1_SHARED_DATA", "/work/shared/data")) / "hotpotqa" / "hotpotqa_dev_distractor_200.jsonl"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(n_ctx: int, threads: int, log: Path) -> tuple[subprocess.Popen, str, str]:
    prep = subprocess.run(["bash", str(SCRIPT), "--cached-only"], capture_output=True, text=True)
    if prep.returncode != 0:
        sys.exit(f"llm_eval: the model is not prepared (run scripts/llm_server.sh once): {prep.stderr.strip()[-300:]}")
    port = free_port()
    out = open(log, "wb")
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), "--cached-only", "--serve", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
         "--n_threads", str(threads), "--n_threads_batch", str(threads)],
        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    import httpx

    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"llm_eval: the server exited ({proc.returncode}): {log.read_text(errors='replace')[-500:]}")
        try:
            resp = httpx.get(base + "/models", timeout=2)
            if resp.status_code == 200 and resp.json().get("data"):
                return proc, base, resp.json()["data"][0]["id"]
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    stop(proc)
    sys.exit("llm_eval: the server did not answer within 300 s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(15)


def summarize(rows: list[dict]) -> dict:
    """Per system: means per question and the ways runs ended."""
    out: dict[str, dict] = {}
    for system in dict.fromkeys(r["system"] for r in rows):
        rs = [r for r in rows if r["system"] == system]
        n = len(rs)

        def mean(values) -> float:
            values = [v for v in values if v is not None]
            return round(sum(values) / len(values), 3) if values else 0.0

        turns = sum(r["cost"].get("turns") or 0 for r in rs)
        calls = sum(r["cost"].get("tool_calls") or 0 for r in rs)
        stops: dict[str, int] = {}
        for r in rs:
            for s in r.get("stop_reasons") or []:
                stops[s] = stops.get(s, 0) + 1
        prompt = sum(r["cost"].get("prompt_tokens") or 0 for r in rs)
        counted = sum(r["cost"].get("counted_tokens") or 0 for r in rs)
        out[system] = {
            "questions": n,
            "answer_found": mean(float(r["metrics"]["answer_found"]) for r in rs),
            "full_recall": mean(float(r["metrics"]["full_recall"]) for r in rs),
            "recall": mean(r["metrics"]["recall"] for r in rs),
            "turns": mean(r["cost"].get("turns") for r in rs),
            "tool_calls": mean(r["cost"].get("tool_calls") for r in rs),
            "calls_per_turn": round(calls / turns, 3) if turns else 0.0,
            "prompt_tokens": mean(r["cost"].get("prompt_tokens") for r in rs),
            "count_error_pct": round(100 * sum(r["cost"].get("count_error") or 0 for r in rs) / prompt, 2) if prompt else None,
            "counted_vs_served": f"{counted}/{prompt}" if prompt else None,
            "seconds": mean(r["cost"].get("seconds") for r in rs),
            "stop_reasons": stops,
            "tool_errors": sum(r["cost"].get("errors") or 0 for r in rs),
            "repeated_calls": sum(r["cost"].get("repeated_calls") or 0 for r in rs),
            "no_document": sum(1 for r in rs if not r["returned"]),
        }
    return out


def _suite(args) -> int:
    """``--kinds``: bench/suite.py on those kinds, systems builtin and llm, through the server started here."""
    work = Path(tempfile.mkdtemp(prefix="c1-llm-suite-"))
    proc, base, model = start_server(args.n_ctx, args.threads, work / "llama-server.log")
    label = "llm-" + args.kinds.replace(",", "-")
    command = [sys.executable, str(REPO / "bench" / "suite.py"), "--kinds", args.kinds, "--systems", args.systems,
               "--limit", str(args.questions), "--no-lower", "--natural", args.natural, "--base-url", base, "--model", model,
               "--budget", str(args.budget), "--max-turns", str(args.max_turns), "--label", label]
    try:
        print("llm_eval: " + " ".join(command), file=sys.stderr, flush=True)
        res = subprocess.run(command, env={**os.environ, "C1_MODEL_TIMEOUT": str(args.timeout)})
    finally:
        stop(proc)
    print(f"llm_eval: rows in bench/out/suite-runs/{label}.jsonl", file=sys.stderr)
    return res.returncode


def _exit_on_term(signum, frame) -> None:
    raise SystemExit(128 + signum)  # the ``finally`` that stops the server runs (a plain SIGTERM skips it)


def main() -> int:
    signal.signal(signal.SIGTERM, _exit_on_term)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--budget", type=int, default=4096)
    ap.add_argument("--max-turns", type=int, default=4)
    ap.add_argument("--n-ctx", type=int, default=8192, help="llama.cpp's window (budget + the reply's room)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--systems", default="builtin,llm")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "llm_eval.json")
    ap.add_argument("--home", type=Path, default=Path.home() / ".cache" / "c1-bench" / "llm-eval-home",
                    help="C1_HOME of the run: the pooled index is built there once (minutes) and reused")
    ap.add_argument("--setting", default="pooled", help="pooled (all questions' paragraphs) or per-question")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per chat completion (C1_MODEL_TIMEOUT)")
    ap.add_argument("--kinds", default="", help="bench/suite.py's kinds instead of c1 eval hotpotqa: the same "
                    "questions through builtin and llm, with the suite's intervals and the runs' costs per kind")
    ap.add_argument("--natural", default="no", choices=("also", "only", "no"), help="with --kinds: as bench/suite.py's")
    args = ap.parse_args()
    if args.kinds:
        return _suite(args)
    if not args.data.exists():
        sys.exit(f"llm_eval: {args.data} not found (set C1_SHARED_DATA)")
    work = Path(tempfile.mkdtemp(prefix="c1-llm-eval-"))
    env = {**os.environ, "C1_HOME": str(args.home), "C1_MODEL_TIMEOUT": str(args.timeout),
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.perf_counter()
    proc, base, model = start_server(args.n_ctx, args.threads, work / "llama-server.log")
    command = [sys.executable, "-m", "c1", "eval", "hotpotqa", str(args.data), "--systems", args.systems,
               "--limit", str(args.questions), "--setting", args.setting, "--budget", str(args.budget), "--max-turns", str(args.max_turns),
               "--base-url", base, "--model", model, "--temperature", "0", "--seed", "0", "--out", str(work / "run"),
               "--no-plot", "--json"]
    try:
        print("llm_eval: " + " ".join(command), file=sys.stderr, flush=True)
        res = subprocess.run(command, env=env, capture_output=True, text=True)
    finally:
        stop(proc)
    if res.returncode != 0:
        sys.exit(f"llm_eval: c1 eval exited {res.returncode}: {res.stderr.strip()[-800:]}")
    rows = [json.loads(line) for line in (work / "run" / "results.jsonl").read_text().splitlines() if line.strip()]
    summary = {
        "model": model, "data": str(args.data), "questions": args.questions, "budget": args.budget,
        "max_turns": args.max_turns, "setting": args.setting, "n_ctx": args.n_ctx, "threads": args.threads,
        "wall_seconds": round(time.perf_counter() - started, 1), "systems": summarize(rows),
        "command": "nice -n 10 python bench/llm_eval.py " + " ".join(sys.argv[1:]),
        "rows": [{"system": r["system"], "qid": r["qid"], "answer_found": r["metrics"]["answer_found"],
                  "full_recall": r["metrics"]["full_recall"], "turns": r["cost"].get("turns"),
                  "tool_calls": r["cost"].get("tool_calls"), "errors": r["cost"].get("errors"),
                  "repeated_calls": r["cost"].get("repeated_calls"), "stop_reasons": r.get("stop_reasons"),
                  "seconds": r["cost"].get("seconds"), "last_replies": r.get("last_replies")} for r in rows],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    keys = ["answer_found", "full_recall", "recall", "turns", "tool_calls", "calls_per_turn", "prompt_tokens",
            "count_error_pct", "seconds", "tool_errors", "repeated_calls", "no_document"]
    systems = summary["systems"]
    print("| metric | " + " | ".join(systems) + " |")
    print("|---|" + "---|" * len(systems))
    for k in keys:
        print(f"| {k} | " + " | ".join(str(systems[s][k]) for s in systems) + " |")
    print("| stop reasons | " + " | ".join(json.dumps(systems[s]["stop_reasons"]) for s in systems) + " |")
    print(f"\n{args.questions} questions, wall {summary['wall_seconds']} s; summary: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
