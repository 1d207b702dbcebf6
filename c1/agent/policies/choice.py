"""What choosing a policy gives: its name, the factory of one policy per parallel run, and why it was chosen."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from c1.agent.policy import Policy


@dataclass
class PolicyChoice:
    name: str
    factory: Callable[[int], Policy]
    note: str
    """One line saying which policy runs and why; shown on stderr and in --json stats."""
    warning: str | None = None
    """Set when a model server the user named could not be used: shown on stderr even with
    ``--quiet``, and in --json stats as ``policy_warning``."""
    model: str | None = None
    """The model the policy asks the server for (None: no model)."""
