"""CISPO (MiniMax-M1): clipped importance sampling weights on a REINFORCE-style token loss.

Per completion token t of a sample with advantage A:

    r_t  = exp(logπ_θ(t) − logπ_old(t))            importance weight vs the policy before this update
    w_t  = sg(min(r_t, ε_max))                      clipped above, no lower bound, gradient stopped
    m_t  = min(exp(logπ_old(t) − logμ(t)), C)       truncated importance weight for the sampler (TIS)
    ℓ_t  = −w_t · m_t · A · logπ_θ(t)

π_old is the trainer's own log-probability before the update (one no-grad pass); μ is the
sampler's, kept from rollout time (vLLM's MXFP4 kernels, or the in-process model). Their product
π_θ/π_old · π_old/μ = π_θ/μ is the full importance ratio against what really sampled the tokens;
the first factor is CISPO's (clipped at ε_max), the second corrects the sampler/trainer mismatch,
truncated at C (``tis_cap``, 2 by default) as TRL does (``vllm_importance_sampling_correction``).
Both are computed at the sampling temperature: ``token_logprobs`` divides the logits by it.

and the loss is Σ ℓ_t over every completion token of the batch divided by that token count (the
same aggregation as TRL's ``loss_type="cispo"``, whose ``epsilon_high`` is our ``eps_max``). Unlike
PPO/GRPO, no token is dropped from the gradient: the clip only bounds how much an off-policy token
counts. ε_max defaults to 5.0 (the report's "around 4–5"; ScaleRL recommends 5.0). An optional
``eps_min`` exists for experiments; Context-1 uses none.

Advantages are group-relative: ``group_advantages`` subtracts the group's mean reward (and, by
default, divides by its standard deviation). A group whose rewards all tie carries no signal and
is dropped (``None``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

TIE_EPS = 1e-6


def group_advantages(rewards: Sequence[float], scale: str = "std", tie_eps: float = TIE_EPS) -> list[float] | None:
    """A_i = (r_i − mean) / (std + 1e-6) (``scale="std"``) or r_i − mean (``scale="none"``);
    None when max − min ≤ ``tie_eps`` (a tied group)."""
    if len(rewards) < 2 or max(rewards) - min(rewards) <= tie_eps:
        return None
    m = sum(rewards) / len(rewards)
    centred = [r - m for r in rewards]
    if scale == "none":
        return centred
    if scale != "std":
        raise ValueError(f"scale must be 'std' or 'none', not {scale!r}")
    std = math.sqrt(sum(c * c for c in centred) / len(centred))  # population std, as GRPO
    return [c / (std + 1e-6) for c in centred]


@dataclass
class LossStats:
    loss: float
    tokens: int
    clip_fraction: float
    """Share of tokens whose importance weight hit ε_max."""
    ratio_mean: float
    ratio_max: float


def sampler_weights(old_logp, sampler_logp, cap: float = 2.0):
    """TIS: min(π_old/μ, cap) per token (no gradient)."""
    import torch

    return torch.clamp(torch.exp(old_logp.detach() - sampler_logp.detach()), max=cap)


def cispo_loss(logp, old_logp, advantages, mask, eps_max: float = 5.0, eps_min: float | None = None,
               normalizer: float | None = None, is_weights=None):
    """The CISPO loss of a padded batch.

    logp: (B, T) log-probabilities of the taken tokens under the current parameters (with grad);
    old_logp: (B, T) the same before the update (no grad); advantages: (B,) or (B, T);
    mask: (B, T) 1 on completion tokens; is_weights: (B, T) the sampler correction
    (:func:`sampler_weights`), or None. ``normalizer`` defaults to the batch's token count (pass
    the global count when a batch is split into micro-batches). Returns (loss tensor, LossStats).
    """
    import torch

    mask = mask.to(logp.dtype)
    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(-1)
    ratio = torch.exp(logp.detach() - old_logp.detach())
    weight = torch.clamp(ratio, max=eps_max) if eps_min is None else torch.clamp(ratio, min=eps_min, max=eps_max)
    per_token = -weight.detach() * adv * logp
    if is_weights is not None:
        per_token = per_token * is_weights.detach()
    n = float(mask.sum().item()) if normalizer is None else float(normalizer)
    loss = (per_token * mask).sum() / max(n, 1.0)
    tokens = int(mask.sum().item())
    with torch.no_grad():
        on = mask > 0
        r = ratio[on]
        stats = LossStats(
            loss=float(loss.detach().item()), tokens=tokens,
            clip_fraction=float((r > eps_max).float().mean().item()) if tokens else 0.0,
            ratio_mean=float(r.mean().item()) if tokens else 1.0,
            ratio_max=float(r.max().item()) if tokens else 1.0,
        )
    return loss, stats


@dataclass
class Packed:
    """One sequence to score: token ids and the [start, end) spans of its completion tokens."""

    ids: list[int]
    spans: list[tuple[int, int]]
    sampler_logprobs: list[float] | None = None
    """μ of the completion tokens, span after span (None unless every turn's sampler gave them)."""

    @property
    def n_completion(self) -> int:
        return sum(e - s for s, e in self.spans)


def pack_turns(turns) -> list[Packed]:
    """Merge consecutive turns of one rollout into as few sequences as possible.

    Turn k+1's prompt usually starts with turn k's prompt and completion (the loop only appends),
    so one forward pass over the longer sequence scores both completions. A prune — or a
    completion that the next prompt re-renders with other tokens, as harmony does every call (its
    history spelling is not its output spelling) — breaks that prefix and starts a new sequence. ``turns``: objects with ``prompt_ids`` and ``completion_ids``."""
    out: list[Packed] = []
    cur: Packed | None = None
    for t in turns:
        p, c = list(t.prompt_ids), list(t.completion_ids)
        if not c:
            continue
        mu = getattr(t, "logprobs", None)
        if cur is not None and len(p) >= len(cur.ids) and p[: len(cur.ids)] == cur.ids:
            cur.ids = p + c
            cur.spans.append((len(p), len(p) + len(c)))
            cur.sampler_logprobs = cur.sampler_logprobs + list(mu) if cur.sampler_logprobs is not None and mu else None
        else:
            cur = Packed(p + c, [(len(p), len(p) + len(c))], list(mu) if mu else None)
            out.append(cur)
    return out


def token_logprobs(model, input_ids: list[int], spans: list[tuple[int, int]] | int, chunk: int = 2048,
                   temperature: float = 1.0):
    """Log-probabilities of the tokens in ``spans`` (or of the last ``spans`` tokens, given an int)
    of ``input_ids``, concatenated in order: shape (Σ span lengths,), under the distribution
    sampled at ``temperature`` (the logits divided by it, as the sampler did).

    Only the logits of the positions that predict those tokens are computed (``logits_to_keep``
    as an index tensor), and the log-softmax runs over ``chunk`` positions at a time: with a 200k
    vocabulary and a 32k-token context, full logits would not fit."""
    import torch

    if isinstance(spans, int):
        spans = [(len(input_ids) - spans, len(input_ids))]
    device = next(model.parameters()).device
    ids = torch.tensor([input_ids], device=device)
    pos = torch.cat([torch.arange(s - 1, e - 1, device=device) for s, e in spans])
    targets = ids[0, pos + 1]
    try:
        logits = model(input_ids=ids, logits_to_keep=pos, use_cache=False).logits[0]
    except TypeError:  # a model without logits_to_keep
        logits = model(input_ids=ids, use_cache=False).logits[0, pos]
    parts = []
    for i in range(0, logits.shape[0], chunk):
        block = logits[i: i + chunk].float()
        if temperature and temperature > 0 and temperature != 1.0:
            block = block / temperature
        t = targets[i: i + chunk]
        parts.append(block.gather(-1, t.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(block, dim=-1))
    return torch.cat(parts)
