"""The live view, rendered to a recorded console from a scripted event stream."""

import re

from rich.console import Console

from c1.agent import events as ev
from c1.terminal.live_view import LiveView, budget_bar


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


def test_view_strikes_pruned_chunks():
    console = Console(record=True, width=100, force_terminal=True, color_system="standard")
    view = LiveView(console, parallel=1)
    for e in _stream(0):
        view(e)
    styled = console.export_text(styles=True)
    struck = [line for line in styled.splitlines() if "✂" in line]
    assert struck and all(re.search(r"\x1b\[(?:\d+;)*9[;m]", line) for line in struck), "pruned chunks are struck out"


def test_each_result_block_is_labelled_with_its_call():
    """Two calls of a turn answer in a row: each block says which call it answers."""
    refs = [ev.ChunkRef("aaaabbbb_0", "aaaabbbb", "Rush (band)", 0.8, None, 50)]
    text = _render([
        ev.RunStarted(0, "q", "builtin", None, 1000),
        ev.TurnStarted(0, 1, 100, 1000),
        ev.ToolCalled(0, 1, "c1", "search_corpus", {"query": "Neil Peart"}, "search_corpus"),
        ev.ToolCalled(0, 1, "c2", "search_corpus", {"query": "Modern Drummer"}, "search_corpus"),
        ev.ToolResult(0, 1, "c1", "search_corpus", refs, tool="search_corpus"),
        ev.ToolResult(0, 1, "c2", "search_corpus", [], None, "No new chunks match", "search_corpus"),
    ])
    assert "← search_corpus(query='Neil Peart')  1 chunk" in text
    assert "← search_corpus(query='Modern Drummer')  No new chunks match" in text


def _parallel(runs: int, terminal: bool = False, width: int = 120):
    console = Console(record=True, width=width, force_terminal=terminal, color_system="standard" if terminal else None)
    view = LiveView(console, parallel=runs)
    for run in range(runs):
        for e in _stream(run):
            view(e)
    return console


def test_parallel_runs_show_one_compact_panel_each():
    """--parallel 4: a panel per run (its turn, budget, calls with what came back, how it ended),
    not a log line per event of every run."""
    text = _parallel(4).export_text()
    for run in range(4):
        assert f"run {run} · turn 2" in text
    assert text.count("search_corpus(query='drummer") == 4, "each run's call once, in its panel"
    assert text.count("→ 8") == 4, "the call's line says what came back"
    assert text.count("done (answer): 1 documents") == 4
    log_lines = len(_render(_stream(0)).splitlines())
    assert len(text.splitlines()) < 2 * log_lines, "four runs take less room than two logs"


def test_the_run_colour_stays_on_its_tag():
    """The run's colour marks its label only; the calls and results keep their own styles."""
    styled = _parallel(2, terminal=True).export_text(styles=True)
    lines = [line for line in styled.splitlines() if "search_corpus" in line or "grep_corpus" in line]
    assert lines and not any("\x1b[36m" in line or ";36m" in line for line in lines), lines
    assert any("run 0" in line and "36" in line for line in styled.splitlines()), "the label is coloured"
    assert re.search(r"\x1b\[(?:\d+;)*36mrun 0\x1b\[0m", styled), "the colour (cyan) wraps the label itself"


def test_budget_bar_colours_by_threshold():
    assert budget_bar(100, 1000).spans[0].style == "green"
    assert budget_bar(600, 1000).spans[0].style == "yellow"
    assert budget_bar(950, 1000).spans[0].style == "red"
    assert str(budget_bar(1000, 1000)).count("█") == 24


def _long_titled(run=0):
    refs = [ev.ChunkRef("doc0abc_3", "doc0abc", "Annual Report on Form 10-K for the fiscal year ended December 31, 2017",
                        1.34, 113, 50)]
    return [
        ev.RunStarted(run, "How many employees did Coca-Cola have in 2017?", "builtin", None, 32768),
        ev.TurnStarted(run, 1, 120, 32768),
        ev.ToolCalled(run, 1, "c1", "search_corpus", {"query": "How many employees did Coca-Cola have in 2017?"},
                      "search_corpus"),
        ev.ToolResult(run, 1, "c1", "search_corpus", refs, tool="search_corpus"),
        ev.ToolCalled(run, 1, "c2", "read_document", {"doc_id": "doc0abc"}, "read_document"),
        ev.ToolResult(run, 1, "c2", "read_document", [ev.ChunkRef("doc0abc_9", "doc0abc", "Annual Report", 0.71, 11, 40)],
                      tool="read_document"),
        ev.Finished(run, [{"id": "doc0abc"}], {"turns": 1, "tool_calls": 2, "pruned": 0, "seconds": 0.5}, "answer"),
    ]


