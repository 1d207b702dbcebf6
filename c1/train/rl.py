"""``c1 train rl``: CISPO with LoRA, rollouts through the real c1 loop.

Why our own loop and not TRL's GRPOTrainer: TRL ≥ 0.26 has the CISPO loss
(``loss_type="cispo"``; :mod:`c1.train.cispo` computes the same thing and is tested against it)
and, in recent versions, tool-calling rollouts — but those run TRL's own tool loop over one
growing conversation. c1's context is not append-only: ``prune_chunks`` removes chunks from
everything re-sent, so turn 6's prompt is not turn 5's prompt plus its completion. Each assistant
turn has to be trained against the prompt it was actually sampled from. A compact trainer makes
that natural:

    for each step:  queries_per_step tasks × group_size rollouts (TokenPolicy in the c1 loop), every
                      (task, rollout) pair its own job in the pool of ``rollout_workers``
                    → reward per rollout (β of the epoch) → group advantages, tied groups dropped
                    → the assistant turns of a rollout, packed into as few sequences as the pruning
                      allows (:func:`c1.train.cispo.pack_turns`), carry their rollout's advantage and
                      the sampler's own log-probabilities μ of their tokens
                    → π_old: the trainer's log-probs before the update (no grad), at the sampling
                      temperature → the sampler correction min(π_old/μ, tis_cap)
                    → ``substeps`` optimizer steps, each on a slice of the sequences, CISPO loss over
                      completion tokens (token-mean per slice), weighted by the sampler correction
                    → adapter pushed to the rollout server (vLLM) if there is one

Curricula: β anneals 4 → 2 across epochs (:func:`c1.train.reward.beta_for_epoch`); tasks are
ordered by level within each epoch and epoch e admits levels ≤ ``start_level + e`` (few hops
first). Checkpoints (adapter, optimizer, position) every ``save_every`` steps; ``resume`` continues
from the newest. Metrics per step go to ``metrics.jsonl``.
"""

from __future__ import annotations

import json
import random
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from c1.agent.tools import ToolConfig
from c1.train import cispo
from c1.train import reward as rewards
from c1.train.collect import run_task
from c1.train.policy import TokenPolicy
from c1.train.settings import RLSettings


def curriculum(tasks: list[dict], epoch: int, cfg: RLSettings) -> list[dict]:
    """The tasks of epoch ``epoch``: levels ≤ start_level + epoch (all when the curriculum is off),
    few hops first, shuffled within a level (seeded by epoch)."""
    rng = random.Random(cfg.seed * 1000 + epoch)
    top = max((t.get("level", 0) for t in tasks), default=0)
    cap = top if not cfg.curriculum else cfg.start_level + epoch
    levels: dict[int, list[dict]] = {}
    for t in tasks:
        if t.get("level", 0) <= cap:
            levels.setdefault(t.get("level", 0), []).append(t)
    out = []
    for lvl in sorted(levels):
        group = list(levels[lvl])
        rng.shuffle(group)
        out += group
    return out


@dataclass
class TrainState:
    step: int = 0
    epoch: int = 0
    position: int = 0
    """Index of the next task in the epoch's order."""

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Rollout:
    task: dict
    index: int
    reward: rewards.Reward
    turns: list
    stop: str
    stats: dict


