"""Aggregation and presentation of an eval run: averages, percentiles, tables, Markdown, plot, compare.

The per-question rows come from :mod:`c1.eval.scoring`; each holds ``metrics`` (answer_found,
recall, precision, f1, full_recall, trajectory_recall, prune_accuracy) and ``cost`` (turns,
tool_calls, prompt_tokens, completion_tokens, seconds). Fields that do not apply are ``None``
(turns of a single-shot baseline, prune accuracy of a run that pruned nothing) and are left out
of the averages rather than counted as zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

# (key, column title, kind): kind is "rate" (higher is better, 0..1), "cost" (lower is better), "count"
METRICS: tuple[tuple[str, str, str], ...] = (
    ("answer_found", "found", "rate"),
    ("recall", "recall", "rate"),
    ("precision", "prec.", "rate"),
    ("f1", "F1", "rate"),
    ("full_recall", "full rec.", "rate"),
    ("trajectory_recall", "traj. rec.", "rate"),
    ("prune_accuracy", "prune acc.", "rate"),
    ("turns", "turns", "cost"),
    ("tool_calls_per_turn", "calls/turn", "count"),
    ("prompt_tokens", "prompt tok", "cost"),
    ("completion_tokens", "compl. tok", "cost"),
    ("latency_p50", "p50 s", "cost"),
    ("latency_p95", "p95 s", "cost"),
)
QUALITY = ("answer_found", "recall", "precision", "f1", "full_recall", "trajectory_recall")


# --- aggregation (pure) ------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0–100) with linear interpolation between closest ranks (numpy's
    default); None for no values."""
    vals = sorted(float(v) for v in values)
    if not vals:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    pos = (len(vals) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def mean_of(values: Iterable[float | bool | None]) -> float | None:
    """Mean of the values that are not None (booleans count 1/0); None when there are none."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def calls_per_turn(tool_calls: int | None, turns: int | None) -> float | None:
    """Tool calls per turn of one question; None without turns (single-shot baselines)."""
    if not turns or tool_calls is None:
        return None
    return tool_calls / turns


def aggregate(rows: list[dict]) -> dict:
    """Per-system averages over per-question rows.

    Quality metrics are means over questions (booleans become rates); prune accuracy is averaged
    over the questions that pruned something; tool calls per turn is the mean of the per-question
    ratios; tokens are means per question; latency is p50/p95/mean of per-question seconds.
    """
    out: dict = {"n": len(rows)}
    for key in QUALITY + ("prune_accuracy",):
        out[key] = mean_of(r["metrics"].get(key) for r in rows)
    costs = [r["cost"] for r in rows]
    out["turns"] = mean_of(c.get("turns") for c in costs)
    out["tool_calls_per_turn"] = mean_of(calls_per_turn(c.get("tool_calls"), c.get("turns")) for c in costs)
    out["prompt_tokens"] = mean_of(c.get("prompt_tokens") for c in costs)
    out["completion_tokens"] = mean_of(c.get("completion_tokens") for c in costs)
    seconds = [c["seconds"] for c in costs if c.get("seconds") is not None]
    out["latency_p50"] = percentile(seconds, 50)
    out["latency_p95"] = percentile(seconds, 95)
    out["latency_mean"] = mean_of(seconds)
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in out.items()}


# --- formatting --------------------------------------------------------------------------------


def fmt(key: str, value) -> str:
    if value is None:
        return "–"
    kind = dict((k, kind) for k, _, kind in METRICS).get(key)
    if key.startswith("latency"):
        return f"{value:.2f}"
    if key.endswith("tokens"):
        return f"{value:,.0f}"
    if kind == "rate":
        return f"{value:.3f}"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _fmt_delta(key: str, delta) -> str:
    if delta is None:
        return "–"
    text = fmt(key, abs(delta))
    return ("+" if delta > 0 else "−" if delta < 0 else "±") + text


QUALITY_COLUMNS = ("answer_found", "recall", "precision", "f1", "full_recall", "trajectory_recall", "prune_accuracy")
COST_COLUMNS = ("turns", "tool_calls_per_turn", "prompt_tokens", "completion_tokens", "latency_p50", "latency_p95")


def summary_tables(summary: dict) -> list:
    """Two rich tables of every system in the run (quality, then cost), narrow enough for 80 columns."""
    from rich import box
    from rich.table import Table

    s = summary
    labels = {k: label for k, label, _ in METRICS}
    title = f"{s['dataset']} ({s['setting']}, k={s['k']}, {s['questions']} questions)"
    tables = []
    for heading, keys in ((f"{title}: quality", QUALITY_COLUMNS), ("cost (per question)", COST_COLUMNS)):
        table = Table(title=heading, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("system", style="bold", no_wrap=True)
        if keys is QUALITY_COLUMNS:
            table.add_column("n", justify="right")
        for key in keys:
            table.add_column(labels[key], justify="right")
        for system in s["systems"]:
            first = [system["system"]] + ([str(system["n"])] if keys is QUALITY_COLUMNS else [])
            table.add_row(*first, *(fmt(k, system.get(k)) for k in keys))
        tables.append(table)
    return tables


def markdown(summary: dict) -> str:
    """The run's report.md: what was run, the table, and notes."""
    s = summary
    lines = [
        f"# c1 eval: {s['dataset']}",
        "",
        f"- data: `{s['path']}` ({s['setting']}, {s['questions']} questions"
        + (f", seed {s['config'].get('seed')}" if s["config"].get("seed") is not None else "") + ")",
        f"- corpus: {s['corpus']}",
        f"- k = {s['k']}; budget {s['config'].get('budget')} tokens; max turns {s['config'].get('max_turns')}",
        f"- embedder: {s['config'].get('embedder')}",
    ]
    for system in s["systems"]:
        if system.get("note"):
            lines.append(f"- {system['system']}: {system['note']}")
    for note in s.get("notes", []):
        lines.append(f"- note: {note}")
    lines += ["", "| system | n | " + " | ".join(label for _, label, _ in METRICS) + " |",
              "|---|---:|" + "---:|" * len(METRICS)]
    for system in s["systems"]:
        cells = [fmt(k, system.get(k)) for k, _, _ in METRICS]
        lines.append(f"| {system['system']} | {system['n']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "found: a returned document contains the answer string (a yes/no answer: every gold document returned; "
        "a set without answer strings: a gold document returned). recall/prec./F1: returned documents against "
        "the gold set; full rec.: every gold document returned; traj. rec.: gold documents seen at any point "
        "of the search, even if pruned later; prune acc.: share of pruned chunks that were not gold "
        "(over questions that pruned). Tokens are per question; p50/p95: per-question latency in seconds.",
    ]
    if s.get("plot"):
        lines += ["", f"![quality against latency]({Path(s['plot']).name})"]
    return "\n".join(lines) + "\n"


def plot(summary: dict, path: Path) -> str | None:
    """Write a PNG of F1 and full recall against p50 latency for every system.

    Returns None when written, else a one-line reason (matplotlib is not installed).
    """
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install 'c1[eval]'): no plot"
    systems = [s for s in summary["systems"] if s.get("latency_p50") is not None]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharex=True)
    for ax, key, label in ((axes[0], "f1", "F1"), (axes[1], "full_recall", "full recall")):
        for s in systems:
            x, y = max(s["latency_p50"], 1e-4), s.get(key) or 0.0
            ax.scatter([x], [y], s=40)
            ax.annotate(s["system"], (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("latency p50 per question (s, log)")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"{label} vs latency")
    fig.suptitle(f"c1 eval: {summary['dataset']} ({summary['setting']}, k={summary['k']}, "
                 f"{summary['questions']} questions)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)
    return None


# --- compare -----------------------------------------------------------------------------------


def compare(a: dict, b: dict) -> dict:
    """Two run summaries side by side: per system (matched by label) and metric, A, B and B − A."""
    by_a = {s["system"]: s for s in a["systems"]}
    by_b = {s["system"]: s for s in b["systems"]}
    names = list(by_a) + [n for n in by_b if n not in by_a]
    systems = []
    for name in names:
        sa, sb = by_a.get(name, {}), by_b.get(name, {})
        metrics = {}
        for key, _, _ in (("n", "n", "count"),) + METRICS:
            va, vb = sa.get(key), sb.get(key)
            delta = vb - va if isinstance(va, (int, float)) and isinstance(vb, (int, float)) else None
            metrics[key] = {"a": va, "b": vb, "delta": None if delta is None else round(delta, 6)}
        systems.append({"system": name, "in": "both" if sa and sb else "a" if sa else "b", "metrics": metrics})
    return {
        "a": {"dataset": a.get("dataset"), "setting": a.get("setting"), "questions": a.get("questions"), "run_dir": a.get("run_dir")},
        "b": {"dataset": b.get("dataset"), "setting": b.get("setting"), "questions": b.get("questions"), "run_dir": b.get("run_dir")},
        "systems": systems,
    }


def compare_table(cmp: dict, a_name: str = "A", b_name: str = "B"):
    """One rich table: a row per (system, metric) with A, B and the difference, coloured by
    whether it is better (green) or worse (red)."""
    from rich.table import Table

    kinds = {k: kind for k, _, kind in METRICS}
    labels = {k: label for k, label, _ in METRICS}
    from rich.markup import escape

    table = Table(title=escape(f"{a_name}  vs  {b_name}"), title_justify="left", header_style="bold")
    for col, justify in (("system", "left"), ("metric", "left"), ("A", "right"), ("B", "right"), ("B − A", "right")):
        table.add_column(col, justify=justify)
    for i, system in enumerate(cmp["systems"]):
        first = True
        shown = [(key, m) for key, m in system["metrics"].items() if m["a"] is not None or m["b"] is not None]
        for j, (key, m) in enumerate(shown):
            delta = m["delta"]
            style = ""
            if delta and kinds.get(key) in ("rate", "cost"):
                better = delta > 0 if kinds[key] == "rate" else delta < 0
                style = "green" if better else "red"
            table.add_row(
                system["system"] if first else "", labels.get(key, key), fmt(key, m["a"]), fmt(key, m["b"]),
                f"[{style}]{_fmt_delta(key, delta)}[/]" if style else _fmt_delta(key, delta),
                end_section=j == len(shown) - 1 and i < len(cmp["systems"]) - 1,
            )
            first = False
    return table
