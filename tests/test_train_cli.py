"""``c1 train ...`` from the outside: nothing heavy at import, the real CLI (a subprocess for a real run,
the in-process runner for one-line errors, where a process adds nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from c1.cli import app
from conftest import c1_argv
from llm_server import HotpotIndex, hotpot_index  # noqa: F401  (fixture)
from test_train_synth import AlgoTeacher

from c1.train.tasks import read_tasks

HEAVY = ("torch", "transformers", "trl", "peft", "datasets", "accelerate")
MODULES = ("c1.cli", "c1.commands.train", "c1.train.tasks", "c1.train.verify", "c1.train.teacher", "c1.train.synth",
           "c1.train.reward", "c1.train.cispo", "c1.train.collect", "c1.train.render", "c1.train.policy",
           "c1.train.model", "c1.train.sft", "c1.train.rl")


def test_importing_the_training_code_loads_no_heavy_library():
    code = (f"import sys\nfor m in {MODULES!r}: __import__(m)\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def c1(*args, env=None, timeout=600):
    return subprocess.run(c1_argv(*args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def in_process(*args, env=None):
    """(exit code, stdout, stderr) of the CLI run in this process."""
    result = CliRunner().invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _one_line_error(r, *fragments):
    code, _out, err = r
    assert code == 2, (code, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for f in fragments:
        assert f.lower() in lines[0].lower(), lines[0]


def test_train_help_lists_the_four_steps():
    code, out, _ = in_process("train", "--help")
    assert code == 0
    for cmd in ("synth", "collect", "sft", "rl"):
        assert cmd in out


def test_synth_then_collect_through_the_cli(hotpot_index: HotpotIndex, tmp_path):  # noqa: F811
    server = AlgoTeacher("honest")
    tasks = tmp_path / "tasks.jsonl"
    try:
        r = c1("train", "synth", "--home", hotpot_index.home, "--out", tasks, "--teacher-url", server.base_url,
               "--seeds", 2, "--levels", 2, "--rpm", 600, "--json", env=hotpot_index.env)
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["tasks_written"] == len(read_tasks(tasks)) >= 2
    assert report["usage"]["requests"] >= 2 and report["teacher_model"] == "algo"
    out = tmp_path / "traj.jsonl"
    r = c1("train", "collect", "--home", hotpot_index.home, "--tasks", tasks, "--out", out, "--policy", "builtin",
           "--runs", 2, "--budget", 4000, "--max-turns", 6, "--json", env=hotpot_index.env)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["policy"] == "builtin" and rep["runs"] == 2 * report["tasks_written"]


def test_cli_errors_are_one_line(hotpot_index: HotpotIndex, tmp_path):  # noqa: F811
    env = hotpot_index.env
    _one_line_error(in_process("train", "collect", "--home", hotpot_index.home, "--tasks", tmp_path / "none.jsonl",
                               "--out", tmp_path / "o.jsonl", env=env), "does not exist")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    _one_line_error(in_process("train", "collect", "--home", hotpot_index.home, "--tasks", bad,
                               "--out", tmp_path / "o.jsonl", env=env), "bad.jsonl:1")
    _one_line_error(in_process("train", "synth", "--home", hotpot_index.home, "--out", tmp_path / "t.jsonl", env=env),
                    "--teacher-url")
    _one_line_error(in_process("train", "synth", "--home", hotpot_index.home, "--out", tmp_path / "t.jsonl",
                               "--teacher-url", "http://127.0.0.1:9/v1", env=env), "teacher")
    _one_line_error(in_process("train", "sft", "--trajectories", tmp_path / "none.jsonl", "--model", tmp_path,
                               "--out", tmp_path / "sft"), "does not exist")
