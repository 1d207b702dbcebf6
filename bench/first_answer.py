#!/usr/bin/env python3
"""Time to first answer: a fresh `c1 index` of the 21 filings in the background, a known-item question
asked every second meanwhile.

The filings of ``financebench/pdfs`` and ``sec`` are pooled (3,841 + 127 pages) and indexed into a new
home by a whole ``c1 index`` process; from its start, a whole ``c1 search QUESTION --json`` process
(through the home's resident process, as a user's would be) is run every ``--interval`` seconds until
the question's filing (its FinanceBench ``doc_name``) comes back ranked in the top ``-k`` documents.
Printed: seconds from the start of ``c1 index`` to that first right answer, to the end of the keyword
phase (the index's own ``lexical_seconds``) and to the full index, the CPU seconds of ``c1 index`` and
its reader processes at the answer and at the end of the keyword phase, the chunks, the searches made and
how many answered, and the load average (the machine is shared: run it under ``nice``).

The default question is the one whose filing the walk reads last among the FinanceBench filings
(Walmart's FY2018 10-K): the slowest known item to become findable.

    nice -n 10 python bench/first_answer.py
    nice -n 10 python bench/first_answer.py --doc ADOBE_2017_10K -k 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import C1, c1_env, load, report  # noqa: E402
from bench.textpool import shared_data  # noqa: E402


def question_for(doc: str) -> str:
    for line in (shared_data() / "financebench" / "financebench_dev_18.jsonl").open(encoding="utf-8"):
        record = json.loads(line)
        if record["doc_name"] == doc:
            return record["question"]
    raise SystemExit(f"no FinanceBench question about {doc}")


def right(stdout: str, doc: str, k: int) -> bool:
    try:
        docs = json.loads(stdout)["documents"][:k]
    except (ValueError, KeyError):
        return False
    return any(Path(d["path"]).stem == doc for d in docs)


def manifest_query(home: Path, sql: str):
    """One row from the collection's manifest (read-only), or None while there is none."""
    import sqlite3

    path = home / "collections" / "default" / "manifest.sqlite"
    if not path.exists():
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchone()
    except sqlite3.Error:
        return None
    finally:
        db.close()


def _stat(pid: int | str) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process (Linux /proc), threads included, and of its child
    processes (the reader processes of `c1 index`), running or ended."""
    fields = _stat(pid)
    if fields is None:
        return None
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    for entry in os.listdir("/proc"):
        child = _stat(entry) if entry.isdigit() else None
        if child is not None and int(child[1]) == pid:
            ticks += int(child[11]) + int(child[12])
    return round(ticks / os.sysconf("SC_CLK_TCK"), 2)


def embedding_started(home: Path) -> bool:
    """Whether the run is embedding, i.e. its keyword phase is over (the manifest's ``embedding`` flag)."""
    row = manifest_query(home, "SELECT value FROM meta WHERE key='embedding'")
    return bool(row and row[0] == "1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--doc", default="WALMART_2018_10K", help="the FinanceBench filing asked about")
    ap.add_argument("-k", type=int, default=1, help="right: the filing among the first K documents (default 1)")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between two searches")
    ap.add_argument("--timeout", type=float, default=3600.0, help="give up after this many seconds")
    ap.add_argument("--until", choices=["full", "answer"], default="full",
                    help="answer: stop `c1 index` (SIGTERM) once the right answer came and every file is searchable "
                         "by keywords; the full index is then not timed")
    args = ap.parse_args(argv)
    data = shared_data()
    folders = [data / "financebench" / "pdfs", data / "sec"]
    question = question_for(args.doc)
    home = Path(tempfile.mkdtemp(prefix="c1-first-answer-"))
    env = c1_env(C1_HOME=str(home))
    load_before = load()
    started = time.monotonic()
    index = subprocess.Popen([*C1, "index", *map(str, folders), "--json", "--quiet"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first_answer = keywords_seen = index_cpu_at_answer = keywords_cpu = None
    first_result: dict = {}
    asked = answered = 0
    stopped = False
    try:
        while time.monotonic() - started < args.timeout:
            tick = time.monotonic()
            if first_answer is None:
                search = subprocess.run([*C1, "search", question, "--json", "--quiet", "-k", str(max(args.k, 5))],
                                        env=env, capture_output=True, text=True)
                asked += 1
                answered += search.returncode in (0, 1) and search.stdout.strip() != ""
                if search.returncode == 0 and right(search.stdout, args.doc, args.k):
                    first_answer = time.monotonic() - started
                    first_result = json.loads(search.stdout)
                    index_cpu_at_answer = cpu_seconds(index.pid)
            if keywords_seen is None and embedding_started(home):
                keywords_seen = time.monotonic() - started
                keywords_cpu = cpu_seconds(index.pid)
            if index.poll() is not None:
                if first_answer is None and index.returncode == 0:
                    continue  # one more question, on the full index
                break
            if args.until == "answer" and first_answer is not None and keywords_seen is not None:
                index.terminate()  # SIGINT may be ignored (a background job); the run stops where it is
                stopped = True
                break
            time.sleep(max(0.0, args.interval - (time.monotonic() - tick)))
        out, err = index.communicate(timeout=max(1.0, args.timeout - (time.monotonic() - started)))
        full = time.monotonic() - started
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        if stopped:
            chunks, = manifest_query(home, "SELECT COUNT(*) FROM chunks")
            documents, = manifest_query(home, "SELECT COUNT(*) FROM docs")
            built = {"total_chunks": chunks, "documents": documents, "lexical_seconds": keywords_seen}
        elif index.returncode != 0:
            raise SystemExit(f"c1 index failed (exit {index.returncode}): {err.strip()[-400:]}")
        else:
            built = json.loads(out)
    finally:
        if index.poll() is None:
            index.kill()
        from c1.config import load_settings
        from c1.daemon.client import control

        control(load_settings().with_flags(home=str(home)), "stop")
        shutil.rmtree(home, ignore_errors=True)
    embedding = first_result.get("stats", {}).get("embedding")
    result = {
        "doc": args.doc, "k": args.k,
        "first_answer_s": None if first_answer is None else round(first_answer, 1),
        "keywords_complete_s": round(built["lexical_seconds"], 1),
        "full_index_s": None if stopped else round(full, 1),
        "chunks": built["total_chunks"], "documents": built["documents"],
        "embedded_at_first_answer": embedding,
        "searches": asked, "searches_answered": answered,
        "index_cpu_s_at_first_answer": index_cpu_at_answer, "index_cpu_s_at_keywords_complete": keywords_cpu,
        "cpu_s_all_processes": round(children.ru_utime + children.ru_stime, 1),
        "load_average_1m": [load_before, load()],
    }
    rows = [
        ("question about", f"{args.doc} (right: in the top {args.k})"),
        ("first right answer", "never" if first_answer is None else f"{first_answer:.1f} s after `c1 index` started"
         + (f" ({embedding['embedded']} of {embedding['chunks']} chunks embedded then)" if embedding else "")),
        ("every file searchable by keywords", f"{built['lexical_seconds']:.1f} s"),
        ("full index (embedded)", ("not timed (--until answer)" if stopped else f"{full:.1f} s")
         + f", {built['total_chunks']} chunks, {built['documents']} documents"),
        ("searches", f"{asked} asked, {answered} answered"),
        ("CPU of c1 index at the first answer", f"{index_cpu_at_answer} s (at the end of its keyword phase: "
         f"{keywords_cpu} s)"),
    ]
    report(rows, {"bench": "first_answer", **result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
