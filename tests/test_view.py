"""The live view, rendered to a recorded console from a scripted event stream."""

from rich.console import Console

from c1.agent import events as ev
from c1.view import LiveView, budget_bar


def _render(events, parallel=1):
    console = Console(record=True, width=100, force_terminal=False, color_system=None)
    view = LiveView(console, parallel=parallel)
    for e in events:
        view(e)
    return console.export_text()


def _stream(run=0, prune="prune_chunks"):
    refs = [ev.ChunkRef(f"doc{i}abc_0", f"doc{i}abc", f"Title {i}", 0.9 - i / 10, i or None, 50) for i in range(8)]
    return [
        ev.RunStarted(run, "who drummed?", "builtin", None, 1000),
        ev.TurnStarted(run, 1, 120, 1000),
        ev.ToolCalled(run, 1, "c1", "search_corpus", {"query": "drummer " * 30}),
        ev.ToolResult(run, 1, "c1", "search_corpus", refs),
        ev.ToolCalled(run, 1, "c2", "grep_corpus", {"pattern": "(("}),
        ev.ToolResult(run, 1, "c2", "grep_corpus", [], "invalid regular expression '((': missing )"),
        ev.BudgetWarning(run, 1, 640, 1000, "soft"),
        ev.TurnStarted(run, 2, 640, 1000),
        ev.ToolCalled(run, 2, "c3", prune, {"chunk_ids": ["doc1abc_0"]}, "prune_chunks"),
        ev.ToolResult(run, 2, "c3", prune, [], None, "freed 50 tokens", "prune_chunks"),
        ev.ChunksPruned(run, 2, refs[1:2], 50),
        ev.Finished(run, [{"id": "doc0abc"}], {"turns": 3, "tool_calls": 3, "pruned": 1, "seconds": 0.5}, "answer"),
    ]


def test_view_shows_calls_chunks_prunes_and_budget():
    text = _render(_stream())
    assert "searching with builtin — who drummed?" in text
    assert "turn 1" in text and "120/1,000" in text and "640/1,000" in text
    assert "search_corpus(query='drummer" in text and "…" in text, "long arguments are cut"
    assert "doc0abc_0 0.90  Title 0" in text and "doc5abc_0" in text
    assert "… and 2 more chunks" in text, "long result lists are summarised"
    assert "✗ invalid regular expression" in text
    assert "context past the soft limit" in text
    assert "✂ doc1abc_0  Title 1" in text and "pruned 1 chunks" in text and "freed 50 tokens" in text
    assert text.count("freed") == 1, "the prune is reported once"


def test_view_knows_a_renamed_prune_tool():
    """--tool-names prune_chunks=DropChunks: the view reads the harness name, not the model's."""
    text = _render(_stream(prune="DropChunks"))
    assert "DropChunks(chunk_ids=['doc1abc_0'])" in text
    assert text.count("freed") == 1, "the prune is reported once, whatever the model calls it"
    assert "done (answer): 1 documents, 3 turns" in text


def test_view_tags_parallel_runs_and_strikes_pruned():
    console = Console(record=True, width=100, force_terminal=True, color_system="standard")
    view = LiveView(console, parallel=2)
    for e in _stream(0) + _stream(1):
        view(e)
    plain = console.export_text(clear=False)
    assert "[run 0] turn 1" in plain and "[run 1] turn 1" in plain
    styled = console.export_text(styles=True)
    struck = [line for line in styled.splitlines() if "✂" in line]
    assert struck and all(";9;" in line or "[9" in line for line in struck), "pruned chunks are struck out"


def test_budget_bar_colours_by_threshold():
    assert budget_bar(100, 1000).spans[0].style == "green"
    assert budget_bar(600, 1000).spans[0].style == "yellow"
    assert budget_bar(950, 1000).spans[0].style == "red"
    assert str(budget_bar(1000, 1000)).count("█") == 24
