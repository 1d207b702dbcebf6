"""The RL reward (Context-1's shape), as pure functions.

    r = clamp(0.7·F_β + 0.3·traj_recall + 1.0·[answer found] − p_prune − p_turn, ε, r_pre)

- F_β of the returned documents against the gold documents, β = 4 in the first epoch annealed
  linearly to 2 in the last (``beta_for_epoch``): recall weighs β² times precision, so early
  training rewards finding everything and later training rewards returning less noise.
- traj_recall: gold documents seen at any point of the run, pruned or not.
- [answer found]: a returned document contains the truth (c1.eval.metrics), or is a document the
  task marks as truth-bearing.
- p_prune: 0.1 for every prune call beyond 3 in a row (calls in the order they were made, across
  turns; any other tool call ends the streak), at most 0.5 in total.
- p_turn: 0 up to 64 turns, rising linearly to 0.5 at 128 turns, 0.5 beyond.
- a run that stopped without an answer (at the turn limit, at the budget, on a reply cut off at
  ``max_tokens``, an answer naming no document: any stop reason but ``answer``) returned no
  document: the loop's substitute list (the documents it saw, :meth:`c1.agent.loop.Agent._fallback`)
  counts for nothing in F_β and [answer found]; its trajectory recall stays
  (``RewardConfig.fallback_counts`` = True scores the substitute like an answer). Otherwise a
  rollout that never answers earns about what one that answers well does, and CISPO does not
  penalise "never answer".
- ε (default 0.001) is the floor: penalties never push a reward below it.
- r_pre — our reading: the largest reward attainable *before* penalties, 0.7 + 0.3 + 1.0 = 2.0
  with the default weights (``RewardConfig.r_max``). As an upper clamp it only binds if someone
  raises a weight or adds a bonus; it keeps rewards on a fixed scale across runs. (Reading r_pre as
  "this run's pre-penalty reward" gives the same numbers, since penalties are never negative.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from c1.eval import metrics


@dataclass(frozen=True)
class RewardConfig:
    w_f: float = 0.7
    w_traj: float = 0.3
    w_answer: float = 1.0
    epsilon: float = 1e-3
    r_max: float | None = None
    """Upper clamp; None = w_f + w_traj + w_answer (the best pre-penalty reward)."""
    prune_free: int = 3
    prune_step: float = 0.1
    prune_cap: float = 0.5
    turn_start: int = 64
    turn_end: int = 128
    turn_cap: float = 0.5
    beta_start: float = 4.0
    beta_end: float = 2.0
    fallback_counts: bool = False
    """Score the documents a run that stopped without an answer was shown as if it had returned them."""

    @property
    def upper(self) -> float:
        return self.r_max if self.r_max is not None else self.w_f + self.w_traj + self.w_answer


def f_beta(precision: float, recall: float, beta: float) -> float:
    """(1+β²)·P·R / (β²·P + R); 0 when both are 0."""
    b2 = beta * beta
    denom = b2 * precision + recall
    return 0.0 if denom <= 0 else (1 + b2) * precision * recall / denom


def prune_penalty(tool_calls: Sequence[str], cfg: RewardConfig = RewardConfig(), prune: str = "prune_chunks") -> float:
    """``tool_calls``: the harness names of every tool call of the run, in order."""
    streak = extra = 0
    for name in tool_calls:
        if name == prune:
            streak += 1
            if streak > cfg.prune_free:
                extra += 1
        else:
            streak = 0
    return min(cfg.prune_cap, round(extra * cfg.prune_step, 10))


def turn_penalty(turns: int, cfg: RewardConfig = RewardConfig()) -> float:
    if turns <= cfg.turn_start:
        return 0.0
    if turns >= cfg.turn_end:
        return cfg.turn_cap
    return cfg.turn_cap * (turns - cfg.turn_start) / (cfg.turn_end - cfg.turn_start)


def beta_for_epoch(epoch: int, epochs: int, cfg: RewardConfig = RewardConfig()) -> float:
    """β of epoch ``epoch`` (0-based) out of ``epochs``: beta_start, linearly to beta_end at the last."""
    if epochs <= 1:
        return cfg.beta_start
    t = min(max(epoch, 0), epochs - 1) / (epochs - 1)
    return cfg.beta_start + (cfg.beta_end - cfg.beta_start) * t


@dataclass
class Outcome:
    """What a finished run is judged on (documents are compared by id)."""

    returned: list[str]
    returned_texts: list[str]
    seen: list[str]
    gold: list[str]
    truth: str
    truth_docs: list[str]
    tool_calls: list[str]
    turns: int
    pruned: list[str] | None = None
    stop: str = "answer"
    """The run's stop reason (c1.agent.events.Finished): only ``answer`` is an answer."""

    @property
    def answered(self) -> bool:
        return self.stop == "answer"


@dataclass
class Reward:
    total: float
    raw: float
    f_beta: float
    beta: float
    precision: float
    recall: float
    traj_recall: float
    answer_found: bool
    p_prune: float
    p_turn: float
    stop: str = "answer"
    scored_returned: bool = True
    """False when the returned documents were the loop's substitute and counted for nothing."""

    def to_json(self) -> dict:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def answer_found(o: Outcome) -> bool:
    if set(o.returned) & set(o.truth_docs):
        return True
    return metrics.answer_found(o.truth, o.returned_texts, o.returned, o.gold)


def reward(o: Outcome, beta: float, cfg: RewardConfig = RewardConfig()) -> Reward:
    counts = o.answered or cfg.fallback_counts
    returned = o.returned if counts else []
    p = metrics.precision(returned, o.gold)
    r = metrics.recall(returned, o.gold)
    fb = f_beta(p, r, beta)
    tr = metrics.trajectory_recall(o.seen, o.gold)
    found = counts and answer_found(o)
    pp, pt = prune_penalty(o.tool_calls, cfg), turn_penalty(o.turns, cfg)
    raw = cfg.w_f * fb + cfg.w_traj * tr + cfg.w_answer * float(found) - pp - pt
    total = min(max(raw, cfg.epsilon), cfg.upper)
    return Reward(total, raw, fb, beta, p, r, tr, found, pp, pt, o.stop, counts)


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0
