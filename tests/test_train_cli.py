"""``c1 train ...`` from the outside: nothing heavy at import, the real CLI (a subprocess for a real run,
the in-process runner for one-line errors, where a process adds nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import c1_argv, invoke_cli
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


def test_train_help_lists_the_four_steps():
    code, out, _ = invoke_cli("train", "--help")
    assert code == 0
    for cmd in ("synth", "collect", "sft", "rl"):
        assert cmd in out


@pytest.mark.slow
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
    env, home = hotpot_index.env, hotpot_index.home
    invoke_cli("train", "collect", "--home", home, "--tasks", tmp_path / "none.jsonl", "--out", tmp_path / "o.jsonl",
               env=env).assert_one_line_error(2, "does not exist")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    invoke_cli("train", "collect", "--home", home, "--tasks", bad, "--out", tmp_path / "o.jsonl",
               env=env).assert_one_line_error(2, "bad.jsonl:1")
    invoke_cli("train", "synth", "--home", home, "--out", tmp_path / "t.jsonl",
               env=env).assert_one_line_error(2, "--teacher-url")
    invoke_cli("train", "synth", "--home", home, "--out", tmp_path / "t.jsonl", "--teacher-url", "http://127.0.0.1:9/v1",
               env=env).assert_one_line_error(2, "teacher")
    invoke_cli("train", "sft", "--trajectories", tmp_path / "none.jsonl", "--model", tmp_path,
               "--out", tmp_path / "sft").assert_one_line_error(2, "does not exist")
