"""Choosing the policy: ``builtin`` (no model), ``llm`` (an OpenAI-compatible server), or ``auto``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from c1.agent.policy import Policy
from c1.config import Settings
from c1.errors import C1Error


@dataclass
class PolicyChoice:
    name: str
    factory: Callable[[int], Policy]
    note: str
    """One line saying which policy runs and why; shown on stderr and in --json stats."""


def _builtin(settings: Settings, why: str) -> PolicyChoice:
    from c1.agent.policies.builtin import BuiltinPolicy

    return PolicyChoice("builtin", lambda i: BuiltinPolicy(max_docs=settings.max_docs, variant=i),
                        f"using the built-in policy (no model): {why}")


def choose_policy(settings: Settings) -> PolicyChoice:
    if settings.policy not in ("auto", "llm", "builtin"):
        raise C1Error(f"--policy must be auto, llm or builtin, not {settings.policy!r}")
    if settings.policy == "builtin":
        return _builtin(settings, "asked for with --policy builtin")
    if not settings.base_urls:
        if settings.policy == "llm":
            raise C1Error("--policy llm needs a model server: pass --base-url http://host:port/v1")
        return _builtin(settings, "no model server configured (--base-url)")
    try:
        from c1.agent.policies import llm
    except ImportError:
        llm = None
    if llm is None:
        if settings.policy == "llm":
            raise C1Error("the llm policy is not available yet")
        return _builtin(settings, "the llm policy is not available yet")
    return llm.choose(settings, fallback=_builtin)
