"""``c1 train synth|collect|sft|rl``: the command bodies (the Typer wiring lives in c1/commands/train_group.py).

Nothing heavy is imported at module level: torch, transformers, trl and peft load inside
``run_sft`` / ``run_rl`` only, after a check that says how to install them.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from c1.config import Settings
from c1.terminal.console import emit_json, err, note, stderr_is_tty
from c1.errors import C1Error

if TYPE_CHECKING:
    from c1.commands.train_flags import CollectFlags, RlFlags, SftFlags, SynthFlags

TRAIN_EXTRA_HINT = ("install the training dependencies first: `pip install torch==2.13.0` (the CPU wheel; on a GPU "
                    "machine the CUDA build you want), then `pip install 'c1[train]'`")


def _need_train_deps(*extra: str) -> None:
    import importlib.util

    missing = [m for m in ("torch", "transformers", "peft", "trl", "datasets", "safetensors", *extra)
               if importlib.util.find_spec(m) is None]
    if missing:
        raise C1Error(f"missing {', '.join(missing)}: {TRAIN_EXTRA_HINT}")


def _out_file(path: Path, what: str) -> Path:
    path = Path(path)
    if path.exists() and path.is_dir():
        raise C1Error(f"{what} {path} is a folder: give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise C1Error(f"cannot create {path.parent}: {exc.strerror}") from None
    return path


def _read_tasks(path: Path, max_level: int | None = None) -> list[dict]:
    from c1.train.tasks import read_tasks

    if not Path(path).is_file():
        raise C1Error(f"task file {path} does not exist (write one with `c1 train synth`)")
    try:
        tasks = read_tasks(path)
    except ValueError as exc:
        raise C1Error(f"task file: {exc}") from None
    if max_level is not None:
        tasks = [t for t in tasks if t["level"] <= max_level]
    if not tasks:
        raise C1Error(f"task file {path} holds no task")
    return tasks


@contextmanager
def _bar(show: bool, label: str, total: int | None, fields: dict):
    """A rich progress bar on stderr with extra text fields; yields update(**kw)."""
    if not show:
        yield lambda **kw: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    cols = [TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn()]
    cols += [TextColumn(f"{{task.fields[{k}]}}") for k in fields]
    cols += [TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    with Progress(*cols, console=err(), transient=True) as bar:
        task = bar.add_task(label, total=total, **fields)
        yield lambda **kw: bar.update(task, **kw)


# --- synth ---------------------------------------------------------------------------------------
def run_synth(settings: Settings, flags: "SynthFlags", *, out: Path, json_out: bool, quiet: bool) -> int:
    from c1.retrieval.corpus import Corpus
    from c1.train.synth import Synth

    url = flags.teacher_url or (settings.base_urls[0] if settings.base_urls else None)
    if not url:
        raise C1Error("c1 train synth needs a teacher: --teacher-url http://host:port/v1 (any OpenAI-compatible server)")
    if flags.json_mode not in ("auto", "json_schema", "json_object", "text"):
        raise C1Error(f"--json-mode must be auto, json_schema, json_object or text, not {flags.json_mode!r}")
    if flags.levels < 1 or flags.items < 1 or flags.min_items < 1 or flags.seeds < 1:
        raise C1Error("--seeds, --levels, --items and --min-items must be at least 1")
    out = _out_file(out, "--out")
    cfg = flags.config()
    teacher = flags.teacher(url)
    corpus = Corpus(settings)
    show = not quiet and stderr_is_tty()
    try:
        with _bar(show, "synth", None, {"tasks": "0 tasks", "tok": "0 tokens"}) as update:
            def progress(p):
                u = p["usage"]
                update(total=p["seeds_total"], completed=p["seeds_run"], tasks=f"{p['tasks']} tasks",
                       tok=f"{u['prompt_tokens'] + u['completion_tokens']} tokens")

            report = Synth(corpus, teacher, out, cfg, settings.collection, progress).run()
    finally:
        corpus.close()
        teacher.close()
    data = report.to_json()
    if json_out:
        emit_json(data)
    if not quiet:
        u = data["usage"]
        err().print(
            f"synth: {report.seeds_run} seed(s) run ({report.seeds_done_before} done before), {report.seeds_kept} kept, "
            f"{report.tasks_written} task(s) written to {out} "
            f"(by level: {', '.join(f'{k}: {v}' for k, v in data['by_level'].items()) or 'none'}); "
            f"teacher {report.teacher_model}: {u['requests']} requests, {u['failures']} failed, "
            f"{u['prompt_tokens']} prompt + {u['completion_tokens']} completion tokens; {report.seconds:.1f}s",
            soft_wrap=True, markup=False)
        for reason, n in list(data["rejections"].items())[:5]:
            err().print(f"  rejected {n}×: {reason}", soft_wrap=True, markup=False)
    return 0


# --- collect -------------------------------------------------------------------------------------
def run_collect(settings: Settings, flags: CollectFlags, *, tasks: Path, out: Path, seed: int,
                json_out: bool, quiet: bool, tool_names: dict | None = None) -> int:
    from c1.retrieval.corpus import Corpus
    from c1.agent.policies import choose_policy
    from c1.agent.tools import ToolConfig
    from c1.train.collect import collect

    items = _read_tasks(tasks, flags.max_level)[: flags.limit or None]
    out = _out_file(out, "--out")
    choice = choose_policy(settings)
    if not quiet:
        note(f"c1: {choice.note}")
    cfg = flags.select()
    corpus = Corpus(settings)
    show = not quiet and stderr_is_tty()
    try:
        with _bar(show, "collect", len(items) * flags.runs, {"kept": "0 kept"}) as update:
            report = collect(corpus, settings, items, choice.factory, out, runs=flags.runs, cfg=cfg, seed=seed,
                             workers=flags.workers, tool_config=ToolConfig(names=tool_names or {}),
                             on_progress=lambda p: update(completed=p["runs"], kept=f"{p['kept']} kept"))
    finally:
        corpus.close()
    data = report.to_json()
    data["policy"] = choice.name
    if json_out:
        emit_json(data)
    if not quiet:
        err().print(f"collect: {report.runs} run(s) on {len(items) - report.tasks_done_before} task(s), kept "
                    f"{sum(report.kept.values())} {report.kept} to {out}; dropped {report.dropped}; means {report.means}",
                    soft_wrap=True, markup=False)
    return 0


# --- sft -----------------------------------------------------------------------------------------
def _load(model_path: Path, adapter: Path | None, renderer: str, reasoning_effort: str | None, start_date: str | None,
          device: str | None = None, gradient_checkpointing: bool = False, attn_implementation: str | None = None):
    from c1.train.model import load_adapter, load_model, load_tokenizer, model_type
    from c1.train.render import make_renderer

    if not Path(model_path).is_dir():
        raise C1Error(f"--model {model_path}: not a folder (a local Hugging Face checkpoint: config.json, weights, tokenizer)")
    try:
        tok = load_tokenizer(model_path)
        model = load_model(model_path, device, gradient_checkpointing, attn_implementation)
        if adapter:
            model = load_adapter(model, adapter, trainable=True)
        rend = make_renderer(tok, model_type(model), renderer, reasoning_effort, start_date)
    except (OSError, ValueError) as exc:
        raise C1Error(f"cannot load the model from {model_path}: {' '.join(str(exc).split())[:300]}") from None
    return tok, model, rend


def run_sft(flags: "SftFlags", *, trajectories: Path, model: Path, out: Path, adapter: Path | None, renderer: str,
            reasoning_effort: str | None, start_date: str | None, json_out: bool, quiet: bool) -> int:
    _need_train_deps()
    from c1.train.collect import read_trajectories
    from c1.train.sft import train_sft

    if not Path(trajectories).is_file():
        raise C1Error(f"trajectory file {trajectories} does not exist (write one with `c1 train collect`)")
    trajs = read_trajectories(trajectories)
    if not trajs:
        raise C1Error(f"{trajectories} holds no trajectory")
    tok, m, rend = _load(model, adapter, renderer, reasoning_effort, start_date, gradient_checkpointing=flags.gradient_checkpointing,
                         attn_implementation=flags.attn_implementation)
    cfg = flags.sft_settings()
    try:
        report = train_sft(m, tok, rend, trajs, out, cfg, quiet=quiet or not stderr_is_tty())
    except ValueError as exc:
        raise C1Error(str(exc)) from None
    if json_out:
        emit_json(report)
    if not quiet:
        s = report["samples"]
        err().print(f"sft: {s['samples']} sample(s) from {s['trajectories']} trajectories (dropped {s['dropped'] or 'none'}), "
                    f"{report['steps']} step(s), loss {report['train_loss']:.4f}, "
                    f"{report['seconds']:.1f}s; adapter: {report['adapter']}", soft_wrap=True, markup=False)
    return 0


# --- rl ------------------------------------------------------------------------------------------
def run_rl(settings: Settings, flags: "RlFlags", *, tasks: Path, model: Path, out: Path, adapter: Path | None,
           renderer: str, reasoning_effort: str | None, start_date: str | None, vllm_url: str | None,
           vllm_model: str | None, json_out: bool, quiet: bool, tool_names: dict | None = None) -> int:
    _need_train_deps()
    from c1.retrieval.corpus import Corpus
    from c1.agent.tools import ToolConfig
    from c1.train.model import add_lora
    from c1.train.policy import VLLMGenerator
    from c1.train.rl import RLTrainer

    if flags.group_size < 2:
        raise C1Error("--group-size must be at least 2 (advantages are relative to the group)")
    items = _read_tasks(tasks)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise C1Error(f"--out {out} is a file: give a folder")
    if out.exists() and any(out.iterdir()) and not flags.resume:
        raise C1Error(f"--out {out} is not empty: pass --resume to continue that run, or another folder")
    tok, m, rend = _load(model, adapter, renderer, reasoning_effort, start_date,
                         gradient_checkpointing=flags.gradient_checkpointing, attn_implementation=flags.attn_implementation)
    cfg = flags.rl_settings(vllm=bool(vllm_url))
    if adapter is None:
        m = add_lora(m, cfg.lora)
    gen = None
    if vllm_url:
        gen = VLLMGenerator(vllm_url, vllm_model or str(model))
    corpus = Corpus(settings)
    show = not quiet and stderr_is_tty()
    try:
        trainer = RLTrainer(m, rend, corpus, settings, items, out, cfg, generator=gen,
                            tool_config=ToolConfig(names=tool_names or {}))
        resumed = trainer.resume() if flags.resume else False
        if resumed and not quiet:
            err().print(f"rl: resumed at step {trainer.state.step} (epoch {trainer.state.epoch + 1})", markup=False)
        (out / "config.json").write_text(json.dumps({"model": str(model), "adapter": str(adapter) if adapter else None,
                                                     "renderer": rend.kind, "tasks": str(tasks), "settings": _jsonable(cfg)},
                                                    indent=1))
        with _bar(show, "rl", trainer.total_steps(), {"info": ""}) as update:
            update(completed=trainer.state.step)

            def on_step(mx):
                loss = "—" if mx["loss"] is None else f"{mx['loss']:+.4f}"
                update(completed=mx["step"], info=f"epoch {mx['epoch'] + 1} β={mx['beta']:.2f} reward {mx['reward_mean']:.3f} "
                                                 f"recall {mx['recall']:.2f} tied {mx['groups_tied']}/{mx['groups']} loss {loss}")
                if not show and not quiet:
                    err().print(f"rl step {mx['step']}: {json.dumps(mx)}", soft_wrap=True, markup=False)

            trainer.on_step = on_step
            last = trainer.train()
        final = trainer.save_final()
        trainer.save_checkpoint()
    finally:
        corpus.close()
    summary = {"out": str(out), "adapter": str(final), "steps": trainer.state.step, "last": last,
               "metrics": str(out / "metrics.jsonl")}
    if json_out:
        emit_json(summary)
    if not quiet:
        err().print(f"rl: {trainer.state.step} step(s); adapter: {final}; metrics: {out / 'metrics.jsonl'}", markup=False)
    return 0


def _jsonable(obj):
    from dataclasses import asdict, is_dataclass

    return json.loads(json.dumps(asdict(obj) if is_dataclass(obj) else obj, default=str))
