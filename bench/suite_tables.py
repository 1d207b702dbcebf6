"""The development suite's tables (bench/suite.py): figures, their bootstrap intervals, differences.

Every figure (found, full, rank 1 of a kind and system) gets a 95 % percentile bootstrap interval
over its questions; every difference between two systems of the run, between a kind and its
lower-cased form, and between this run and a saved one (``--vs``) gets a paired interval (the same
resampled questions for both sides, paired by question id). A difference whose interval excludes 0 is
marked ``*``. The statistics are c1/eval/stats.py's.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from c1.eval import stats

BANDS = ((0.8, 1.01, "≥ 0.8"), (0.5, 0.8, "0.5-0.8"), (0.2, 0.5, "0.2-0.5"), (0.05, 0.2, "0.05-0.2"), (0.0, 0.05, "< 0.05"))
METRICS = ("found", "full", "rank1")


def ece(pairs: list[tuple[float, bool]], bins: int = 10) -> float | None:
    """Expected calibration error of (confidence, gold) pairs over ``bins`` equal-width bands."""
    if not pairs:
        return None
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [(s, g) for s, g in pairs if lo <= s < hi or (b == bins - 1 and s == 1.0)]
        if inside:
            total += len(inside) * abs(statistics.fmean(s for s, _ in inside) - statistics.fmean(g for _, g in inside))
    return total / len(pairs)


def summarise(rows: list[dict]) -> dict:
    n = len(rows)
    out = {"n": n, "seconds": statistics.median(r["seconds"] for r in rows),
           "returned": statistics.fmean(len(r["returned"]) for r in rows),
           "top_score": statistics.fmean((r["scores"][0] or 0.0) if r["scores"] else 0.0 for r in rows)}
    for m in METRICS:
        values = [float(r[m]) for r in rows]
        out[m] = statistics.fmean(values)
        out[f"{m}_ci"] = list(stats.interval(values))
    return out


def calibration(rows: list[dict]) -> dict:
    pairs = [(s, g) for r in rows for s, g in zip(r["scores"], r["gold_flags"]) if s is not None]
    bands = []
    for lo, hi, label in BANDS:
        inside = [g for s, g in pairs if lo <= s < hi]
        bands.append({"band": label, "documents": len(inside), "gold_share": statistics.fmean(inside) if inside else None})
    top = [(r["scores"][0], r["gold_flags"][0]) for r in rows if r["scores"] and r["scores"][0] is not None]
    return {"ece": ece(pairs), "ece_top": ece(top), "bands": bands, "documents": len(pairs)}


def _by(rows: list[dict]) -> dict[tuple[str, str], dict[str, dict]]:
    """(kind, system) → question id → row."""
    out: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        out.setdefault((r["kind"], r["system"]), {})[r["qid"]] = r
    return out


def _ci(lo: float, hi: float) -> str:
    return f"[{lo:.2f}, {hi:.2f}]"


def difference(a: dict[str, dict], b: dict[str, dict]) -> dict:
    """The paired differences a − b on the questions both hold: n and, per metric, [diff, lo, hi]."""
    out: dict = {}
    for m in METRICS:
        ids, x, y = stats.pair({q: float(r[m]) for q, r in a.items()}, {q: float(r[m]) for q, r in b.items()})
        out["n"] = len(ids)
        out[m] = list(stats.paired_interval(x, y)) if ids else None
    return out


def _diff_cell(d: list | None) -> str:
    if d is None:
        return "-"
    diff, lo, hi = d
    return f"{diff:+.3f} [{lo:+.2f}, {hi:+.2f}]" + (" *" if stats.excludes_zero(lo, hi) else "")


def main_table(rows: list[dict], systems: list[str], summary: dict) -> list[str]:
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    lines = ["| kind | n | " + " | ".join(f"{s} found / full / rank 1 / s" for s in systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    for kind in kinds:
        cells, n = [], 0
        summary[kind] = {}
        for s in systems:
            mine = [r for r in rows if r["kind"] == kind and r["system"] == s]
            if not mine:
                cells.append("-")
                continue
            m = summarise(mine)
            n = m["n"]
            summary[kind][s] = m
            if kind.endswith("-none"):  # nothing supports these: what is returned, at what confidence
                cells.append(f"{m['returned']:.2f} returned, first at {m['top_score']:.3f} / {m['seconds']:.2f}")
                continue
            cells.append(f"{m['found']:.3f} / {m['full']:.3f} / {m['rank1']:.3f} / {m['seconds']:.2f}")
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    return lines


def interval_table(summary: dict, systems: list[str]) -> list[str]:
    lines = ["95 % intervals (percentile bootstrap over questions, "
             f"{stats.RESAMPLES} resamples, seed {stats.SEED})", "",
             "| kind | n | " + " | ".join(f"{s} found / full / rank 1" for s in systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    for kind, per in summary.items():
        if kind.endswith("-none") or not any(s in per for s in systems):
            continue
        cells = [" / ".join(_ci(*per[s][f"{m}_ci"]) for m in METRICS) if s in per else "-" for s in systems]
        n = next(per[s]["n"] for s in systems if s in per)
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    return lines


def comparisons(rows: list[dict], systems: list[str]) -> list[tuple[str, str, dict]]:
    """(kind, what, difference) for every later system − earlier system of the run, and for every
    lower-cased kind − its kind as typed (per system)."""
    by = _by(rows)
    kinds = list(dict.fromkeys(r["kind"] for r in rows if not r["kind"].endswith("-none")))
    out = []
    for kind in kinds:
        for j, b in enumerate(systems):
            for a in systems[:j]:
                if (kind, a) in by and (kind, b) in by:
                    out.append((kind, f"{b} − {a}", difference(by[(kind, b)], by[(kind, a)])))
    for kind in kinds:
        if kind.endswith("-lc") and kind[:-3] in kinds:
            for s in systems:
                if (kind, s) in by and (kind[:-3], s) in by:
                    out.append((kind[:-3], f"{s}: lower-cased − typed", difference(by[(kind, s)], by[(kind[:-3], s)])))
    return out


def against(rows: list[dict], saved: list[dict], label: str) -> list[tuple[str, str, dict]]:
    """(kind, what, difference) of this run − the saved run, per kind and system both hold."""
    mine, theirs = _by(rows), _by(saved)
    return [(kind, f"{system}: this − {label}", difference(mine[(kind, system)], theirs[(kind, system)]))
            for kind, system in mine if (kind, system) in theirs and not kind.endswith("-none")]


def difference_table(title: str, diffs: list[tuple[str, str, dict]]) -> list[str]:
    if not diffs:
        return []
    lines = [title, "", "| kind | n | difference | found | full | rank 1 |", "|---|---|---|---|---|---|"]
    for kind, what, d in diffs:
        lines.append(f"| {kind} | {d['n']} | {what} | " + " | ".join(_diff_cell(d[m]) for m in METRICS) + " |")
    return lines


def calibration_table(rows: list[dict], summary: dict) -> list[str]:
    if not any(r["system"] == "builtin" for r in rows):
        return []
    lines = ["calibration of the built-in policy (one run): ECE over all returned documents, ECE of the first "
             "document, gold share (documents) per confidence band", "",
             "| kind | ECE | ECE rank 1 | " + " | ".join(label for _, _, label in BANDS) + " |",
             "|---|---|---|" + "---|" * len(BANDS)]
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [r for r in rows if r["kind"] == kind and r["system"] == "builtin"]
        if not mine:
            continue
        c = calibration(mine)
        summary[kind]["calibration"] = c
        cells = [f"{b['gold_share']:.2f} ({b['documents']})" if b["documents"] else "-" for b in c["bands"]]
        lines.append(f"| {kind} | {c['ece']:.3f} | {c['ece_top']:.3f} | " + " | ".join(cells) + " |")
    return lines


def cost_table(rows: list[dict]) -> list[str]:
    """Per kind and agent system: means per question of the runs' turns, tool calls, pruned chunks and
    tokens, the replies cut at half the room and asked again, and how the runs ended (their stop
    reasons, counted)."""
    by = _by([r for r in rows if "cost" in r])
    if not by:
        return []
    out = ["what the agent runs cost (means per question) and how they ended", "",
           "| kind | system | n | turns | tool calls | pruned | prompt tokens | completion tokens | cut retries | stop reasons |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for (kind, system), qs in by.items():
        n = len(qs)
        mean = {c: sum(r["cost"].get(c) or 0 for r in qs.values()) / n for c in ("turns", "tool_calls", "pruned",
                                                                                 "prompt_tokens", "completion_tokens", "cut_retries")}
        stops: dict[str, int] = {}
        for r in qs.values():
            for reason in r.get("stop") or []:
                stops[reason] = stops.get(reason, 0) + 1
        ended = ", ".join(f"{k} {v}" for k, v in sorted(stops.items(), key=lambda kv: -kv[1]))
        out.append(f"| {kind} | {system} | {n} | {mean['turns']:.1f} | {mean['tool_calls']:.1f} | {mean['pruned']:.1f} | "
                   f"{mean['prompt_tokens']:.0f} | {mean['completion_tokens']:.0f} | {mean['cut_retries']:.1f} | {ended} |")
    return out


def tables(rows: list[dict], systems: list[str], saved: tuple[str, list[dict]] | None = None) -> tuple[str, dict]:
    """The printed tables and the summary (per kind and system; ``differences``: every paired one)."""
    summary: dict = {}
    sections = [main_table(rows, systems, summary), interval_table(summary, systems)]
    diffs = comparisons(rows, systems)
    sections.append(difference_table("paired differences, this run (95 % paired bootstrap; * = the interval "
                                     "excludes 0)", diffs))
    if saved is not None:
        vs = against(rows, saved[1], saved[0])
        sections.append(difference_table(f"paired differences against the saved run {saved[0]!r} (the questions "
                                         "both hold; * = the interval excludes 0)", vs)
                        or [f"(the saved run {saved[0]!r} holds none of this run's kinds and systems)"])
        diffs += vs
    sections.append(calibration_table(rows, summary))
    sections.append(cost_table(rows))
    summary["differences"] = [{"kind": k, "what": w, **d} for k, w, d in diffs]
    return "\n\n".join("\n".join(lines) for lines in sections if lines), summary


# --- saved runs ------------------------------------------------------------------------------


def run_path(runs: Path, label: str) -> Path:
    return runs / f"{label or 'last'}.jsonl"


def load_run(runs: Path, label: str) -> list[dict]:
    """The rows of a saved run: ``label`` under ``runs`` (what ``--label`` saved), or a rows file's path.
    Raises ValueError with a one-line reason."""
    path = Path(label)
    if not path.is_file():
        path = run_path(runs, label)
    if not path.is_file():
        known = sorted(p.stem for p in runs.glob("*.jsonl")) if runs.is_dir() else []
        raise ValueError(f"no saved run {label!r} (saved: {', '.join(known) or 'none'}; or give a --rows file)")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                r = json.loads(line)
            except ValueError:
                raise ValueError(f"{path}, line {n}: not JSON") from None
            if not isinstance(r, dict) or not {"kind", "system", "qid", *METRICS} <= set(r):
                raise ValueError(f"{path}, line {n}: not a suite row (kind, system, qid, found, full, rank1)")
            rows.append(r)
    return rows
