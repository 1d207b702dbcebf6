"""The fitted document ranker: the answer's order from the features a run already computed.

Every document a built-in run holds has the evidence features of :mod:`c1.retrieval.evidence` (its
similarity, names, rare terms, phrase, keywords, identity, links and bridges from pivots, miss) and a
place in the question's own search. The ranker scores it ``Σ w_f × x_f`` over :data:`FEATURES`, and
the answer is the documents held in that order. The weights are not set by hand: they are fitted by a
conditional logit (for each gold document of a question against all the question's other documents,
maximise ``log(e^{s_gold} / Σ e^{s})``, L2-regularised; convex, solved by Newton's method) on
questions generated from the collections themselves (:mod:`c1.train.extractive`), and written to a
JSON file by one command: ``python bench/ranker_fit.py`` for the weights that ship
(``c1/data/ranker.json``), ``c1 train ranker -c NAME`` for a collection's own
(``<collection>/ranker.json``, used for that collection from then on).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from c1.errors import C1Error

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "ranker.json"
FILE_NAME = "ranker.json"
"""A collection's own weights, in its folder (``c1 train ranker``)."""

EVIDENCE_FEATURES = ("sim", "anchor", "named", "rare", "phrase", "keywords", "identity", "link", "back", "bridge", "miss")
PLACE_FEATURES = ("own", "first", "top")
FEATURES = EVIDENCE_FEATURES + PLACE_FEATURES
"""``own``: the question's own search found it; ``first``: it is that search's first document; ``top``:
it is among that search's first ``k`` (the answer's size)."""


class RankerError(C1Error):
    """A weights file that cannot be used (missing, not JSON, or without the features' weights)."""


@dataclass(frozen=True)
class RankerWeights:
    weights: dict[str, float]
    source: str = "shipped"
    fitted: dict = field(default_factory=dict)
    """How they were fitted: the command, the kinds and their question counts, the regularisation."""

    def score(self, x: dict[str, float]) -> float:
        return sum(w * x.get(f, 0.0) for f, w in self.weights.items())

    def to_json(self) -> dict:
        return {"model": "conditional-logit", "features": list(self.weights), "weights": self.weights,
                "fitted": self.fitted}


def features(evidence: dict[str, float], own_rank: int | None, k: int) -> dict[str, float]:
    """The ranker's inputs for one document: its evidence features and its place in the question's own
    search (``own_rank``: 1-based, None when that search did not return it)."""
    x = {f: float(evidence.get(f, 0.0)) for f in EVIDENCE_FEATURES}
    x["own"] = float(own_rank is not None)
    x["first"] = float(own_rank == 1)
    x["top"] = float(own_rank is not None and own_rank <= k)
    return x


def order(weights: RankerWeights, feats: dict[str, dict[str, float]], own: list[str], k: int) -> list[str]:
    """The documents of ``feats`` best first; ties keep the order of the question's own search."""
    place = {d: i for i, d in enumerate(own, start=1)}
    score = {d: weights.score(features(f, place.get(d), k)) for d, f in feats.items()}
    return sorted(feats, key=lambda d: (-score[d], place.get(d, len(place) + 1)))


_loaded: dict[tuple[str, int, tuple[str, ...]], RankerWeights] = {}


def load(path: str | Path | None = None, shipped: Path = SHIPPED,
         features: tuple[str, ...] = FEATURES) -> RankerWeights:
    """The weights in ``path`` (default: the ``shipped`` ones) of ``features``; read once per version of
    the file."""
    path = Path(path) if path else shipped
    try:
        stamp = (str(path), path.stat().st_mtime_ns, features)
        if stamp in _loaded:
            return _loaded[stamp]
        data = json.loads(path.read_text())
        weights = {f: float(data["weights"][f]) for f in features}
    except OSError as exc:
        raise RankerError(f"cannot read the ranker weights {path}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise RankerError(f"{path} is not a ranker weights file (c1 train ranker writes one): {exc}") from None
    got = _loaded[stamp] = RankerWeights(weights, "shipped" if path == shipped else str(path), data.get("fitted", {}))
    return got


def own_weights(collection_dir: Path) -> RankerWeights | None:
    """The collection's own weights (``c1 train ranker``), or None where it has none."""
    own = Path(collection_dir) / FILE_NAME
    return load(own) if own.is_file() else None


# --- fitting -----------------------------------------------------------------------------------

@dataclass
class Group:
    """One question's documents: their feature rows and which are gold; ``weight``: its share of the fit."""
    rows: list[dict[str, float]]
    gold: list[bool]
    weight: float = 1.0


def fit(groups: list[Group], l2: float = 1.0, prior: dict[str, float] | None = None,
        features: tuple[str, ...] = FEATURES) -> dict[str, float]:
    """Weights of :data:`FEATURES` by a conditional logit: each gold document against its question's
    other documents (``features``: the row keys fitted, default :data:`FEATURES`). Groups without both a
    gold and a non-gold document carry no information and are left out. ``prior``: weights the fit is drawn towards (the L2 penalty is on the distance from them;
    default: zero) — a collection's own fit starts from the shipped weights and moves as far as its
    questions show."""
    import numpy as np

    mean = np.array([(prior or {}).get(f, 0.0) for f in features])

    sets = []
    for g in groups:
        gold = [i for i, y in enumerate(g.gold) if y]
        other = [i for i, y in enumerate(g.gold) if not y]
        if gold and other:
            x = np.array([[r.get(f, 0.0) for f in features] for r in g.rows])
            sets.append((x, gold, other, g.weight))
    beta = mean.copy()

    def loss(b):
        total = 0.5 * l2 * (b - mean) @ (b - mean)
        for x, gold, other, w in sets:
            s = x @ b
            for i in gold:
                idx = [i] + other
                m = s[idx].max()
                total += w * (m + math.log(np.exp(s[idx] - m).sum()) - s[i])
        return total

    current = loss(beta)
    while True:  # damped Newton on a convex loss: ends when a step no longer lowers it (no count of steps needed)
        grad = l2 * (beta - mean)
        hess = l2 * np.eye(len(features))
        for x, gold, other, w in sets:
            s = x @ beta
            for i in gold:
                idx = [i] + other
                z = np.exp(s[idx] - s[idx].max())
                p = z / z.sum()
                xs = x[idx]
                mu = p @ xs
                grad = grad + w * (mu - x[i])
                hess = hess + w * ((xs * p[:, None]).T @ xs - np.outer(mu, mu))
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-4:  # damped Newton: halve the step until the loss goes down
            trial = beta - t * step
            value = loss(trial)
            if value <= current:
                break
            t /= 2
        else:
            break
        beta, gain, current = trial, current - value, value
        if gain < 1e-9:
            break
    return {f: round(float(b), 4) for f, b in zip(features, beta)}


def save(weights: RankerWeights, path: Path) -> None:
    """Write ``weights`` to ``path`` (atomically: a reader never sees half a file)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(weights.to_json(), indent=1) + "\n")
    tmp.replace(path)
