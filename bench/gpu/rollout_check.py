"""The model path on a real GPU with real vLLM, in one run of a few minutes (needs a CUDA GPU and
vLLM ≥ 0.10.2 installed; nothing is downloaded):

1. builds a tiny gpt-oss checkpoint (:mod:`tiny_gpt_oss`: random weights, the real vocabulary) and
   a LoRA adapter for it, and indexes the repository's docs as a corpus;
2. starts ``c1 serve --rollout --no-api`` on it (the launcher's plan: LoRA enabled,
   ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``, ``--logprobs-mode processed_logprobs``);
3. checks that
   - ``call_stop``: vLLM ends a generation at ``<|call|>`` (forced with a logit bias) — the reason a
     gpt-oss reply carries one call (:mod:`c1.harmony`), which SFT, RL and serving now share;
   - ``processed_logprobs``: the sampler's log-probabilities at temperature 0.7 match the trainer's
     (HF, same weights, logits / 0.7) — and not the raw ones (temperature 1), which is what vLLM
     reports without the flag;
   - ``hot_load``: ``/v1/load_lora_adapter`` takes an adapter at run time and generation uses it;
   - ``rl_step``: one CISPO step of :class:`c1.train.rl.RLTrainer` with rollouts sampled by vLLM
     through the real loop (one rollout's first turn scripted so that the group's rewards differ),
     the update pushed back to vLLM as a new adapter;
4. prints a JSON summary (``ok`` per check) and exits 0 only when every check passed.

    python bench/gpu/rollout_check.py [--keep DIR]

Budget: ~1-2 min for vLLM to start (compilation, CUDA graphs), under a minute for the checks.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CALL, RETURN = 200012, 200002


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(base: str, proc: subprocess.Popen, log: Path, timeout: float = 480) -> str:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"vLLM exited {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            r = httpx.get(base + "/models", timeout=2)
            if r.status_code == 200 and r.json().get("data"):
                return r.json()["data"][0]["id"]
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"vLLM not ready in {timeout:g} s:\n{log.read_text(errors='replace')[-3000:]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=Path, help="work folder to keep (default: a temporary one)")
    ap.add_argument("--gpu-memory-utilization", default="0.3")
    args = ap.parse_args()
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"rollout_check: needs torch and vLLM ({exc}): pip install 'c1[gpu]'")
    if not torch.cuda.is_available():
        raise SystemExit("rollout_check: no CUDA GPU")
    work = args.keep or Path(tempfile.mkdtemp(prefix="c1-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "C1_HOME": str(work / "home"), "C1_CACHE_DIR": str(work / "cache"),
           "TIKTOKEN_ENCODINGS_BASE": str(REPO / "c1" / "data"),  # vLLM's harmony encoding: offline
           "VLLM_SYSTEM_START_DATE": "2026-01-01", "HF_HUB_OFFLINE": "1"}
    os.environ.update({k: env[k] for k in ("C1_HOME", "TIKTOKEN_ENCODINGS_BASE", "HF_HUB_OFFLINE")})
    summary: dict = {"work": str(work)}
    t0 = time.perf_counter()

    # 1. checkpoint, adapter, corpus --------------------------------------------------------------
    import tiny_gpt_oss
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    ckpt = tiny_gpt_oss.build(work / "tiny-gpt-oss")
    base = AutoModelForCausalLM.from_pretrained(str(ckpt), torch_dtype=torch.bfloat16).cuda()
    lora = LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], lora_dropout=0.0)
    model = get_peft_model(base, lora)
    adapter = work / "adapter"
    model.save_pretrained(str(adapter))
    res = subprocess.run([sys.executable, "-m", "c1", "index", str(REPO / "docs"), str(REPO / "README.md"), "--quiet"],
                         env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"c1 index failed: {res.stderr[-800:]}")
    summary["prepare_s"] = round(time.perf_counter() - t0, 1)

    # 2. c1 serve --rollout -----------------------------------------------------------------------
    port = free_port()
    log = work / "serve.log"
    serve = [sys.executable, "-m", "c1", "serve", "--rollout", "--no-api", "--vllm-model", str(ckpt), "--quantize", "none",
             "--port", str(port), "--budget", "4096", "--gpu-memory-utilization", args.gpu_memory_utilization,
             "--max-lora-rank", "16"]
    plan = json.loads(subprocess.run(serve + ["--dry-run", "--json"], env=env, capture_output=True, text=True).stdout)
    summary["plan"] = {"env": plan["env"], "command_line": plan["command_line"]}
    with open(log, "wb") as out:
        proc = subprocess.Popen(serve, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    checks: dict[str, dict] = {}
    try:
        served = wait_ready(url, proc, log)
        summary["vllm_ready_s"] = round(time.perf_counter() - t0, 1)
        checks.update(run_checks(url, served, model, adapter, work, env))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    summary["checks"] = checks
    summary["seconds"] = round(time.perf_counter() - t0, 1)
    summary["ok"] = bool(checks) and all(c.get("ok") for c in checks.values())
    print(json.dumps(summary, indent=1))
    return 0 if summary["ok"] else 1


def run_checks(url: str, served: str, model, adapter: Path, work: Path, env: dict) -> dict:
    import torch

    from c1.harmony import completion_ids
    from c1.retrieval.corpus import Corpus
    from c1.config import Settings
    from c1.train import cispo
    from c1.train.policy import Sample, TokenPolicy, VLLMGenerator
    from c1.train.render import HarmonyRenderer
    from c1.train.rl import RLSettings, RLTrainer

    checks: dict[str, dict] = {}
    gen = VLLMGenerator(url, served)
    renderer = HarmonyRenderer(start_date="2026-01-01")
    prompt = renderer.prompt_ids([{"role": "system", "content": "Find documents."},
                                  {"role": "user", "content": "How does c1 train its model?"}], [])

    # call_stop: a forced <|call|> ends the generation, as vLLM's gpt-oss eos ids say
    body = {"model": served, "prompt": prompt, "max_tokens": 8, "temperature": 0, "logit_bias": {str(CALL): 100},
            "return_token_ids": True, "skip_special_tokens": False}
    data = gen.client._request("POST", "/completions", body).json()
    ids, finish = data["choices"][0].get("token_ids"), data["choices"][0].get("finish_reason")
    checks["call_stop"] = {"token_ids": ids, "finish_reason": finish, "ok": ids == [CALL] and finish == "stop"}

    # processed_logprobs: μ from vLLM at T=0.7 against the trainer's log-probs at T=0.7 (and at T=1)
    sample = gen.generate(prompt, 24, 0.7, renderer.stop_ids)
    model.eval()
    with torch.no_grad():
        at_t = cispo.token_logprobs(model, prompt + sample.ids, len(sample.ids), temperature=0.7).float().cpu()
        raw = cispo.token_logprobs(model, prompt + sample.ids, len(sample.ids), temperature=1.0).float().cpu()
    mu = torch.tensor(sample.logprobs or [float("nan")] * len(sample.ids))
    gap, gap_raw = float((at_t - mu).abs().max()), float((raw - mu).abs().max())
    checks["processed_logprobs"] = {"tokens": len(sample.ids), "max_gap_vs_T0.7": round(gap, 4),
                                    "max_gap_vs_raw": round(gap_raw, 4), "ok": sample.logprobs is not None and gap < 0.1
                                    and gap < gap_raw}

    # hot_load: the adapter at run time, then generation with it
    try:
        gen.load_adapter("c1-check", str(adapter))
        again = gen.generate(prompt, 4, 0.7, renderer.stop_ids)
        checks["hot_load"] = {"model": gen.model, "tokens": len(again.ids), "ok": gen.model == "c1-check" and bool(again.ids)}
    except Exception as exc:  # PolicyError: the server refused
        checks["hot_load"] = {"error": str(exc), "ok": False}

    # rl_step: rollouts through the loop, sampled by vLLM; one CISPO step; the update pushed back
    settings = Settings(home=Path(env["C1_HOME"]), budget=4096, max_turns=2, max_docs=5)
    corpus = Corpus(settings)
    gold = next(d for d, in corpus.store.manifest.db.execute("SELECT doc_id FROM docs WHERE path LIKE '%training.md'"))
    task = {"id": "t0", "question": "How does c1 train its model with CISPO?", "gold_docs": [gold], "truth": "CISPO",
            "truth_docs": [], "level": 0}
    first = completion_ids({"role": "assistant", "content": "", "tool_calls": [
        {"id": "s", "function": {"name": "search_corpus", "arguments": json.dumps({"query": "CISPO training"})}}]})

    class FirstTurnScripted:  # rollout 0 searches first: the group's rewards differ
        def __init__(self):
            self.used = False

        def generate(self, prompt_ids, n, temperature, stops):
            if not self.used:
                self.used = True
                return Sample(list(first), None)
            return gen.generate(prompt_ids, n, temperature, stops)

    cfg = RLSettings(epochs=1, group_size=2, queries_per_step=1, substeps=1, max_steps=1, max_new_tokens=48,
                     temperature=0.7, save_every=100)

    def policy(task_, i):
        g = FirstTurnScripted() if i == 0 else gen
        return TokenPolicy(renderer, g, {}, cfg.max_new_tokens, cfg.temperature, None, settings.max_docs)

    before = gen.model
    try:
        trainer = RLTrainer(model, renderer, corpus, settings, [task], work / "rl", cfg, generator=gen, policy_factory=policy)
        metrics = trainer.train()
        checks["rl_step"] = {k: metrics.get(k) for k in ("rollouts", "groups_tied", "sequences", "turn_samples", "tokens",
                                                         "loss", "sampler_logprobs", "sampler_logprob_gap", "reward_std")}
        checks["rl_step"].update(pushed=gen.model, ok=metrics.get("loss") is not None and gen.model != before
                                 and gen.model.startswith("c1-rl-"))
    except Exception as exc:
        checks["rl_step"] = {"error": f"{type(exc).__name__}: {exc}", "ok": False}
    finally:
        corpus.close()
    return checks


if __name__ == "__main__":
    sys.exit(main())
