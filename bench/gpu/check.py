"""The model path on one CUDA GPU, in one run of at most 10 minutes; nothing is downloaded.

    python bench/gpu/check.py [--keep DIR] [--limit SECONDS] [--json OUT]

One line per check on stdout (``ok`` or ``FAIL``, its name, what it measured), then a summary line;
exit 0 only when every check passed, 1 when one failed or the time limit (default 570 s) ran out.
Without a CUDA GPU, torch, vLLM, PEFT or transformers: one line on stderr and exit 2, before
anything is built.

- ``bge_cuda``: the bge-small int8 ONNX embedder runs on onnxruntime's CUDA provider (``c1[gpu-embed]``)
  and its vectors match the CPU's;
- ``checkpoint``: a tiny gpt-oss-shaped checkpoint built here (``GptOssForCausalLM``: 2 layers, 4
  experts, head_dim 64, sliding and full attention, random BF16 weights with a sharpened output
  layer; the real o200k_harmony vocabulary as ``tokenizer.json``; gpt-oss's stop ids in
  ``generation_config.json``) and a LoRA adapter for it;
- ``vllm_serve``: ``c1 serve --rollout --no-api`` starts vLLM on it (LoRA enabled, runtime LoRA
  updating, ``--logprobs-mode processed_logprobs``);
- ``return_token_ids``: ``/v1/completions`` with a token-id prompt returns the sampled ids, and a
  forced ``<|call|>`` ends the generation (why a gpt-oss reply carries one call);
- ``processed_logprobs``: the sampler's log-probabilities at T = 0.7 match the trainer's (HF, same
  weights, logits / 0.7), not the raw ones;
- ``lora_hot_load``: ``/v1/load_lora_adapter`` takes the adapter at run time and generation uses it;
- ``cispo_step``: one CISPO step of ``RLTrainer``, rollouts sampled by vLLM through the real loop,
  the update pushed back as a new adapter.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

CALL, RETURN = 200012, 200002
VOCAB_SIZE, FIRST_SPECIAL = 201088, 199998
STOP_IDS = [RETURN, 199999, CALL]  # <|return|>, <|endoftext|>, <|call|>, as gpt-oss's generation_config
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
])
"""The o200k split pattern (tiktoken's ``o200k_base``)."""


def preflight() -> str | None:
    """Why this machine cannot run the checks, or None."""
    from c1.model.gpu import detect_gpus

    if not detect_gpus():
        return "no CUDA GPU (nvidia-smi lists none)"
    for module, hint in (("torch", "a CUDA build of torch"), ("transformers", "pip install 'c1[train]'"),
                         ("peft", "pip install 'c1[train]'"), ("vllm", "pip install 'c1[gpu]'")):
        try:
            __import__(module)
        except ImportError as exc:
            return f"{module} is not importable ({exc}): {hint}"
    import torch

    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device"
    return None


class Checks:
    """Runs checks in order, one line each; a check whose prerequisite failed is a FAIL, not skipped quietly."""

    def __init__(self):
        self.results: dict[str, dict] = {}

    def run(self, name: str, fn, *args, needs: tuple[str, ...] = ()):
        missing = [n for n in needs if not self.results.get(n, {}).get("ok")]
        started = time.perf_counter()
        value, ok = None, False
        if missing:
            detail = f"not run: {', '.join(missing)} failed"
        else:
            try:
                ok, detail, value = fn(*args)
            except Exception as exc:  # a check's failure is its line, never a traceback
                detail = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        seconds = round(time.perf_counter() - started, 1)
        self.results[name] = {"ok": bool(ok), "detail": detail, "seconds": seconds}
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({seconds:g} s): {detail}", flush=True)
        return value


# --- the tiny checkpoint --------------------------------------------------------------------------
def write_tokenizer(out: Path) -> None:
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    from c1.tokens import harmony

    ranks = {}
    for line in (REPO / "c1" / "data" / "o200k_base.tiktoken").read_text().splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)

    class Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(_path):  # the shipped file, without the tiktoken package
            return ranks

    enc = harmony()[1]
    specials = {}
    for i in range(FIRST_SPECIAL, VOCAB_SIZE):
        try:
            specials[enc.decode([i])] = i
        except Exception:  # an id the encoding does not name
            specials[f"<|reserved_{i}|>"] = i
    conv = Converter(vocab_file="o200k_base.tiktoken", pattern=O200K_PATTERN, extra_special_tokens=list(specials))
    tok = PreTrainedTokenizerFast(tokenizer_object=conv.converted(), eos_token="<|return|>", pad_token="<|endoftext|>",
                                  bos_token="<|startoftext|>")
    tok.save_pretrained(str(out))
    got = tok.convert_tokens_to_ids(["<|start|>", "<|call|>", "<|return|>"])
    if got != [200006, CALL, RETURN]:
        raise RuntimeError(f"the converted tokenizer gives {got} for <|start|>, <|call|>, <|return|>")


