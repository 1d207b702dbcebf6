#!/usr/bin/env python3
"""Multi-hop retrieval on pooled corpora: the built-in policy against one hybrid search, side by side.

The shared HotpotQA (200 dev-distractor records, 1,971 paragraphs) and MuSiQue (99 answerable
dev records, 2- to 4-hop, 1,762 paragraphs) sets, each pooled into one corpus, every system
returning at most k documents. Retrieval and scoring are c1/eval's (``run_one``): the figures are
what ``c1 eval DATASET FILE --setting pooled --systems ...`` prints, plus:

- halves: the built-in policy's rules are tuned on one half of each set and checked on the other
  (HotpotQA: questions 1-100 tune, 101-200 held out; MuSiQue: even positions in the file tune,
  odd positions held out, so that both halves mix 2-, 3- and 4-hop questions);
- returned: documents returned per question (the relevance floor returns fewer than k);
- calibration: returned documents grouped by their confidence (≥ 0.8, 0.5-0.8, 0.2-0.5, < 0.2),
  with the share of them that are gold.

    python bench/multihop.py                                  # both sets; collections built once in bench/out/eval_home
    python bench/multihop.py --dataset musique --systems hybrid,builtin,builtin@4 --rows bench/out/mq_rows.jsonl
    python bench/multihop.py --dataset hotpotqa --budget 8192  # a smaller context budget (pruning study)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.textpool import shared_data  # noqa: E402

OUT = REPO / "bench" / "out"
FILES = {
    "hotpotqa": ("hotpotqa", "hotpotqa_dev_distractor_200.jsonl"),
    "musique": ("musique", "musique_ans_dev_99.jsonl"),
}
BANDS = ((0.8, 1.01, "≥ 0.8"), (0.5, 0.8, "0.5-0.8"), (0.2, 0.5, "0.2-0.5"), (0.0, 0.2, "< 0.2"))


def tuning_half(dataset: str, position: int) -> bool:
    """Whether the question at ``position`` (0-based, file order) is in the tuning half."""
    return position < 100 if dataset == "hotpotqa" else position % 2 == 0


def open_pool(dataset: str, home: Path, **flags):
    """(dataset, settings, corpus) with the pooled collection built in ``home`` if missing."""
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings
    from c1.store.embedders import MiniLMEmbedder
    from c1.eval.datasets import corpus_fingerprint, load_dataset
    from c1.eval.collection import collection_name, ensure_collection

    folder, name = FILES[dataset]
    ds = load_dataset(dataset, shared_data() / folder / name)
    settings = load_settings().with_flags(home=str(home), **flags)
    embedder = MiniLMEmbedder()
    coll = collection_name(ds.name, corpus_fingerprint(ds.passages, []), settings, embedder.name, False)
    settings, built = ensure_collection(settings, embedder, coll, ds.passages)
    if built:
        print(f"indexed {dataset} into {settings.collection_dir}", file=sys.stderr)
    return ds, settings, Corpus(settings, embedder)


def run(dataset: str, home: Path, systems: list[str], k: int, limit: int | None, options: dict | None = None,
        **flags) -> list[dict]:
    from c1.eval.scoring import run_one
    from c1.eval.systems import parse_systems

    ds, settings, corpus = open_pool(dataset, home, max_docs=k, **flags)
    questions = ds.questions[:limit] if limit else ds.questions
    rows = []
    options = options or {}
    try:
        for system in parse_systems(",".join(systems)):
            choice = policy_choice(settings, system, options)
            run_one(corpus, settings, questions[0], system, choice, ds.gold_kind)  # warm up
            for i, q in enumerate(questions):
                corpus.clear_query_cache()
                row = run_one(corpus, settings, q, system, choice, ds.gold_kind)
                row["position"] = i
                row["tune"] = tuning_half(dataset, i)
                rows.append(row)
            print(f"  {dataset} {system.label}: done", file=sys.stderr)
    finally:
        corpus.close()
    return rows


def policy_choice(settings, system, options: dict | None):
    """The system's policy (None for a baseline); the built-in one with ``options`` (BuiltinPolicy fields)."""
    from c1.agent.policies import choose_policy
    from c1.agent.policies.choice import PolicyChoice

    if system.kind != "agent":
        return None
    choice = choose_policy(dataclasses.replace(settings, policy=system.policy, parallel=system.parallel))
    if choice.name != "builtin" or not options:
        return choice
    from c1.agent.policies.builtin import BuiltinPolicy

    k = settings.max_docs
    return PolicyChoice("builtin", lambda i: BuiltinPolicy.for_budget(settings.budget, max_docs=k, variant=i, **options), f"built-in policy with {options}")


