"""``c1 search --batch FILE``: many questions, one process, one JSON result per line in input order.

Input (a file, or ``-`` for stdin), read as it comes: one question per line, or JSON lines
``{"id": ..., "query": "..."}`` (a line that starts with ``{``). Blank lines are skipped. Output:
for each question, ``{"id": ..., <the c1 search --json object>}`` — the JSON line's ``id``, else the
line number — in input order, each printed as soon as it and every one before it are done.
``--jobs N`` questions run at once on one open collection (the search API's model: threads share
the corpus, ONNX and tantivy release the GIL). A line that cannot be read (bad JSON, no ``query``)
or a question that fails gets ``{"id", "error"}`` in its place, a warning on stderr, and the command
exits 2 at the end; the other questions are answered.
"""

from __future__ import annotations

import io
import json
import queue
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from c1.config import Settings, query_problem
from c1.terminal.console import emit_json, err, note, warn
from c1.errors import C1Error

IN_FLIGHT_PER_JOB = 4
"""Questions read ahead per job: enough to keep every job busy, few enough to stream a long input."""


@dataclass
class Question:
    id: object
    query: str | None
    error: str | None = None


def read_questions(lines: Iterable[str]) -> Iterator[Question]:
    """Questions from plain or JSON lines; a bad line is a Question with ``error``."""
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        if not text.startswith("{"):
            problem = query_problem(text)
            yield Question(number, None, f"line {number}: {problem}") if problem else Question(number, text)
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            yield Question(number, None, f"line {number}: not valid JSON ({exc.msg})")
            continue
        ident = record.get("id", number)
        query = record.get("query")
        if not isinstance(query, str) or not query.strip():
            yield Question(ident, None, f'line {number}: a JSON line needs "query", a non-empty string')
        elif problem := query_problem(query.strip()):
            yield Question(ident, None, f"line {number}: {problem}")
        else:
            yield Question(ident, query.strip())


def open_input(source: str):
    if source == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    try:
        return open(source, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise C1Error(f"--batch {source}: no such file") from None
    except IsADirectoryError:
        raise C1Error(f"--batch {source}: is a directory") from None
    except OSError as exc:
        raise C1Error(f"--batch {source}: {exc.strerror}") from None


def run_batch_command(settings: Settings, source: str, *, jobs: int, quiet: bool) -> int:
    from c1.retrieval.corpus import Corpus
    from c1.agent.policies import choose_policy
    from c1.agent.search import search_with

    stream = open_input(source)
    corpus = Corpus(settings)
    try:
        choice = choose_policy(settings)
        if not quiet:
            note(f"c1: {choice.note}")
        if choice.warning:  # a model server the user named could not be used: said even with --quiet
            warn(choice.warning)
        for line in corpus.warnings:
            warn(line)

        def answer(q: Question) -> dict:
            try:
                result = search_with(corpus, settings, q.query, choice)
            except C1Error as exc:
                return {"id": q.id, "query": q.query, "error": str(exc)}
            return {"id": q.id, **result.to_json()}

        started = time.perf_counter()
        done = failed = 0
        pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="c1-batch")
        try:
            with stream:
                for row in _in_order(pool, answer, read_questions(stream), jobs * IN_FLIGHT_PER_JOB):
                    if "error" in row:
                        failed += 1
                        warn(f"question {row['id']}: {row['error']}" if "query" in row else row["error"])
                    done += 1
                    emit_json(row)
        except BaseException:  # Ctrl-C, a closed pipe: the questions not started yet are dropped
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        if not quiet:
            seconds = time.perf_counter() - started
            err().print(f"c1: {done} questions in {seconds:.1f}s ({done / seconds if seconds else 0:.1f}/s), "
                        f"{failed} failed", highlight=False)
    finally:
        corpus.close()
    return 2 if failed else 0


def _in_order(pool: ThreadPoolExecutor, answer, questions: Iterator[Question], window: int) -> Iterator[dict]:
    """Answers in input order, each as soon as it and those before it are done. A reader thread submits
    the questions as they arrive (at most ``window`` ahead of the output), so a slow input never holds
    back answers that are ready."""
    order: queue.Queue = queue.Queue(maxsize=window)
    end = object()

    def read() -> None:
        try:
            for q in questions:
                order.put(pool.submit(answer, q) if q.query else {"id": q.id, "error": q.error})
        except BaseException as exc:  # surfaced in the caller's thread
            order.put(exc)
        finally:
            order.put(end)

    threading.Thread(target=read, name="c1-batch-reader", daemon=True).start()
    while (item := order.get()) is not end:
        if isinstance(item, BaseException):
            raise item
        yield item.result() if isinstance(item, Future) else item