def test_parallel_panels_keep_each_call_on_one_line_at_160_columns():
    """Issue 20: at 160 columns the score went alone to the next line and titles were cut mid-word."""
    console = Console(record=True, width=160, force_terminal=False, color_system=None)
    view = LiveView(console, parallel=2)
    for run in range(2):
        for e in _long_titled(run):
            view(e)
    text = console.export_text()
    lines = text.splitlines()
    assert all(len(line) <= 160 for line in lines)
    assert not any(re.fullmatch(r"[│\s]*\d\.\d\d[│\s]*(?:[│\s]*\d\.\d\d[│\s]*)?", line) for line in lines), \
        "no score alone on a line"
    calls = [line for line in lines if "search_corpus(" in line]
    assert len(calls) == 1 and calls[0].count("→ 1") == 2, "each run's call and what came back on one line"
    title = "Annual Report on Form 10-K for the fiscal year ended December 31, 2017".split()
    cuts = {" ".join(title[:n]) + "…" for n in range(1, len(title))}
    shown = re.findall(r"0\.89  (\S.*?…)", calls[0])
    assert len(shown) == 2 and set(shown) <= cuts, "a title is cut after a whole word"


def test_scores_are_shown_on_one_scale():
    """A search's scores carry up to Corpus.W_DOC of document evidence: shown divided, never above 1.00."""
    text = _render(_long_titled())
    assert "1.34" not in text
    assert "doc0abc_3 0.89" in text, "1.34 / 1.5"
    assert "doc0abc_9 0.71" in text, "read_document's similarity is already in [0, 1]"


def test_the_kept_passages_are_marked_and_fit_80_columns():
    console = Console(record=True, width=80, force_terminal=False, color_system=None)
    docs = [{"id": "doc0abc", "title": "Annual Report on Form 10-K for the fiscal year ended December 31, 2017 " * 2,
             "passages": [{"text": "x", "span": [0, 1], "page": 11, "score": 0.93, "chunk": "doc0abc_9"},
                          {"text": "y", "span": [5, 9], "page": 113, "score": 0.61, "chunk": "doc0abc_80"}]},
            {"id": "other", "title": "Other", "passages": []}]
    LiveView(console).kept(docs)
    text = console.export_text()
    assert "kept 2 passages of 1 documents" in text
    marked = [line for line in text.splitlines() if "✓" in line]
    assert len(marked) == 2 and all(len(line) <= 80 for line in text.splitlines())
    assert "p.11 0.93 doc0abc_9" in marked[0] and "p.113 0.61 doc0abc_80" in marked[1]


def test_a_kept_passage_that_rounds_to_nothing_is_not_shown_as_zero():
    console = Console(record=True, width=80, force_terminal=False, color_system=None)
    docs = [{"id": "d", "title": "Merger Agreement", "passages": [
        {"text": "x", "span": [0, 1], "page": None, "score": 0.0041, "chunk": "d_3"},
        {"text": "y", "span": [4, 6], "page": None, "score": 0.02, "chunk": "d_7"}]}]
    LiveView(console).kept(docs)
    text = console.export_text()
    assert "<0.01 d_3" in text and "0.02 d_7" in text and "0.00" not in text


def test_a_call_repeated_in_a_run_is_numbered():
    """The built-in policy pages the question's own search (the same call, its unseen chunks): the view
    numbered nothing, so six identical lines read as a loop. The second and later are marked #2, #3."""
    refs = [ev.ChunkRef("docaabc_0", "docaabc", "Title", 0.9, 3, 50)]
    events = [ev.RunStarted(0, "q", "builtin", None, 1000)]
    for turn in (1, 2, 3):
        events += [ev.TurnStarted(0, turn, 100 * turn, 1000),
                   ev.ToolCalled(0, turn, f"s{turn}", "search_corpus", {"query": "Adobe cash flow"}),
                   ev.ToolResult(0, turn, f"s{turn}", "search_corpus", refs)]
    events += [ev.ToolCalled(0, 3, "o", "search_corpus", {"query": "Adobe"}),
               ev.ToolResult(0, 3, "o", "search_corpus", refs)]
    for parallel in (1, 2):
        done = [ev.Finished(run, [], {"turns": 3}, "answer") for run in range(parallel)]
        text = _render(events + done, parallel=parallel)
        assert ") #2" in text and ") #3" in text and "#4" not in text, text
        assert "query='Adobe') #" not in text and "query='Adobe')" in text
    assert "search_corpus(query='Adobe cash flow') #2" in _render(events)
