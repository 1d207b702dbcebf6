"""``c1 status``: the rows of c1/store/status.py, as a table on stderr and lines (or JSON) on stdout."""

from __future__ import annotations

from c1.config import Settings
from c1.terminal.console import emit_json, err, escape, note, warn
from c1.errors import C1Error
from c1.store.status import collection_names, status_row


def run_status(settings: Settings, *, only: str | None, json_out: bool, evals: bool = False) -> int:
    names = collection_names(settings.home, evals=evals)
    hidden = 0 if evals else len(collection_names(settings.home, evals=True)) - len(names)
    if only:
        if only not in collection_names(settings.home, evals=True):
            raise C1Error(f"no index named {only!r} under {settings.home}: run `c1 index PATH` first")
        names, hidden = [only], 0
    if not names:
        more = f" (and {hidden} of `c1 eval`'s: c1 status --eval)" if hidden else ""
        raise C1Error(f"no collections under {settings.home}{more}: run `c1 index PATH` first")
    rows = None
    if settings.daemon:
        from c1.daemon.client import status_via_daemon

        rows = status_via_daemon(settings, names)
    if rows is None:
        rows = [status_row(settings, n) for n in names]
    code = 0 if all(r["consistent"] for r in rows) else 1  # a collection being indexed is consistent
    if json_out:
        emit_json({"home": str(settings.home), "collections": rows, "eval_collections_hidden": hidden})
        return code
    _table(settings, rows)
    if hidden:
        note(f"and {hidden} collection{'s' if hidden > 1 else ''} of `c1 eval` (c1 status --eval lists them)")
    for r in rows:
        if "error" in r:
            print(f"{r['collection']}\tBROKEN\t{r['error']}")
        else:
            state = r.get("being_indexed") or ("consistent" if r["consistent"] else "INCONSISTENT")
            if r.get("without_vectors") and not r.get("being_indexed"):
                state += f" ({r['without_vectors']} chunks by keywords only: `c1 index` embeds them)"
            print(f"{r['collection']}\t{r['documents']} documents\t{r['chunks']} chunks\t{state}")
    return code


def _table(settings: Settings, rows: list[dict]) -> None:
    from rich.table import Table

    table = Table(title=f"c1 collections in {escape(settings.home)}")
    for col in ("collection", "documents", "chunks", "embedder", "store", "consistent"):
        table.add_column(col)
    for r in rows:
        if "error" in r:
            table.add_row(escape(r["collection"]), "?", "?", "?", "?", "[red]BROKEN[/]")
            continue
        ok = "yes" if r["consistent"] else f"NO (chroma {r['chroma_chunks']}, lexical {r['lexical_chunks']})"
        table.add_row(escape(r["collection"]), str(r["documents"]), str(r["chunks"]), escape(r["embedder"] or "?"),
                      escape(r["store"] or "-"), ok)
    err().print(table)
    for r in rows:
        if "error" in r:
            warn(f"{r['collection']}: {r['error']}")
        elif r["problems"]:
            warn(f"{r['collection']}: {'; '.join(r['problems'])}")
