"""bench/gpu/check.py, the one GPU check, on a machine without a GPU (or with its GPUs hidden): one line
on stderr, exit 2, nothing built — so a session without a device learns that at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "gpu" / "check.py"


def test_without_a_gpu_the_check_fails_in_one_line(tmp_path):
    work, report = tmp_path / "work", tmp_path / "out.json"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "-1"}  # hides any GPU this machine has, as CUDA does
    proc = subprocess.run([sys.executable, str(SCRIPT), "--keep", str(work), "--json", str(report)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == "" and proc.stderr.strip().splitlines() == ["gpu check: cannot run: no CUDA GPU (nvidia-smi lists none)"]
    assert not work.exists() and not report.exists(), "nothing is built before the machine is known to fit"


def test_the_check_is_one_script_and_names_every_check():
    """The folder holds one runnable script; its docstring and its runner name the checks the issue asks for."""
    scripts = sorted(p.name for p in SCRIPT.parent.glob("*.py"))
    assert scripts == ["check.py"], scripts
    text = SCRIPT.read_text()
    for name in ("bge_cuda", "checkpoint", "vllm_serve", "return_token_ids", "processed_logprobs", "lora_hot_load",
                 "cispo_step"):
        assert f'"{name}"' in text and f"``{name}``" in text, name