def parse_options(pairs: list[str]) -> dict:
    """``["prune_below=0.01"]`` → ``{"prune_below": 0.01}`` (values read as JSON)."""
    return {p.split("=", 1)[0]: json.loads(p.split("=", 1)[1]) for p in pairs}


def summarise(rows: list[dict]) -> dict:
    from c1.eval.report import aggregate

    out = aggregate(rows)
    out["returned"] = statistics.fmean(len(r["documents"]) for r in rows) if rows else 0.0
    agents = [r["cost"] for r in rows if r["cost"].get("turns") is not None]
    out["pruning_runs"] = statistics.fmean(bool(c.get("pruned")) for c in agents) if agents else None
    out["pruned"] = statistics.fmean(c.get("pruned", 0) for c in agents) if agents else None
    out["context_peak"] = statistics.fmean(c.get("context_peak", 0) for c in agents) if agents else None
    out["calibration"] = calibration(rows)
    return out


def calibration(rows: list[dict]) -> list[dict]:
    """Per confidence band: returned documents in it and the share of them that are gold."""
    from c1.eval.metrics import calibration_bands

    return calibration_bands([(d.get("score"), bool(d.get("gold"))) for r in rows for d in r["documents"]], BANDS)


def print_table(title: str, results: dict[str, dict]) -> None:
    cols = (("answer_found", "found"), ("recall", "recall"), ("full_recall", "full rec."), ("precision", "prec."),
            ("f1", "F1"), ("returned", "returned"), ("latency_p50", "p50 s"), ("latency_p95", "p95 s"))
    print(f"\n{title}")
    print(f"{'system':<12}" + "".join(f"{h:>10}" for _, h in cols))
    for name, s in results.items():
        print(f"{name:<12}" + "".join(f"{(s.get(c) or 0):>10.3f}" for c, _ in cols))


def print_costs(title: str, results: dict[str, dict]) -> None:
    agents = {n: s for n, s in results.items() if s.get("pruned") is not None}
    if agents:
        print(f"\n{title}: questions whose run pruned, chunks pruned, context peak (tokens), turns")
        for name, s in agents.items():
            print(f"{name:<12}{s['pruning_runs']:>10.3f}{s['pruned']:>10.1f}{s['context_peak']:>10.0f}{s['turns'] or 0:>8.2f}")


def print_calibration(title: str, results: dict[str, dict]) -> None:
    print(f"\n{title}: share of returned documents that are gold, per confidence band (documents in the band)")
    print(f"{'system':<12}" + "".join(f"{label:>16}" for _, _, label in BANDS))
    for name, s in results.items():
        cells = []
        for band in s["calibration"]:
            cells.append(f"{band['gold_share']:.2f} ({band['documents']})" if band["documents"] else "-")
        print(f"{name:<12}" + "".join(f"{c:>16}" for c in cells))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="both", choices=("both", *FILES))
    ap.add_argument("--home", type=Path, default=OUT / "eval_home", help="C1_HOME of the pooled collections")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--systems", default="hybrid,builtin")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--budget", type=int, default=0, help="context budget of the agent runs (default: c1's)")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="a BuiltinPolicy field for the builtin systems (e.g. prune_below=0.01), repeatable")
    ap.add_argument("--rows", type=Path, help="per-question rows (JSONL) here")
    ap.add_argument("--json-out", type=Path, default=OUT / "multihop.jsonl")
    args = ap.parse_args(argv)

    flags = {"budget": args.budget} if args.budget else {}
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    datasets = list(FILES) if args.dataset == "both" else [args.dataset]
    options = parse_options(args.option)
    report = {"bench": "multihop", "k": args.k, "budget": args.budget or None, "options": options,
              "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "datasets": {}}
    all_rows = []
    for dataset in datasets:
        rows = run(dataset, args.home, systems, args.k, args.limit or None, options, **flags)
        all_rows += [{"dataset": dataset, **r} for r in rows]
        labels = list(dict.fromkeys(r["system"] for r in rows))
        report["datasets"][dataset] = {}
        for part, keep in (("all", lambda r: True), ("tune", lambda r: r["tune"]), ("held-out", lambda r: not r["tune"])):
            res = {s: summarise([r for r in rows if r["system"] == s and keep(r)]) for s in labels}
            n = next(iter(res.values()))["n"]
            print_table(f"{dataset} pooled, {part}: {n} questions, k = {args.k}", res)
            report["datasets"][dataset][part] = res
        print_costs(f"{dataset}, all questions", report["datasets"][dataset]["all"])
        print_calibration(f"{dataset}, all questions", report["datasets"][dataset]["all"])
    from bench.report import save

    save(report, args.json_out, all_rows, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