def check_checkpoint(work: Path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, GptOssConfig, GptOssForCausalLM

    out = work / "tiny-gpt-oss"
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    config = GptOssConfig(
        hidden_size=256, intermediate_size=256, num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=VOCAB_SIZE,
        layer_types=["sliding_attention", "full_attention"], sliding_window=128,
        tie_word_embeddings=False, eos_token_id=STOP_IDS, pad_token_id=199999, torch_dtype="bfloat16",
    )
    model = GptOssForCausalLM(config)
    with torch.no_grad():  # peaked distributions: the temperature then changes every log-probability visibly
        model.lm_head.weight.mul_(8.0)
    model.to(torch.bfloat16).save_pretrained(str(out), safe_serialization=True)
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": STOP_IDS, "pad_token_id": 199999}))
    write_tokenizer(out)
    base = AutoModelForCausalLM.from_pretrained(str(out), torch_dtype=torch.bfloat16).cuda()
    lora = LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], lora_dropout=0.0)
    peft_model = get_peft_model(base, lora)
    adapter = work / "adapter"
    peft_model.save_pretrained(str(adapter))
    size = sum(f.stat().st_size for f in out.iterdir()) / 2**20
    return True, f"{out} ({size:.0f} MiB), adapter {adapter}", (out, peft_model, adapter)


# --- bge on CUDA ------------------------------------------------------------------------------------
def check_bge():
    import numpy as np
    import onnxruntime as ort

    from c1.store.embedders import BgeSmallEmbedder

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return False, f"onnxruntime {ort.__version__} has no CUDAExecutionProvider: pip install 'c1[gpu-embed]'", None
    texts = ["The drummer of Rush was Neil Peart.", "CISPO clips the importance weight from above only.",
             "A short one.", "Contracts renew for one year unless either party gives notice. " * 6]
    gpu = BgeSmallEmbedder()
    started = time.perf_counter()
    vectors = gpu.embed(texts)
    seconds = time.perf_counter() - started
    used = gpu._session.get_providers()
    cpu = BgeSmallEmbedder()
    cpu.__dict__["_session"] = ort.InferenceSession(str(cpu._paths[0]), providers=["CPUExecutionProvider"])
    reference = cpu.embed(texts)
    cosine = float(np.min(np.sum(vectors * reference, axis=1)))
    ok = used[0] == "CUDAExecutionProvider" and cosine > 0.99
    return ok, f"providers {used}, {len(texts)} texts in {seconds:.2f} s, min cosine vs CPU {cosine:.4f}", None


