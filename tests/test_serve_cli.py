"""`c1 serve` as a user runs it: refusals before any download, --api-only flags, Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess

import httpx
import pytest

from conftest import c1_argv
from llm_server import free_port


@pytest.mark.slow
def test_serve_refuses_a_plan_with_problems_before_any_download(run_c1, tmp_path):
    """No GPU or no vLLM here: the plan's reason, at once; never the 42 GB download first."""
    cache = tmp_path / "cache"
    result = run_c1("serve", "--no-api", env={"C1_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                                               "HF_HOME": str(tmp_path / "hf")})
    line = result.assert_one_line_error(2, "cannot serve", "c1 serve --dry-run")
    assert "vLLM is not installed" in line or "GPU" in line
    assert not (cache / "models").exists() and not (tmp_path / "hf").exists(), "nothing downloaded or converted"


@pytest.mark.slow
def test_serve_rollout_dry_run_plans_the_rl_rollout_server(run_c1, tmp_path):
    """``c1 serve --rollout --dry-run --json``: the plan that ``c1 train rl --vllm-url`` needs."""
    import json

    env = {"C1_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    result = run_c1("serve", "--rollout", "--max-lora-rank", "32", "--dry-run", "--json", env=env)
    plan = json.loads(result.stdout)
    assert plan["env"] == {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
    command = plan["command"]
    assert "--enable-lora" in command and command[command.index("--logprobs-mode") + 1] == "processed_logprobs"
    assert command[command.index("--max-lora-rank") + 1] == "32"
    plain = json.loads(run_c1("serve", "--dry-run", "--json", env=env).stdout)
    assert plain["env"] == {} and "--logprobs-mode" not in plain["command"]


def test_api_only_refuses_port_and_names_api_port(run_c1):
    result = run_c1("serve", "--api-only", "--port", "9123", timeout=60)  # on failure it would serve on 8080
    result.assert_one_line_error(2, "--api-port 9123")


@pytest.mark.slow
def test_api_only_exits_130_on_ctrl_c(c1_home, run_c1, tmp_path):
    (tmp_path / "note.md").write_text("# Note\n\nThe ridge survey is due on Friday.\n")
    assert run_c1("index", tmp_path / "note.md", "--quiet").rc == 0
    port = free_port()
    proc = subprocess.Popen(c1_argv("serve", "--api-only", "--api-port", port), stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(5):
            line = proc.stderr.readline()
            if "search API on" in line:
                break
        assert f"http://127.0.0.1:{port}" in line, line
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()["status"] == "ok"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_refuses_a_budget_the_window_cannot_hold(run_c1, tmp_path):
    """``--budget 200000`` once warned, started vLLM with a capped window and every search failed:
    now one line, exit 2, before anything starts (no vLLM needed: the check comes first)."""
    env = {"C1_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    for extra in ([], ["--dry-run"], ["--rollout", "--no-api"]):
        result = run_c1("serve", "--budget", "200000", *extra, env=env)
        result.assert_one_line_error(2, "--budget 200000", "131072-token window", "--budget 122880 or less")
        assert result.stdout == ""
    ok = run_c1("serve", "--budget", "122880", "--dry-run", "--json", env=env)
    assert json.loads(ok.stdout)["max_model_len"] == 131072, ok.stderr
    # a local checkpoint that says its window is shorter: that window is the limit
    folder = tmp_path / "short"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt_oss", "max_position_embeddings": 16384}))
    short = run_c1("serve", "--vllm-model", str(folder), "--budget", "12000", "--no-api", env=env)
    short.assert_one_line_error(2, "--budget 12000", "checkpoint's 16384-token window", "--budget 8192 or less")
    assert not (tmp_path / "cache" / "models").exists(), "nothing converted"
