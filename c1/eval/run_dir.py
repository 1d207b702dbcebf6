"""The run directory (``--out``) of an eval: its config, its results, its reports.

- ``config.json``: what defines the results (dataset content hash, setting, k, budget, turns,
  model, embedder, seed ...). A second run into the same directory with another config is
  refused unless ``force`` (which moves the old results aside and starts afresh).
- ``results.jsonl``: one scored row per (system, question), appended as each question finishes;
  a restarted run skips the pairs already there, so an interrupted eval continues where it
  stopped. ``limit``, ``concurrency`` and the list of systems are not part of the config: raise
  the limit or add a system and only the missing pairs are computed.
- ``summary.json``, ``report.md``, ``plot.png``: written at the end (see :mod:`c1.eval.report`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from c1.config import Settings
from c1.errors import C1Error
from c1.eval.datasets import Dataset
from c1.eval.settings import EvalOptions

CONFIG_VERSION = 1


def config_key(ds: Dataset, options: EvalOptions, settings: Settings, embedder_name: str, model: str | None = None) -> dict:
    """What the results depend on (the list of systems, limit and concurrency are not part of it).

    ``model`` is the model the llm systems resolved to (None without llm systems).
    """
    from c1 import __version__

    return {
        "version": CONFIG_VERSION,
        "c1": __version__,
        "dataset": ds.name,
        "data": ds.fingerprint(),
        "setting": options.setting,
        "split": options.split,
        "k": settings.max_docs,
        "budget": settings.budget,
        "soft_threshold": settings.soft_threshold,
        "hard_cutoff": settings.hard_cutoff,
        "max_turns": settings.max_turns,
        "model": model,
        "temperature": settings.temperature,
        "reasoning_effort": settings.reasoning_effort,
        "seed": options.seed,
        "embedder": embedder_name,
        "chunk_tokens": settings.chunk_tokens,
        "chunk_overlap": settings.chunk_overlap,
    }


def default_run_dir(settings: Settings, key: dict) -> Path:
    h = hashlib.blake2b(json.dumps(key, sort_keys=True).encode(), digest_size=5).hexdigest()
    return settings.home / "eval" / "runs" / f"{key['dataset']}-{key['setting']}-{h}"


def prepare_run_dir(run_dir: Path, key: dict, force: bool, source: str) -> list[str]:
    """Create or check ``run_dir`` against ``key``; returns notes (what ``force`` moved aside)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir / "config.json"
    notes = []
    if cfg_path.is_file():
        try:
            old = json.loads(cfg_path.read_text()).get("key", {})
        except (OSError, ValueError):
            old = None
        if old != key:
            if not force:
                diff = _diff(old or {}, key)
                raise C1Error(f"{run_dir} holds a run with another config ({diff}): use another --out, "
                              "or --force to start it afresh")
            results = run_dir / "results.jsonl"
            if results.exists():
                aside = run_dir / f"results.replaced-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
                results.rename(aside)
                notes.append(f"--force: the earlier results (another config) were moved to {aside.name}")
    tmp = cfg_path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "source": source}, indent=1, ensure_ascii=False))
    os.replace(tmp, cfg_path)
    return notes


def _diff(old: dict, new: dict) -> str:
    parts = []
    for k in sorted(set(old) | set(new)):
        if old.get(k) != new.get(k):
            a, b = old.get(k), new.get(k)
            if k == "data":
                parts.append("dataset content differs")
            else:
                parts.append(f"{k}: {a!r} → {b!r}")
    return "; ".join(parts[:4]) + ("; …" if len(parts) > 4 else "") if parts else "unreadable config.json"


def load_rows(path: Path) -> list[dict]:
    """Rows of a results.jsonl; a line cut short by a crash is ignored (it is recomputed)."""
    rows = []
    if not path.is_file():
        return rows
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "system" in row and "qid" in row:
                rows.append(row)
    return rows


class RowWriter:
    def __init__(self, path: Path):
        if path.is_file() and path.stat().st_size:
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # a line cut short by a crash: start on a fresh line
                    with open(path, "a", encoding="utf-8") as g:
                        g.write("\n")
        self.f = open(path, "a", encoding="utf-8")

    def write(self, row: dict) -> None:
        self.f.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def write_reports(summary: dict, run_dir: Path, want_plot: bool, note: Callable[[str], None]) -> None:
    from c1.eval import report

    if want_plot:
        path = run_dir / "plot.png"
        why = report.plot(summary, path)
        if why:
            note(why)
        else:
            summary["plot"] = str(path)
    (run_dir / "report.md").write_text(report.markdown(summary), encoding="utf-8")
    tmp = run_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, run_dir / "summary.json")
