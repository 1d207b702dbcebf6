"""The policies, registered once: ``auto``, ``llm`` (an OpenAI-compatible server), ``builtin`` (no model).

``POLICIES`` is the one list: the CLI's help, the search API's validation and eval's system parser
read their names from it. Each entry chooses its policy for a run's settings; the modules behind
them are imported only then (``c1 --help`` stays light).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from c1.agent.policies.choice import PolicyChoice
from c1.config import Settings
from c1.errors import C1Error

if TYPE_CHECKING:  # the policies' own modules (and the context they import) load only when chosen
    from c1.agent.policy import Policy


@dataclass(frozen=True)
class PolicySpec:
    name: str
    summary: str
    choose: Callable[[Settings], PolicyChoice]


def _builtin(settings: Settings, why: str, warning: str | None = None) -> PolicyChoice:
    from c1.agent.policies.builtin import BuiltinPolicy

    from c1.retrieval.ranker import own_weights

    ranker = own_weights(settings.collection_dir)  # None: the shipped weights, read when first needed
    return PolicyChoice("builtin", lambda i: BuiltinPolicy.for_budget(settings.budget, max_docs=settings.max_docs, variant=i,
                                                                      ranker=ranker),
                        f"using the built-in policy (no model): {why}", warning)


def _llm_module():
    try:
        from c1.agent.policies import llm
    except ImportError as exc:
        raise C1Error(f"the llm policy cannot be loaded: {exc}") from None
    return llm


def _choose_builtin(settings: Settings) -> PolicyChoice:
    return _builtin(settings, "asked for with --policy builtin")


def _choose_llm(settings: Settings) -> PolicyChoice:
    if not settings.base_urls:
        raise C1Error("--policy llm needs a model server: pass --base-url http://host:port/v1")
    return _llm_module().choose(settings, fallback=_builtin)


def _choose_auto(settings: Settings) -> PolicyChoice:
    if not settings.base_urls:
        return _builtin(settings, "no model server configured (--base-url)")
    try:
        llm = _llm_module()
    except C1Error as exc:
        return _builtin(settings, str(exc), warning=f"{exc}; using the built-in policy")
    return llm.choose(settings, fallback=_fallback)


def _fallback(settings: Settings, why: str) -> PolicyChoice:
    """``auto`` with a named server that does not answer: the built-in policy, loudly."""
    return _builtin(settings, why, warning=f"the model server did not answer ({why}); using the built-in policy")


POLICIES: dict[str, PolicySpec] = {s.name: s for s in (
    PolicySpec("auto", "a model server when one is configured (--base-url) and answers, else builtin", _choose_auto),
    PolicySpec("llm", "an OpenAI-compatible model server (--base-url)", _choose_llm),
    PolicySpec("builtin", "the algorithmic agent: no model", _choose_builtin),
)}
NAMES = tuple(POLICIES)


def names_text() -> str:
    """``auto, llm or builtin``."""
    return ", ".join(NAMES[:-1]) + f" or {NAMES[-1]}"


def choose_policy(settings: Settings) -> PolicyChoice:
    spec = POLICIES.get(settings.policy)
    if spec is None:
        raise C1Error(f"--policy must be {names_text()}, not {settings.policy!r}")
    return spec.choose(settings)
