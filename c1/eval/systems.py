"""The systems an eval compares: agent policies (``policy@N``: N parallel runs fused with RRF) and
single-shot baselines."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from c1.agent.policies import NAMES as POLICIES
from c1.config import Settings
from c1.errors import C1Error
from c1.eval.baselines import BASELINES


@dataclass(frozen=True)
class System:
    label: str
    kind: str
    """``agent`` or one of ``BASELINES``."""
    policy: str | None = None
    parallel: int = 1


def parse_systems(spec: str, default_parallel: int = 1) -> list[System]:
    """``"builtin,builtin@4,bm25,dense,hybrid"`` → systems. ``policy@N`` runs N parallel agent runs
    fused with RRF; a policy without ``@N`` gets ``default_parallel`` (``--parallel``)."""
    out: dict[str, System] = {}
    for raw in spec.split(","):
        item = raw.strip().lower()
        if not item:
            continue
        name, _, n = item.partition("@")
        if name in BASELINES:
            if n:
                raise C1Error(f"--systems: {item!r}: @N (parallel runs) applies to agent policies, not baselines")
            system = System(name, name)
        elif name in POLICIES:
            try:
                parallel = int(n) if n else default_parallel
            except ValueError:
                raise C1Error(f"--systems: {item!r}: expected {name}@N with N a number") from None
            if not 1 <= parallel <= 32:
                raise C1Error(f"--systems: {item!r}: parallel runs must be 1..32")
            system = System(name if parallel == 1 else f"{name}@{parallel}", "agent", name, parallel)
        else:
            raise C1Error(f"--systems: unknown system {name!r} (policies: {', '.join(POLICIES)}; "
                          f"baselines: {', '.join(BASELINES)}; policy@N for parallel runs)")
        out.setdefault(system.label, system)
    if not out:
        raise C1Error("--systems is empty")
    return list(out.values())


def resolve_policies(settings: Settings, systems: list[System]) -> tuple[dict, list[System]]:
    """Choose each agent system's policy once (``auto`` becomes what it resolves to)."""
    from c1.agent.policies import choose_policy

    choices, out = {}, []
    for s in systems:
        if s.kind != "agent":
            out.append(s)
            continue
        choice = choose_policy(dataclasses.replace(settings, policy=s.policy, parallel=s.parallel))
        if s.policy == "auto":
            label = choice.name if s.parallel == 1 else f"{choice.name}@{s.parallel}"
            s = System(label, "agent", choice.name, s.parallel)
        if s.label in choices:
            continue
        choices[s.label] = choice
        out.append(s)
    return choices, out
