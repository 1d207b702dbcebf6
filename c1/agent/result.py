"""The result of one search (``c1 search --json``), light enough to import where no search runs (a command
that gets its result from the resident process)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SearchResult:
    query: str
    policy: str
    model: str | None
    budget: int
    documents: list[dict]
    stats: dict
    runs: list[dict] = field(default_factory=list)
    trajectories: list[dict] = field(default_factory=list)
    plain: str | None = None
    """The plain output, rendered by the resident process at the width the command asked for (the command
    then imports no renderer: c1/commands/search.py)."""

    def to_json(self) -> dict:
        return {
            "query": self.query,
            "policy": self.policy,
            "model": self.model,
            "budget": self.budget,
            "documents": self.documents,
            "stats": self.stats,
        }