# --- vLLM ---------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_serve(ckpt: Path, work: Path, env: dict, procs: list, deadline: float, memory: str):
    import httpx

    port, log = free_port(), work / "serve.log"
    serve = [sys.executable, "-m", "c1", "serve", "--rollout", "--no-api", "--vllm-model", str(ckpt), "--quantize", "none",
             "--port", str(port), "--budget", "4096", "--gpu-memory-utilization", memory, "--max-lora-rank", "16",
             "--ready-timeout", str(max(60, int(deadline - time.monotonic())))]
    with open(log, "wb") as out:
        proc = subprocess.Popen(serve, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    procs.append(proc)
    url = f"http://127.0.0.1:{port}/v1"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
            return False, f"c1 serve exited {proc.returncode} (log {log}): {tail[-400:]}", None
        try:
            r = httpx.get(url + "/models", timeout=2)
            if r.status_code == 200 and r.json().get("data"):
                return True, f"{url} serves {r.json()['data'][0]['id']} (log {log})", (url, r.json()["data"][0]["id"])
        except httpx.HTTPError:
            pass
        time.sleep(1)
    return False, f"vLLM not ready before the time limit (log {log})", None


def check_token_ids(gen, served: str, prompt: list[int]):
    body = {"model": served, "prompt": prompt, "max_tokens": 8, "temperature": 0, "logit_bias": {str(CALL): 100},
            "return_token_ids": True, "skip_special_tokens": False}
    choice = gen.client._request("POST", "/completions", body).json()["choices"][0]
    ids, finish = choice.get("token_ids"), choice.get("finish_reason")
    sampled = gen.generate(prompt, 8, 1.0, [CALL, RETURN])
    ok = ids == [CALL] and finish == "stop" and len(sampled.ids) > 0
    return ok, f"forced <|call|>: token_ids {ids}, finish {finish}; a free sample of {len(sampled.ids)} ids", None


def check_logprobs(gen, model, prompt: list[int], stops: list[int]):
    import torch

    from c1.train import cispo

    sample = gen.generate(prompt, 24, 0.7, stops)
    if sample.logprobs is None:
        return False, "vLLM returned no log-probabilities", None
    model.eval()
    with torch.no_grad():
        at_t = cispo.token_logprobs(model, prompt + sample.ids, len(sample.ids), temperature=0.7).float().cpu()
        raw = cispo.token_logprobs(model, prompt + sample.ids, len(sample.ids), temperature=1.0).float().cpu()
    mu = torch.tensor(sample.logprobs)
    gap, gap_raw = float((at_t - mu).abs().mean()), float((raw - mu).abs().mean())
    worst = float((at_t - mu).abs().max())
    ok = gap < 0.1 and gap < gap_raw / 4  # BF16 kernels differ a little; the raw log-probs differ a lot
    return ok, (f"{len(sample.ids)} tokens at T=0.7: mean |trainer - vLLM| {gap:.4f} (max {worst:.4f}), "
                f"against the raw T=1 ones {gap_raw:.4f}"), None


def check_hot_load(gen, adapter: Path, prompt: list[int], stops: list[int]):
    gen.load_adapter("c1-check", str(adapter))
    again = gen.generate(prompt, 4, 0.7, stops)
    models = gen.client.models(timeout=10)
    ok = gen.model == "c1-check" and "c1-check" in models and bool(again.ids)
    return ok, f"served models {models}; {len(again.ids)} ids sampled with the adapter", None


# --- one CISPO step ---------------------------------------------------------------------------------
def check_cispo(gen, model, renderer, home: Path, work: Path):
    from c1.config import Settings
    from c1.model.harmony import completion_ids
    from c1.retrieval.corpus import Corpus
    from c1.train.policy import Sample, TokenPolicy
    from c1.train.rl import RLTrainer
    from c1.train.settings import RLSettings

    settings = Settings(home=home, budget=4096, max_turns=2, max_docs=5)
    corpus = Corpus(settings)
    try:
        gold = next(d.doc_id for d in corpus.store.manifest.all_docs() if d.path.endswith("training.md"))
        task = {"id": "t0", "question": "How does c1 train its model with CISPO?", "gold_docs": [gold], "truth": "CISPO",
                "truth_docs": [], "level": 0}
        first = completion_ids({"role": "assistant", "content": "", "tool_calls": [
            {"id": "s", "function": {"name": "search_corpus", "arguments": json.dumps({"query": "CISPO training"})}}]})

        class FirstTurnScripted:  # rollout 0 searches first, so the group's rewards differ (traj recall)
            def __init__(self):
                self.used = False

            def generate(self, prompt_ids, n, temperature, stops):
                if not self.used:
                    self.used = True
                    return Sample(list(first), None)
                return gen.generate(prompt_ids, n, temperature, stops)

        cfg = RLSettings(epochs=1, group_size=2, queries_per_step=1, substeps=1, max_steps=1, max_new_tokens=48,
                         temperature=0.7, save_every=100)

        def policy(_task, i):
            return TokenPolicy(renderer, FirstTurnScripted() if i == 0 else gen, {}, cfg.max_new_tokens, cfg.temperature,
                               None, settings.max_docs)

        before = gen.model
        trainer = RLTrainer(model, renderer, corpus, settings, [task], work / "rl", cfg, generator=gen, policy_factory=policy)
        m = trainer.train()
    finally:
        corpus.close()
    ok = m.get("loss") is not None and gen.model != before and gen.model.startswith("c1-rl-")
    keys = ("rollouts", "groups_tied", "sequences", "tokens", "loss", "reward_std", "sampler_logprob_gap", "stops")
    return ok, ", ".join(f"{k} {m.get(k)}" for k in keys) + f"; serving {gen.model}", None


# --- the run ----------------------------------------------------------------------------------------
def check_corpus(env: dict):
    """The corpus of the CISPO step: this repository's training guide and README."""
    files = [REPO / "docs" / "training.md", REPO / "README.md"]
    res = subprocess.run([sys.executable, "-m", "c1", "index", *map(str, files), "--quiet"], env=env,
                         capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        return False, f"c1 index failed: {' '.join(res.stderr.split())[-300:]}", None
    return True, f"indexed {len(files)} files into {env['C1_HOME']}", None


def checks_with_vllm(checks: Checks, work: Path, env: dict, procs: list, deadline: float, memory: str) -> None:
    from c1.train.policy import VLLMGenerator
    from c1.train.render import HarmonyRenderer

    checks.run("corpus", check_corpus, env)
    built = checks.run("checkpoint", check_checkpoint, work) or (None, None, None)
    ckpt, model, adapter = built
    served = checks.run("vllm_serve", check_serve, ckpt, work, env, procs, deadline, memory, needs=("checkpoint",))
    url, name = served or (None, None)
    renderer = HarmonyRenderer(start_date="2026-01-01")
    prompt = renderer.prompt_ids([{"role": "system", "content": "Find documents."},
                                  {"role": "user", "content": "How does c1 train its model?"}], [])
    gen = VLLMGenerator(url, name) if served else None
    needs = ("vllm_serve",)
    checks.run("return_token_ids", check_token_ids, gen, name, prompt, needs=needs)
    checks.run("processed_logprobs", check_logprobs, gen, model, prompt, renderer.stop_ids, needs=needs)
    checks.run("lora_hot_load", check_hot_load, gen, adapter, prompt, renderer.stop_ids, needs=needs)
    checks.run("cispo_step", check_cispo, gen, model, renderer, Path(env["C1_HOME"]), work, needs=needs + ("corpus",))


def stop_all(procs: list) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="work folder to keep (default: a temporary one)")
    ap.add_argument("--limit", type=float, default=570.0, help="seconds for the whole run (default 570)")
    ap.add_argument("--gpu-memory-utilization", default="0.3")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = ap.parse_args()
    why = preflight()
    if why:
        print(f"gpu check: cannot run: {why}", file=sys.stderr)
        return 2
    started = time.monotonic()
    deadline = started + args.limit - 60  # a minute for the checks after vLLM is up
    work = args.keep or Path(tempfile.mkdtemp(prefix="c1-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "C1_HOME": str(work / "home"), "C1_CACHE_DIR": str(work / "cache"),
           "TIKTOKEN_ENCODINGS_BASE": str(REPO / "c1" / "data"),  # vLLM's harmony encoding, offline
           "VLLM_SYSTEM_START_DATE": "2026-01-01", "HF_HUB_OFFLINE": "1"}
    os.environ.update({k: env[k] for k in ("C1_HOME", "TIKTOKEN_ENCODINGS_BASE", "HF_HUB_OFFLINE")})
    procs: list = []

    def out_of_time():
        print(f"FAIL time_limit: the run passed {args.limit:g} s", flush=True)
        stop_all(procs)
        os._exit(1)

    timer = threading.Timer(args.limit, out_of_time)
    timer.daemon = True
    timer.start()
    checks = Checks()
    try:
        checks.run("bge_cuda", check_bge)
        checks_with_vllm(checks, work, env, procs, deadline, args.gpu_memory_utilization)
    finally:
        stop_all(procs)
        timer.cancel()
    passed = sum(r["ok"] for r in checks.results.values())
    seconds = time.monotonic() - started
    print(f"gpu check: {passed} of {len(checks.results)} passed in {seconds:.0f} s (work folder {work})", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"seconds": round(seconds, 1), "work": str(work), "checks": checks.results}, indent=1))
    return 0 if passed == len(checks.results) else 1


if __name__ == "__main__":
    sys.exit(main())