class RLTrainer:
    def __init__(self, model, renderer, corpus, settings, tasks: list[dict], out_dir: str | Path,
                 cfg: RLSettings = RLSettings(), generator=None, tool_config: ToolConfig = ToolConfig(),
                 policy_factory: Callable[[dict, int], TokenPolicy] | None = None,
                 on_step: Callable[[dict], None] | None = None):
        """``model``: a PeftModel (LoRA attached). ``generator``: where rollouts sample from —
        an :class:`~c1.train.policy.HFGenerator` on ``model`` by default, or a VLLMGenerator
        (hot-reloaded after each update). ``settings``: c1 Settings (budget, thresholds, max_turns,
        max_docs). ``policy_factory(task, i)`` overrides how rollout ``i`` of a task gets its policy."""
        import torch

        from c1.train.policy import HFGenerator

        self.model = model
        self.renderer = renderer
        self.corpus = corpus
        self.settings = settings
        self.tasks = tasks
        self.out = Path(out_dir)
        self.cfg = cfg
        self.tool_config = tool_config
        if not cfg.temperature or cfg.temperature <= 0:
            raise ValueError("RL samples: the temperature must be positive")
        self.generator = generator or HFGenerator(model, seed=cfg.seed)
        self.policy_factory = policy_factory or self.default_policy
        self.on_step = on_step or (lambda m: None)
        import torch.nn as nn

        for m in model.modules():  # deterministic forwards: old and new log-probs must agree on policy
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the model has no trainable parameters: attach a LoRA adapter first")
        self.optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.state = TrainState()
        self.out.mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.out / "metrics.jsonl"

    def default_policy(self, task: dict, i: int) -> TokenPolicy:
        return TokenPolicy(self.renderer, self.generator, dict(self.tool_config.names), self.cfg.max_new_tokens,
                           self.cfg.temperature, self.cfg.max_context, self.settings.max_docs,
                           self.settings.soft_threshold)

    # checkpoints --------------------------------------------------------------------------
    def checkpoints(self) -> list[Path]:
        root = self.out / "checkpoints"
        return sorted(root.glob("step-*")) if root.exists() else []

    def save_checkpoint(self) -> Path:
        import torch

        path = self.out / "checkpoints" / f"step-{self.state.step:06d}"
        tmp = path.with_name(path.name + ".partial")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        self.model.save_pretrained(str(tmp / "adapter"))
        torch.save(self.optimizer.state_dict(), tmp / "optimizer.pt")
        (tmp / "state.json").write_text(json.dumps(self.state.to_json()))
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)  # a checkpoint exists whole or not at all
        for old in self.checkpoints()[: -self.cfg.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)
        return path

    def resume(self) -> bool:
        """Load the newest checkpoint, if any (adapter weights, optimizer, position)."""
        import torch
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        ckpts = self.checkpoints()
        if not ckpts:
            return False
        path = ckpts[-1]
        weights = path / "adapter" / "adapter_model.safetensors"
        set_peft_model_state_dict(self.model, load_file(str(weights)))
        self.optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=False))
        self.state = TrainState(**json.loads((path / "state.json").read_text()))
        if self.metrics_path.exists():  # forget metrics of steps after the checkpoint
            keep = [line for line in self.metrics_path.read_text().splitlines()
                    if line.strip() and json.loads(line).get("step", 0) <= self.state.step]
            self.metrics_path.write_text("".join(line + "\n" for line in keep))
        return True

    # the loop ---------------------------------------------------------------------------------
    def total_steps(self) -> int:
        q = self.cfg.queries_per_step
        n = sum((len(curriculum(self.tasks, e, self.cfg)) + q - 1) // q for e in range(self.cfg.epochs))
        return min(n, self.cfg.max_steps) if self.cfg.max_steps else n

    def train(self) -> dict:
        q = self.cfg.queries_per_step
        last: dict = {}
        self.push_adapter()  # a rollout server starts from the adapter being trained (SFT's, or a checkpoint's)
        while self.state.epoch < self.cfg.epochs:
            order = curriculum(self.tasks, self.state.epoch, self.cfg)
            beta = rewards.beta_for_epoch(self.state.epoch, self.cfg.epochs, self.cfg.reward)
            while self.state.position < len(order):
                if self.cfg.max_steps and self.state.step >= self.cfg.max_steps:
                    return last
                batch = order[self.state.position: self.state.position + q]
                last = self.step(batch, beta)
                self.state.position += len(batch)
                self.state.step += 1
                last.update(step=self.state.step, epoch=self.state.epoch)
                with self.metrics_path.open("a") as f:
                    f.write(json.dumps(last) + "\n")
                self.on_step(last)
                if self.state.step % self.cfg.save_every == 0:
                    self.save_checkpoint()
            self.state.epoch += 1
            self.state.position = 0
        return last

    def rollout(self, task: dict, i: int, beta: float) -> Rollout:
        policy = self.policy_factory(task, i)
        res = run_task(self.corpus, self.settings, task, policy, i, self.tool_config)
        r = rewards.reward(res.outcome, beta, self.cfg.reward)
        return Rollout(task, i, r, list(policy.turns), res.finished.stop_reason if res.finished else "error",
                       dict(res.agent.stats))

    def rollouts(self, batch: list[dict], beta: float) -> list[list[Rollout]]:
        """Every rollout of every task of the batch, grouped by task. The (task, rollout) pairs share
        one pool, so ``rollout_workers`` bounds the rollouts in flight, not the groups."""
        pairs = [(t, i) for t in batch for i in range(self.cfg.group_size)]
        if self.cfg.rollout_workers > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=self.cfg.rollout_workers) as pool:
                done = list(pool.map(lambda p: self.rollout(p[0], p[1], beta), pairs))
        else:
            done = [self.rollout(t, i, beta) for t, i in pairs]
        n = self.cfg.group_size
        return [done[k: k + n] for k in range(0, len(done), n)]

    def step(self, batch: list[dict], beta: float) -> dict:
        import torch

        started = time.perf_counter()
        self.model.eval()  # sampling (dropout is off in both modes, see __init__)
        groups = self.rollouts(batch, beta)
        t_roll = time.perf_counter() - started
        samples = []  # (packed sequence, advantage)
        tied = turns = 0
        for g in groups:
            adv = cispo.group_advantages([r.reward.total for r in g], self.cfg.advantage_scale)
            if adv is None:
                tied += 1
                continue
            for r, a in zip(g, adv):
                turns += sum(1 for t in r.turns if t.completion_ids)
                samples += [(p, a) for p in cispo.pack_turns(r.turns)]
        everyone = [r for g in groups for r in g]
        metrics = {
            "beta": round(beta, 4), "groups": len(groups), "groups_tied": tied, "rollouts": len(everyone),
            "reward_mean": round(rewards.mean(r.reward.total for r in everyone), 4),
            "reward_std": round(_std([r.reward.total for r in everyone]), 4),
            "recall": round(rewards.mean(r.reward.recall for r in everyone), 4),
            "traj_recall": round(rewards.mean(r.reward.traj_recall for r in everyone), 4),
            "answer_found": round(rewards.mean(float(r.reward.answer_found) for r in everyone), 4),
            "turns": round(rewards.mean(r.stats.get("turns", 0) for r in everyone), 2),
            "stops": dict(Counter(r.stop for r in everyone)),
            "turn_samples": turns, "sequences": len(samples), "tokens": sum(p.n_completion for p, _ in samples),
            "loss": None, "clip_fraction": None, "ratio_max": None, "sampler_logprobs": None,
            "sampler_weight_mean": None, "sampler_logprob_gap": None, "lr": self.cfg.lr,
            "seconds_rollout": round(t_roll, 2),
        }
        if samples:
            self.model.train()  # gradient checkpointing, when enabled, only acts in train mode
            temp = self.cfg.temperature
            with torch.no_grad():
                old = [cispo.token_logprobs(self.model, p.ids, p.spans, temperature=temp) for p, _ in samples]
            tis = [None if p.sampler_logprobs is None else
                   cispo.sampler_weights(o, torch.tensor(p.sampler_logprobs, dtype=o.dtype, device=o.device), self.cfg.tis_cap)
                   for (p, _), o in zip(samples, old)]
            known = [(o, p.sampler_logprobs) for (p, _), o in zip(samples, old) if p.sampler_logprobs is not None]
            if known:
                gaps = [(o.cpu() - torch.tensor(mu, dtype=o.dtype)).abs() for o, mu in known]
                metrics.update(sampler_logprobs=sum(len(mu) for _, mu in known),
                               sampler_weight_mean=round(float(torch.cat([w for w in tis if w is not None]).mean()), 4),
                               sampler_logprob_gap=round(float(torch.cat(gaps).max()), 6))
            order = list(range(len(samples)))
            random.Random(self.cfg.seed + self.state.step).shuffle(order)
            k = max(1, min(self.cfg.substeps, len(samples)))
            losses, clips, rmax = [], [], []
            params = [p for p in self.model.parameters() if p.requires_grad]
            for s in range(k):
                part = order[s::k]
                n_tokens = sum(samples[i][0].n_completion for i in part)
                self.optimizer.zero_grad(set_to_none=True)
                for i in part:
                    packed, a = samples[i]
                    logp = cispo.token_logprobs(self.model, packed.ids, packed.spans, temperature=temp)
                    loss, st = cispo.cispo_loss(logp[None], old[i][None], torch.tensor([a], dtype=logp.dtype, device=logp.device),
                                                torch.ones_like(logp)[None], self.cfg.eps_max, normalizer=n_tokens,
                                                is_weights=None if tis[i] is None else tis[i][None])
                    loss.backward()
                    losses.append(st.loss)
                    clips.append(st.clip_fraction * st.tokens)
                    rmax.append(st.ratio_max)
                if self.cfg.grad_clip:
                    torch.nn.utils.clip_grad_norm_(params, self.cfg.grad_clip)
                self.optimizer.step()
            metrics.update(loss=round(sum(losses) / k, 6), clip_fraction=round(sum(clips) / max(1, metrics["tokens"]), 4),
                           ratio_max=round(max(rmax), 4))
            self.push_adapter(after_step=True)
        metrics["seconds"] = round(time.perf_counter() - started, 2)
        return metrics

    def push_adapter(self, after_step: bool = False) -> None:
        """Hand the current adapter to a rollout server that hot-reloads adapters (vLLM); in-process
        generation uses the model itself and needs nothing."""
        load = getattr(self.generator, "load_adapter", None)
        if load is None:
            return
        n = self.state.step + (1 if after_step else 0)  # the step counter moves after step() returns
        path = self.out / "live" / f"step-{n:06d}"
        self.model.save_pretrained(str(path))
        load(f"c1-rl-{n}-{uuid.uuid4().hex[:6]}", str(path.resolve()))  # unique: a server may outlive a run
        for old in sorted((self.out / "live").glob("step-*"))[:-2]:
            shutil.rmtree(old, ignore_errors=True)

    def save_final(self) -> Path:
        path = self.out / "adapter"
        self.model.save_pretrained(str(path))
        return path


def _std(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    m = sum(values) / len(values)
    return (sum((v - m) ** 2 for v in values) / len(values)) ** 0.5

