"""c1 serve: vLLM command, GPU verdicts on canned nvidia-smi output, dry-run plan, and run()
against a real child process that stands in for the GPU server."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from c1.model import gpu as gpu_mod
from c1.model import launcher
from c1.model import plan as planning
from c1.model import prepare as preparing
from c1.model.errors import GpuUnsupported, NoGpu, PortConflict, ServeError, ServerDied, ServerNotReady, VllmNotInstalled
from c1.model.gpu import GpuInfo, parse_nvidia_smi, plan_for
from c1.model.settings import ServeOptions, build_vllm_command, max_model_len_for, parse_lora

H200 = "NVIDIA H200, 9.0, 143771 MiB, 570.133.20\n"
A100 = "NVIDIA A100-SXM4-80GB, 8.0, 81920 MiB, 535.104.05\n"
B200 = "NVIDIA B200, 10.0, 183359 MiB, 570.124.06\n"
T4 = "Tesla T4, 7.5, 15360 MiB, 535.104.05\n"
RTX_4080 = "NVIDIA GeForce RTX 4080, 8.9, 16376 MiB, 550.54.14\n"


def _flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


# ------------------------------------------------------------------ command construction


def test_command_has_the_gpt_oss_flags_and_defaults():
    command = build_vllm_command(ServeOptions())
    assert command[:3] == ["vllm", "serve", "chromadb/context-1"]
    for flag in ("--enable-auto-tool-choice", "--enable-prefix-caching"):
        assert flag in command
    assert _flag(command, "--tool-call-parser") == "openai"
    assert _flag(command, "--reasoning-parser") == "openai_gptoss"
    assert _flag(command, "--port") == "8001"
    assert _flag(command, "--host") == "127.0.0.1"
    assert _flag(command, "--served-model-name") == "chromadb/context-1"
    assert _flag(command, "--gpu-memory-utilization") == "0.9"
    assert _flag(command, "--tensor-parallel-size") == "1"
    assert _flag(command, "--seed") == "0"
    assert _flag(command, "--max-model-len") == "40960"  # 32768 budget + 8192 headroom
    assert "--enable-lora" not in command


@pytest.mark.parametrize(
    ("budget", "expected"),
    [(32768, 40960), (16000, 24576), (1, 9216), (60000, 68608), (200000, 131072)],
)
def test_max_model_len_is_budget_plus_headroom_rounded_up_and_capped(budget, expected):
    assert max_model_len_for(budget) == expected
    assert int(_flag(build_vllm_command(ServeOptions(context_budget=budget)), "--max-model-len")) == expected


def test_options_reach_the_command(tmp_path):
    opts = ServeOptions(
        model=str(tmp_path), served_model_name="ctx", host="0.0.0.0", port=9001, seed=7,
        gpu_memory_utilization=0.85, tensor_parallel_size=2, extra_args=("--max-num-seqs", "64"),
    )  # fmt: skip
    command = build_vllm_command(opts, executable=["/venv/bin/vllm"])
    assert command[:3] == ["/venv/bin/vllm", "serve", str(tmp_path)]
    assert (_flag(command, "--port"), _flag(command, "--host"), _flag(command, "--seed")) == ("9001", "0.0.0.0", "7")
    assert (_flag(command, "--tensor-parallel-size"), _flag(command, "--gpu-memory-utilization")) == ("2", "0.85")
    assert _flag(command, "--served-model-name") == "ctx"
    assert command[-2:] == ["--max-num-seqs", "64"]


def test_lora_adapters_and_rank(tmp_path):
    rl = tmp_path / "rl"
    rl.mkdir()
    (rl / "adapter_config.json").write_text(json.dumps({"r": 48, "lora_alpha": 96}))
    opts = ServeOptions(lora=(("context-1-rl", str(rl)), ("sft", "/adapters/sft")))
    command = build_vllm_command(opts)
    assert "--enable-lora" in command
    i = command.index("--lora-modules")
    assert command[i + 1 : i + 3] == [f"context-1-rl={rl}", "sft=/adapters/sft"]
    assert _flag(command, "--max-lora-rank") == "64"  # 48 rounded up to a rank vLLM accepts
    assert _flag(command, "--max-loras") == "2"
    assert _flag(build_vllm_command(ServeOptions(lora=(("a", "/x"),), max_lora_rank=8)), "--max-lora-rank") == "8"
    assert parse_lora("a=/p/q") == ("a", "/p/q")
    with pytest.raises(ServeError, match="NAME=PATH"):
        parse_lora("/just/a/path")
    with pytest.raises(ServeError, match="maximum of 512"):
        build_vllm_command(ServeOptions(lora=(("a", "/x"),), max_lora_rank=1024))


def test_rollout_serves_what_the_rl_sampler_needs(tmp_path):
    """``--rollout``: LoRA on with room for the live adapter and the next one (no adapter given),
    processed log-probabilities, runtime LoRA updating in vLLM's environment; none of it otherwise."""
    plain = planning.plan(ServeOptions(cache_dir=str(tmp_path), vllm=("vllm",)), gpus=parse_nvidia_smi(H200))
    assert "--enable-lora" not in plain.command and "--logprobs-mode" not in plain.command and plain.env == {}
    plan = planning.plan(ServeOptions(cache_dir=str(tmp_path), vllm=("vllm",), rollout=True), gpus=parse_nvidia_smi(H200))
    assert "--enable-lora" in plan.command and "--lora-modules" not in plan.command
    assert _flag(plan.command, "--logprobs-mode") == "processed_logprobs"
    assert (_flag(plan.command, "--max-loras"), _flag(plan.command, "--max-lora-rank")) == ("2", "16")
    assert plan.env == {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
    data = plan.to_dict()
    assert data["env"] == plan.env and data["command_line"].startswith("VLLM_ALLOW_RUNTIME_LORA_UPDATING=True ")
    assert any(line.startswith("command: VLLM_ALLOW_RUNTIME_LORA_UPDATING=True ") for line in plan.describe())
    with_sft = build_vllm_command(ServeOptions(lora=(("sft", "/adapters/sft"),), rollout=True, max_lora_rank=32))
    assert (_flag(with_sft, "--max-loras"), _flag(with_sft, "--max-lora-rank")) == ("3", "32")


def test_port_of_the_chroma_server_is_refused():
    with pytest.raises(PortConflict, match="Chroma"):
        build_vllm_command(ServeOptions(port=8000))
    with pytest.raises(PortConflict, match="Chroma"):
        build_vllm_command(ServeOptions(port=9000, chroma_port=9000))
    assert _flag(build_vllm_command(ServeOptions(port=8000, chroma_port=None)), "--port") == "8000"
    with pytest.raises(PortConflict):
        planning.plan(ServeOptions(port=8000, quantize=None), gpus=[])


@pytest.mark.parametrize(
    ("opts", "match"),
    [
        (ServeOptions(port=70000), "not a TCP port"),
        (ServeOptions(gpu_memory_utilization=1.5), "gpu-memory-utilization"),
        (ServeOptions(tensor_parallel_size=0), "tensor-parallel-size"),
        (ServeOptions(context_budget=0), "context budget"),
        (ServeOptions(quantize="gptq"), "only 'mxfp4'"),
        (ServeOptions(lora=(("a", "/x"), ("a", "/y"))), "unique"),
    ],
)
def test_invalid_options_are_refused_with_one_line(opts, match):
    with pytest.raises(ServeError, match=match) as info:
        build_vllm_command(opts)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ GPUs


def test_parse_nvidia_smi_canned_outputs():
    (h200,) = parse_nvidia_smi(H200)
    assert h200 == GpuInfo(0, "NVIDIA H200", (9, 0), 143771, "570.133.20")
    two = parse_nvidia_smi(A100 + B200)
    assert [(g.index, g.compute_capability) for g in two] == [(0, (8, 0)), (1, (10, 0))]
    odd = parse_nvidia_smi("NVIDIA L4, [N/A], 23034, 550.1\nsome warning line\n")
    assert odd == [GpuInfo(0, "NVIDIA L4", None, 23034, "550.1")]
    assert parse_nvidia_smi("") == []


@pytest.mark.parametrize(
    ("smi", "kernel", "words"),
    [(H200, "triton", "Triton"), (A100, "marlin", "Marlin"), (B200, "flashinfer", "FlashInfer")],
)
def test_supported_gpus_get_their_moe_kernel(smi, kernel, words):
    plan = plan_for(parse_nvidia_smi(smi))
    assert plan.problem is None and plan.mxfp4_supported and plan.fits
    assert plan.moe_kernel == kernel
    assert any(words in message for message in plan.messages)
    assert any("GiB" in message for message in plan.messages)


def test_t4_is_refused_for_its_compute_capability():
    plan = plan_for(parse_nvidia_smi(T4))
    assert plan.problem_kind == "compute_capability" and not plan.mxfp4_supported
    assert "7.5" in plan.problem and "8.0" in plan.problem and "\n" not in plan.problem


def test_lora_forces_marlin_and_bf16_has_no_mxfp4_kernel():
    assert plan_for(parse_nvidia_smi(H200), lora=True).moe_kernel == "marlin"
    bf16 = plan_for(parse_nvidia_smi(A100), mxfp4=False)
    assert bf16.moe_kernel is None and bf16.weights_gib > 38
    assert plan_for(parse_nvidia_smi(RTX_4080), mxfp4=False).problem_kind == "memory"


def test_memory_and_tensor_parallel_verdicts():
    tight = plan_for(parse_nvidia_smi(RTX_4080))  # ~12.8 GiB of weights in 14.4 GiB usable
    assert tight.problem is None and not tight.fits
    assert any("tight" in message for message in tight.messages)
    tp = plan_for(parse_nvidia_smi(H200), tensor_parallel_size=2)
    assert tp.problem_kind == "tensor_parallel" and "2 GPUs" in tp.problem
    assert plan_for([]).problem_kind == "no_gpu"


def test_weight_estimate_for_gpt_oss_20b():
    assert 13.0e9 < gpu_mod.estimate_weight_bytes() < 14.5e9  # "fits in 16 GB" per OpenAI
    assert 40e9 < gpu_mod.estimate_weight_bytes(mxfp4=False) < 43e9  # 21B parameters in BF16


def test_detect_gpus_never_raises(monkeypatch):
    def missing(*args, **kwargs):
        raise FileNotFoundError("nvidia-smi")

    def failing(*args, **kwargs):
        return subprocess.CompletedProcess(args, 9, "", "NVIDIA-SMI has failed")

    def working(*args, **kwargs):
        return subprocess.CompletedProcess(args, 0, A100 + H200, "")

    assert gpu_mod.detect_gpus(run=missing) == []
    assert gpu_mod.detect_gpus(run=failing) == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert [g.name for g in gpu_mod.detect_gpus(run=working)] == ["NVIDIA H200"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert len(gpu_mod.detect_gpus(run=working)) == 2


# ------------------------------------------------------------------ plan / dry run


def test_dry_run_json_without_gpu_or_vllm(monkeypatch, tmp_path):
    monkeypatch.setattr(planning, "find_vllm", lambda override=None: None)
    plan = planning.plan(ServeOptions(cache_dir=str(tmp_path)), gpus=[])
    data = json.loads(plan.to_json())
    assert set(data) >= {
        "model", "model_path", "served_model_name", "command", "command_line", "gpu", "host", "port",
        "url", "max_model_len", "checkpoint", "conversion", "vllm", "lora", "warnings", "problems", "ready", "env",
    }  # fmt: skip
    assert data["env"] == {}, "a plain server sets no environment of its own"
    assert data["url"] == "http://127.0.0.1:8001/v1" and data["port"] == 8001
    assert data["ready"] is False and data["vllm"] is None
    assert {p["kind"] for p in data["problems"]} == {"vllm", "no_gpu"}
    assert any("c1[gpu]" in p["message"] for p in data["problems"])
    assert data["checkpoint"] == "bf16" and data["conversion"]["state"] == "download"
    assert data["command"][2] == data["model_path"] == data["conversion"]["destination"]
    assert data["served_model_name"] == "chromadb/context-1"
    assert data["gpu"]["gpus"] == [] and data["gpu"]["problem_kind"] == "no_gpu"
    assert plan.describe()[0].startswith("model: chromadb/context-1")
    with pytest.raises(ServeError, match="converted first"):
        launcher.ensure_runnable(plan)


def test_errors_name_the_blocking_problem(monkeypatch, tmp_path):
    opts = ServeOptions(quantize=None, cache_dir=str(tmp_path))
    monkeypatch.setattr(planning, "find_vllm", lambda override=None: None)
    with pytest.raises(VllmNotInstalled, match=r"pip install 'c1\[gpu\]'"):
        launcher.ensure_runnable(planning.plan(opts, gpus=parse_nvidia_smi(H200)))
    monkeypatch.setattr(planning, "find_vllm", lambda override=None: ["vllm"])
    with pytest.raises(NoGpu, match="no NVIDIA GPU"):
        launcher.ensure_runnable(planning.plan(opts, gpus=[]))
    with pytest.raises(GpuUnsupported, match="compute capability 7.5"):
        launcher.ensure_runnable(planning.plan(opts, gpus=parse_nvidia_smi(T4)))
    launcher.ensure_runnable(planning.plan(opts, gpus=parse_nvidia_smi(H200)))


def _make_tiny_gpt_oss(path: Path) -> Path:
    """The tiny checkpoint builder of test_mxfp4.py, loaded by path (tests/ is no package)."""
    spec = importlib.util.spec_from_file_location("_tiny_ckpt", Path(__file__).with_name("test_mxfp4.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_tiny_gpt_oss(path)


def test_local_checkpoints_plan_their_conversion(tmp_path):
    source = _make_tiny_gpt_oss(tmp_path / "ckpt")
    opts = ServeOptions(model=str(source), cache_dir=str(tmp_path / "cache"), vllm=("vllm",))
    plan = planning.plan(opts, gpus=parse_nvidia_smi(H200))
    assert plan.checkpoint == "bf16" and plan.conversion["state"] == "needed"
    assert plan.served_model_name == "ckpt" and plan.command[2] == plan.conversion["destination"]
    prepared = preparing.prepare(plan)
    assert prepared.conversion["state"] == "done" and prepared.conversion["summary"]["tensors_converted"] == 4
    launcher.ensure_runnable(prepared)
    replanned = planning.plan(opts, gpus=parse_nvidia_smi(H200))
    assert replanned.conversion["state"] == "done"  # cached: nothing left to do
    as_is = planning.plan(ServeOptions(model=str(source), quantize=None, vllm=("vllm",)), gpus=parse_nvidia_smi(H200))
    assert as_is.conversion is None and as_is.command[2] == str(source) and not as_is.gpu.mxfp4
    served = planning.plan(
        ServeOptions(model=plan.conversion["destination"], vllm=("vllm",)), gpus=parse_nvidia_smi(H200)
    )
    assert served.checkpoint == "mxfp4" and served.conversion is None
    missing = planning.plan(ServeOptions(model=str(tmp_path / "nope")), gpus=[])
    assert any(p["kind"] == "model" for p in missing.problems)


# ------------------------------------------------------------------ run() against a real child

FAKE_VLLM = textwrap.dedent(
    '''
    """Stands in for `vllm serve` (no GPU here): /health and /v1/models over http.server."""
    import argparse, http.server, json, os, signal, subprocess, sys, threading, time

    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    parser.add_argument("model")
    parser.add_argument("--port", type=int)
    parser.add_argument("--host")
    parser.add_argument("--served-model-name")
    args, _ = parser.parse_known_args()
    env = os.environ.get
    print("INFO fake vllm starting", args.model, flush=True)
    print("INFO runtime lora updating:", env("VLLM_ALLOW_RUNTIME_LORA_UPDATING"), flush=True)
    if env("FAKE_CHILD_PIDFILE"):  # like vLLM's engine-core process
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open(env("FAKE_CHILD_PIDFILE"), "w").write(str(child.pid))
    if env("FAKE_IGNORE_SIGINT"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if env("FAKE_DIE"):
        time.sleep(0.3)
        print("ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
        sys.exit(int(env("FAKE_DIE")))
    time.sleep(float(env("FAKE_LISTEN_AFTER", "0.2")))
    ready_at = time.monotonic() + float(env("FAKE_READY_AFTER", "0.5"))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ready = time.monotonic() >= ready_at
            if self.path == "/health":
                self.send_response(200 if ready else 503)
                self.end_headers()
            elif self.path == "/v1/models" and ready:
                body = json.dumps({"object": "list", "data": [{"id": args.served_model_name}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)
                if env("FAKE_EXIT_AFTER_MODELS"):
                    threading.Timer(0.3, lambda: os._exit(0)).start()
            else:
                self.send_response(404)
                self.end_headers()

        def log_message(self, *a):
            pass

    server = http.server.HTTPServer((args.host, args.port), Handler)
    print("INFO listening on", args.port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("INFO shutting down", flush=True)
    '''
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.fixture
def fake_plan(tmp_path, monkeypatch):
    """A plan whose vLLM is the fake script, on a free port, with an H200 as the GPU."""
    for name in ("FAKE_CHILD_PIDFILE", "FAKE_IGNORE_SIGINT", "FAKE_DIE", "FAKE_READY_AFTER", "FAKE_EXIT_AFTER_MODELS"):
        monkeypatch.delenv(name, raising=False)
    script = tmp_path / "fake_vllm.py"
    script.write_text(FAKE_VLLM)

    def make(rollout: bool = False, **env: str):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        opts = ServeOptions(
            quantize=None, port=_free_port(), cache_dir=str(tmp_path / "cache"), vllm=(sys.executable, str(script)),
            rollout=rollout,
        )
        return planning.plan(opts, gpus=parse_nvidia_smi(H200))

    return make


def test_run_waits_until_the_model_is_listed(fake_plan):
    plan = fake_plan(FAKE_READY_AFTER="0.8", FAKE_EXIT_AFTER_MODELS="1")
    seen, lines = [], []
    started = time.monotonic()
    code = launcher.run(plan, timeout_s=30, on_status=seen.append, on_log=lines.append, poll_s=0.1)
    assert code == 0
    states = [s.state for s in seen]
    assert states[0] == "starting" and "ready" in states and states[-1] == "stopped"
    ready = next(s for s in seen if s.state == "ready")
    assert ready.elapsed_s >= 0.8 and time.monotonic() - started < 20
    assert plan.url in ready.message
    assert any("fake vllm starting" in line for line in lines)
    assert "listening on" in Path(plan.log_path).read_text()


@pytest.mark.slow
def test_a_rollout_server_gets_runtime_lora_updating_in_its_environment(fake_plan, monkeypatch):
    """The variable reaches vLLM's process (not only the plan), and a plain server does not get it."""
    monkeypatch.delenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", raising=False)
    for rollout, expected in ((True, "True"), (False, "None")):
        plan = fake_plan(rollout=rollout, FAKE_READY_AFTER="0.1", FAKE_EXIT_AFTER_MODELS="1")
        lines = []
        assert launcher.run(plan, timeout_s=30, on_log=lines.append, poll_s=0.1) == 0
        assert f"INFO runtime lora updating: {expected}" in lines


def test_run_raises_with_the_log_tail_when_vllm_dies_early(fake_plan):
    plan = fake_plan(FAKE_DIE="3")
    with pytest.raises(ServerDied) as info:
        launcher.run(plan, timeout_s=30, poll_s=0.1)
    assert info.value.returncode == 3
    assert "exited with code 3 before it was ready" in str(info.value)
    assert "CUDA out of memory" in info.value.log_tail and "CUDA out of memory" in str(info.value)


@pytest.mark.slow
def test_interrupt_tears_down_the_whole_process_group(fake_plan, tmp_path):
    pidfile = tmp_path / "engine.pid"
    plan = fake_plan(FAKE_CHILD_PIDFILE=str(pidfile))
    pids = {}

    def on_status(status):
        if status.state == "starting":
            pids["server"] = int(status.message.split("pid ")[1].split(")")[0])
        if status.state == "ready":
            pids["engine"] = int(pidfile.read_text())
            assert _alive(pids["server"]) and _alive(pids["engine"])
            raise KeyboardInterrupt  # what Ctrl-C does in the CLI

    assert launcher.run(plan, timeout_s=30, on_status=on_status, poll_s=0.1) == 130
    assert not _alive(pids["server"]) and not _alive(pids["engine"])


def test_stop_escalates_when_sigint_is_ignored(fake_plan, tmp_path):
    plan = fake_plan(FAKE_IGNORE_SIGINT="1", FAKE_CHILD_PIDFILE=str(tmp_path / "engine.pid"))
    stopping = {}

    def on_status(status):
        if status.state == "ready":
            stopping["at"] = time.monotonic()
            raise KeyboardInterrupt

    assert launcher.run(plan, timeout_s=30, on_status=on_status, grace_s=0.5, poll_s=0.1) == 130
    assert time.monotonic() - stopping["at"] < 5
    assert not _alive(int((tmp_path / "engine.pid").read_text()))


@pytest.mark.slow
def test_sigterm_to_c1_stops_vllm(fake_plan, tmp_path):
    """run() in its own Python process (signals go to the main thread), killed with SIGTERM."""
    pidfile = tmp_path / "engine.pid"
    plan = fake_plan(FAKE_CHILD_PIDFILE=str(pidfile))
    driver = tmp_path / "driver.py"
    driver.write_text(
        textwrap.dedent(
            f"""
            import json, sys
            from c1.model import launcher
            from c1.model.gpu import parse_nvidia_smi
            from c1.model.settings import ServeOptions
            from c1.model.plan import plan as make_plan
            opts = ServeOptions(**json.loads(sys.argv[1]))
            plan = make_plan(opts, gpus=parse_nvidia_smi({H200!r}))
            def on_status(s):
                print(s.state, s.message, flush=True)
            sys.exit(launcher.run(plan, timeout_s=30, on_status=on_status, poll_s=0.1, grace_s=2))
            """
        )
    )
    o = plan.options
    args = json.dumps({"quantize": None, "port": o.port, "cache_dir": o.cache_dir, "vllm": list(o.vllm)})
    root = Path(launcher.__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, str(driver), args], stdout=subprocess.PIPE, text=True, env=env)
    try:
        for line in proc.stdout:
            if line.startswith("starting"):
                server_pid = int(line.split("pid ")[1].split(")")[0])
            if line.startswith("ready"):
                break
        engine_pid = int(pidfile.read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not _alive(server_pid) and not _alive(engine_pid)


@pytest.mark.slow
def test_run_times_out_when_never_ready(fake_plan):
    plan = fake_plan(FAKE_READY_AFTER="60")
    with pytest.raises(ServerNotReady, match="not ready after 1 s"):
        launcher.run(plan, timeout_s=1, poll_s=0.1, grace_s=1)


def test_run_refuses_a_busy_port_and_unrunnable_plans(fake_plan, monkeypatch):
    plan = fake_plan()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", plan.port))
        busy.listen()
        with pytest.raises(PortConflict, match="already in use"):
            launcher.run(plan, timeout_s=5)
    no_gpu = planning.plan(plan.options, gpus=[])
    with pytest.raises(NoGpu):
        launcher.run(no_gpu, timeout_s=5)
    missing = planning.plan(dataclasses.replace(plan.options, vllm=("/nonexistent/vllm",)), gpus=parse_nvidia_smi(H200))
    with pytest.raises(VllmNotInstalled, match="c1\\[gpu\\]"):
        launcher.run(missing, timeout_s=5)


def test_import_is_cheap():
    code = "import sys, c1.model.launcher; print(sorted(m for m in ('numpy','torch','vllm','httpx','huggingface_hub') if m in sys.modules))"
    root = Path(launcher.__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.strip() == "[]"
