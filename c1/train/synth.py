"""``c1 train synth``: verified multi-hop retrieval tasks from an indexed collection.

For each seed chunk (a deterministic shuffle of the collection's chunks):

1. **explore** — the seed and its nearest chunks (c1's hybrid search on the seed's text) go to
   the teacher, which picks a *truth* (a short fact written in one of them), three supporting
   chunks with verbatim quotes, obfuscated clues (each resting on a quote, none repeating its
   chunk's words) and a question whose answer is the truth;
2. **verify** — :func:`c1.train.verify.verify_level`: quotes are looked up in their chunks, at
   least 2/3 must be found, a supporting chunk must contain the truth, the question and clues
   must not give it away. A failed level ends the seed (the reasons are logged);
3. **distractors** — chunks that c1's own search ranks high for a clue but that contain none of
   the truths so far and belong to no gold document;
4. **extend** — from a supporting chunk of the last level, entities it names (capitalised
   phrases, years) are searched for; chunks of *other* documents that mention one are the bridge
   candidates. The teacher picks one, names the link, a new truth in it, a new clue and a question
   that needs the whole chain. Verified the same way (plus: the link is in both chunks, no earlier
   truth is in the question). Repeated up to ``levels − 1`` times.

Each verified level is a task (see :mod:`c1.train.tasks` for the schema). A seed's tasks are
appended together when the seed is finished, and the seed is recorded in ``<out>.log.jsonl``
(kept or rejected, with reasons): an interrupted run resumes where it stopped, redoing at most
the seeds that were in flight.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from c1.train.settings import SynthConfig
from c1.train.tasks import SCHEMA_VERSION, TRUTH_TYPES, append_jsonl, iter_jsonl, validate_task
from c1.train.teacher import Teacher, TeacherError
from c1.train.verify import contains, normalise, quote_found, verify_level


@dataclass
class SynthReport:
    out: str
    seeds_total: int = 0
    seeds_done_before: int = 0
    seeds_run: int = 0
    seeds_kept: int = 0
    tasks_written: int = 0
    by_level: dict = field(default_factory=dict)
    rejections: Counter = field(default_factory=Counter)
    errors: int = 0
    seconds: float = 0.0
    usage: dict = field(default_factory=dict)
    teacher_model: str | None = None

    def to_json(self) -> dict:
        return {
            "out": self.out, "teacher_model": self.teacher_model, "seeds_total": self.seeds_total,
            "seeds_done_before": self.seeds_done_before, "seeds_run": self.seeds_run, "seeds_kept": self.seeds_kept,
            "tasks_written": self.tasks_written, "by_level": {str(k): v for k, v in sorted(self.by_level.items())},
            "rejections": dict(self.rejections.most_common()), "errors": self.errors,
            "seconds": round(self.seconds, 2), "usage": self.usage,
        }


# --- prompts -----------------------------------------------------------------------------------

EXPLORE_SYSTEM = """You write retrieval exercises. You get a few text chunks, each with an id. Build one exercise from them:
- truth: a short fact (a name, place, date, number or title, at most 6 words) written word for word in one of the chunks.
- supporting_items: {items} chunks (different ids) that together lead to the truth. For each, copy one or two exact sentences or phrases from that chunk as quotes (word for word, at least 5 words each).
- clues: one clue per supporting chunk. A clue describes what the chunk says in your own words: no names, titles or phrases from the chunk, and never the truth. Give the exact quote the clue rests on.
- question: a question whose answer is the truth and that needs the clues to answer. It must not contain the truth.
- truth_type: one of person, place, organization, date, number, title, event, other.
Answer with one JSON object only, shaped like this:
{{"truth": "...", "truth_type": "...", "supporting_items": [{{"chunk_id": "...", "quotes": ["..."]}}], "clues": [{{"chunk_id": "...", "quote": "...", "text": "..."}}], "question": "..."}}"""

EXTEND_SYSTEM = """You extend a retrieval exercise by one hop. You get the chunk the last hop ended in, and candidate chunks that mention something it names (the link).
Pick one candidate and write:
- chunk_id: the candidate's id.
- link: the name, title or date that appears in both chunks, copied exactly.
- truth: a new short fact (at most 6 words) written word for word in the candidate, different from the link and from earlier answers.
- quotes: one or two exact sentences or phrases from the candidate that state the new truth (word for word, at least 5 words each).
- clue: {"text": the candidate's fact in your own words (no names from it, never the truth), "quote": the exact phrase it rests on}.
- question: a question whose answer is the new truth, that needs the earlier clues and the link to answer, and names none of the earlier answers.
- truth_type: one of person, place, organization, date, number, title, event, other.
Answer with one JSON object only, shaped like this:
{"chunk_id": "...", "link": "...", "truth": "...", "truth_type": "...", "quotes": ["..."], "clue": {"text": "...", "quote": "..."}, "question": "..."}"""

_STR = {"type": "string"}

EXPLORE_SCHEMA = {
    "type": "object",
    "properties": {
        "truth": _STR,
        "truth_type": {"type": "string", "enum": list(TRUTH_TYPES)},
        "supporting_items": {"type": "array", "items": {
            "type": "object", "properties": {"chunk_id": _STR, "quotes": {"type": "array", "items": _STR}},
            "required": ["chunk_id", "quotes"]}},
        "clues": {"type": "array", "items": {
            "type": "object", "properties": {"chunk_id": _STR, "quote": _STR, "text": _STR},
            "required": ["chunk_id", "quote", "text"]}},
        "question": _STR,
    },
    "required": ["truth", "truth_type", "supporting_items", "clues", "question"],
}

EXTEND_SCHEMA = {
    "type": "object",
    "properties": {
        "chunk_id": _STR, "link": _STR, "truth": _STR,
        "truth_type": {"type": "string", "enum": list(TRUTH_TYPES)},
        "quotes": {"type": "array", "items": _STR},
        "clue": {"type": "object", "properties": {"text": _STR, "quote": _STR}, "required": ["text", "quote"]},
        "question": _STR,
    },
    "required": ["chunk_id", "link", "truth", "truth_type", "quotes", "clue", "question"],
}


def _show(chunk, title: str, limit: int) -> str:
    text = " ".join(chunk.text.split())
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0] + " …"
    return f'<chunk id="{chunk.id}" title="{title}">\n{text}\n</chunk>'


# --- entities for bridges ----------------------------------------------------------------------

_CAPS = re.compile(r"\b(?:[A-Z][\w'’.-]+|\d{4})(?:\s+(?:(?:of|the|de|van|von|and|for|&)\s+)*(?:[A-Z][\w'’.-]+|\d+))*")
_SKIP = {"The", "A", "An", "In", "On", "At", "It", "He", "She", "They", "His", "Her", "This", "That", "These",
         "Those", "As", "Of", "For", "By", "From", "With", "And", "But", "Or", "If", "After", "Before", "During",
         "Since", "Its", "Their", "There", "When", "Where", "Which", "Who", "What", "While", "Although"}


def entities(text: str, limit: int = 12) -> list[str]:
    """Capitalised phrases and years in ``text``, longest first, unique (cheap bridge candidates)."""
    seen: dict[str, None] = {}
    for m in _CAPS.finditer(text):
        phrase = m.group(0).strip(" .,'’")
        words = phrase.split()
        while words and words[0] in _SKIP:
            words = words[1:]
        phrase = " ".join(words)
        if len(phrase) >= 4 and phrase not in seen:
            seen[phrase] = None
    return sorted(seen, key=lambda p: (-len(p.split()), -len(p)))[:limit]


# --- the pipeline ------------------------------------------------------------------------------


class Synth:
    def __init__(self, corpus, teacher: Teacher, out: str | Path, config: SynthConfig = SynthConfig(),
                 collection: str = "default", on_progress: Callable[[dict], None] | None = None):
        self.corpus = corpus
        self.teacher = teacher
        self.out = Path(out)
        self.log = Path(str(self.out) + ".log.jsonl")
        self.cfg = config
        self.collection = collection
        self.on_progress = on_progress or (lambda info: None)
        self._lock = threading.Lock()
        self.report = SynthReport(str(self.out))

    # seeds ------------------------------------------------------------------------------
    def seed_chunks(self) -> list[str]:
        ids = sorted(c.id for c in self.corpus.store.manifest.iter_chunks() if len(c.text.strip()) >= self.cfg.min_chunk_chars)
        random.Random(self.cfg.seed).shuffle(ids)
        return ids

    def done_seeds(self) -> set[str]:
        return {r["seed_chunk"] for r in iter_jsonl(self.log) if "seed_chunk" in r}

    def run(self) -> SynthReport:
        started = time.perf_counter()
        self.report.teacher_model = self.teacher.resolve_model()
        done = self.done_seeds()
        seeds = [s for s in self.seed_chunks() if s not in done]
        self.report.seeds_done_before = len(done)
        todo = seeds[: max(0, self.cfg.seeds - len(done))]
        self.report.seeds_total = len(todo)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=max(1, self.cfg.concurrency), thread_name_prefix="c1-synth") as pool:
            futures = {pool.submit(self.one_seed, s): s for s in todo}
            for fut in as_completed(futures):
                seed = futures[fut]
                try:
                    tasks, reasons = fut.result()
                except TeacherError as exc:
                    tasks, reasons = [], [f"teacher: {exc}"]
                    self.report.errors += 1
                except Exception as exc:  # one odd answer must not end a long run: logged, counted
                    tasks, reasons = [], [f"error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"]
                    self.report.errors += 1
                self._finish_seed(seed, tasks, reasons)
        self.report.seconds = time.perf_counter() - started
        self.report.usage = self.teacher.usage.to_json()
        return self.report

    def _finish_seed(self, seed: str, tasks: list[dict], reasons: list[str]) -> None:
        with self._lock:
            if tasks:
                append_jsonl(self.out, tasks)
            append_jsonl(self.log, [{"seed_chunk": seed, "status": "kept" if tasks else "rejected",
                                       "levels": [t["level"] for t in tasks], "reasons": reasons[:8]}])
            r = self.report
            r.seeds_run += 1
            r.seeds_kept += bool(tasks)
            r.tasks_written += len(tasks)
            for t in tasks:
                r.by_level[t["level"]] = r.by_level.get(t["level"], 0) + 1
            for reason in reasons:
                r.rejections[_reason_key(reason)] += 1
            self.on_progress({"seeds_run": r.seeds_run, "seeds_total": r.seeds_total, "tasks": r.tasks_written,
                              "usage": self.teacher.usage.to_json()})

    # one seed ---------------------------------------------------------------------------
    def one_seed(self, seed_id: str) -> tuple[list[dict], list[str]]:
        base, reasons = self.explore(seed_id)
        if base is None:
            return [], reasons
        chain = [base]
        while len(chain) < self.cfg.levels:
            nxt, why = self.extend(chain[-1])
            reasons += why
            if nxt is None:
                break
            chain.append(nxt)
        return chain, reasons

    def _chunk_map(self, ids: list[str]) -> dict:
        return {c.id: c for c in self.corpus.chunks(ids)}

    def _title(self, doc_id: str) -> str:
        d = self.corpus.doc(doc_id)
        return d.title if d else ""

    def explore(self, seed_id: str) -> tuple[dict | None, list[str]]:
        seed = self._chunk_map([seed_id]).get(seed_id)
        if seed is None:
            return None, [f"seed chunk {seed_id} not in the collection"]
        query = " ".join(seed.text.split()[:60])
        hits = self.corpus.hybrid(query, self.cfg.neighbours * 3, exclude={seed_id})
        shown, docs = [seed], {seed.doc_id}
        for h in hits:  # prefer other documents: multi-document evidence
            if h.chunk.doc_id not in docs and len(shown) <= self.cfg.neighbours:
                shown.append(h.chunk)
                docs.add(h.chunk.doc_id)
        for h in hits:
            if len(shown) > self.cfg.neighbours:
                break
            if all(h.chunk.id != c.id for c in shown):
                shown.append(h.chunk)
        chunks = {c.id: c for c in shown}
        user = "\n\n".join(_show(c, self._title(c.doc_id), self.cfg.chunk_chars) for c in shown)
        user += f"\n\nWrite the exercise as JSON, with {self.cfg.items} supporting_items and one clue per item."
        answer = self.teacher.json(EXPLORE_SYSTEM.format(items=self.cfg.items), user, EXPLORE_SCHEMA, "exercise")
        truth = str(answer.get("truth", "")).strip()
        question = str(answer.get("question", "")).strip()
        items = _dedupe_items(answer.get("supporting_items"))
        clues = [c for c in answer.get("clues") or [] if isinstance(c, dict)]
        text = {cid: c.text for cid, c in chunks.items()}
        v = verify_level(items, [{**c, "text": str(c.get("text", "")), "quote": str(c.get("quote", ""))} for c in clues],
                         truth, question, text)
        # an item keeps its place only with a verified quote, or as the chunk that holds the truth
        kept_items = [it for it in v.items if it["chunk_id"] in chunks and (it["quotes"] or it["contains_truth"])]
        problems = [] if v.ok else list(v.reasons)
        if not any(it["contains_truth"] for it in kept_items):
            problems.append("no kept supporting chunk contains the truth")
        if len(kept_items) < self.cfg.min_items:
            problems.append(f"only {len(kept_items)} supporting chunk(s) (need {self.cfg.min_items})")
        if problems:
            return None, [f"L0: {p}" for p in problems]
        items_out = [self._item(chunks[it["chunk_id"]], it["quotes"], it["contains_truth"], 0) for it in kept_items]
        clues_out = [{"text": str(c["text"]).strip(), "chunk_id": c["chunk_id"], "quote": c["quote"], "level": 0}
                     for c in v.clues]
        task = {
            "id": _task_id(seed_id, 0), "schema": SCHEMA_VERSION, "collection": self.collection,
            "seed_chunk": seed_id, "level": 0, "parent": None, "question": question, "truth": truth,
            "truth_type": _truth_type(answer.get("truth_type")), "truths": [truth], "clues": clues_out,
            "supporting_items": items_out, "bridging_item": None, "distractors": [],
            "gold_docs": sorted({it["doc_id"] for it in items_out}),
            "truth_docs": sorted({it["doc_id"] for it in items_out if it["contains_truth"]}),
            "verification": v.to_json(), "teacher": {"model": self.teacher.model},
        }
        task["distractors"] = self.distractors(task)
        return task, [f"L0: {r}" for r in v.reasons]  # kept, with notes (dropped clues)

    def _item(self, chunk, quotes: list[str], has_truth: bool, level: int) -> dict:
        return {"chunk_id": chunk.id, "doc_id": chunk.doc_id, "title": self._title(chunk.doc_id),
                "quotes": quotes, "contains_truth": has_truth, "level": level}

    def distractors(self, task: dict) -> list[dict]:
        gold = set(task["gold_docs"])
        taken = {it["chunk_id"] for it in task["supporting_items"]}
        out: list[dict] = []
        kept_before = [d for d in task.get("distractors", []) if d["doc_id"] not in gold]
        texts = self._chunk_map([d["chunk_id"] for d in kept_before])
        for d in kept_before:  # earlier distractors stay only if they hold no truth so far
            c = texts.get(d["chunk_id"])
            if c is not None and not any(contains(t, c.text) for t in task["truths"]):
                out.append(d)
                taken.add(d["chunk_id"])
        ranked: list[list] = []
        for i, clue in enumerate(task["clues"]):
            hits = self.corpus.hybrid(clue["text"], 10, exclude=taken)
            ranked.append([(i, h) for h in hits])
        for row in range(10):  # round robin over the clues
            for lst in ranked:
                if len(out) >= self.cfg.distractors:
                    return out
                if row >= len(lst):
                    continue
                i, h = lst[row]
                if h.chunk.id in taken or h.chunk.doc_id in gold:
                    continue
                if any(contains(t, h.chunk.text) for t in task["truths"]):
                    continue
                taken.add(h.chunk.id)
                out.append({"chunk_id": h.chunk.id, "doc_id": h.chunk.doc_id, "title": h.doc.title, "clue": i})
        return out

    def extend(self, prev: dict) -> tuple[dict | None, list[str]]:
        level = prev["level"] + 1
        tag = f"L{level}"
        current = [it for it in prev["supporting_items"] if it["level"] == prev["level"]]
        current.sort(key=lambda it: not it["contains_truth"])  # the truth's chunk first
        gold = set(prev["gold_docs"])
        known = {it["chunk_id"] for it in prev["supporting_items"]} | {d["chunk_id"] for d in prev["distractors"]}
        chunks = self._chunk_map([it["chunk_id"] for it in current])
        for it in current:
            src = chunks.get(it["chunk_id"])
            if src is None:
                continue
            cands: dict[str, tuple] = {}
            for ent in entities(src.text):
                if any(contains(ent, t) or contains(t, ent) for t in prev["truths"]):
                    continue  # following the truth itself would give it away
                for h in self.corpus.hybrid(ent, 5, exclude=known):
                    if h.chunk.doc_id in gold or h.chunk.id in cands or not contains(ent, h.chunk.text):
                        continue
                    cands[h.chunk.id] = (h.chunk, ent)
                if len(cands) >= self.cfg.bridge_candidates:
                    break
            if cands:
                return self._bridge(prev, src, list(cands.values())[: self.cfg.bridge_candidates], level)
        return None, [f"{tag}: no bridge candidate (no other document mentions an entity of the last hop)"]

    def _bridge(self, prev: dict, src, cands: list[tuple], level: int) -> tuple[dict | None, list[str]]:
        tag = f"L{level}"
        user = ("Earlier clues:\n" + "\n".join(f"- {c['text']}" for c in prev["clues"])
                + f"\nEarlier question: {prev['question']}\nEarlier answers (never name them): {', '.join(prev['truths'])}\n\n"
                + "The last hop ended in:\n" + _show(src, self._title(src.doc_id), self.cfg.chunk_chars)
                + "\n\nCandidates:\n"
                + "\n\n".join(f"(link: {ent})\n" + _show(c, self._title(c.doc_id), self.cfg.chunk_chars) for c, ent in cands)
                + "\n\nWrite the next hop as JSON.")
        answer = self.teacher.json(EXTEND_SYSTEM, user, EXTEND_SCHEMA, "hop")
        by_id = {c.id: c for c, _ in cands}
        cid = str(answer.get("chunk_id", "")).strip()
        bridge = by_id.get(cid)
        truth = str(answer.get("truth", "")).strip()
        question = str(answer.get("question", "")).strip()
        link = str(answer.get("link", "")).strip()
        clue = answer.get("clue") if isinstance(answer.get("clue"), dict) else {}
        if bridge is None:
            return None, [f"{tag}: the teacher picked no candidate ({cid!r})"]
        quotes = [q for q in answer.get("quotes") or [] if isinstance(q, str)]
        v = verify_level([{"chunk_id": cid, "quotes": quotes}],
                         [{"chunk_id": cid, "text": str(clue.get("text", "")), "quote": str(clue.get("quote", ""))}],
                         truth, question, {cid: bridge.text})
        problems = [] if v.ok else list(v.reasons)
        if not (contains(link, src.text) and contains(link, bridge.text)):
            problems.append(f"the link {link!r} is not in both chunks")
        if any(contains(t, question) for t in prev["truths"]):
            problems.append("the question names an earlier answer")
        if any(normalise(t) == normalise(truth) for t in prev["truths"]):
            problems.append("the new truth repeats an earlier one")
        if problems:
            return None, [f"{tag}: {p}" for p in problems]
        it = v.items[0]
        bridging = {"from_chunk_id": src.id, "chunk_id": bridge.id, "doc_id": bridge.doc_id,
                    "title": self._title(bridge.doc_id), "link": link, "quotes": it["quotes"], "contains_truth": True}
        items = prev["supporting_items"] + [self._item(bridge, it["quotes"], True, level)]
        clues = prev["clues"] + [{"text": str(c["text"]).strip(), "chunk_id": cid, "quote": c["quote"], "level": level}
                                 for c in v.clues]
        task = {
            "id": _task_id(prev["seed_chunk"], level), "schema": SCHEMA_VERSION, "collection": self.collection,
            "seed_chunk": prev["seed_chunk"], "level": level, "parent": prev["id"], "question": question,
            "truth": truth, "truth_type": _truth_type(answer.get("truth_type")), "truths": prev["truths"] + [truth],
            "clues": clues, "supporting_items": items, "bridging_item": bridging, "distractors": prev["distractors"],
            "gold_docs": sorted({i["doc_id"] for i in items}), "truth_docs": [bridge.doc_id],
            "verification": v.to_json(), "teacher": {"model": self.teacher.model},
        }
        task["distractors"] = self.distractors(task)
        return task, [f"{tag}: {r}" for r in v.reasons]


def _dedupe_items(raw) -> list[dict]:
    out: dict[str, dict] = {}
    for it in raw or []:
        if not isinstance(it, dict):
            continue
        cid = str(it.get("chunk_id", "")).strip()
        quotes = it.get("quotes")
        quotes = [quotes] if isinstance(quotes, str) else [q for q in quotes or [] if isinstance(q, str)]
        if cid in out:
            out[cid]["quotes"] += quotes
        elif cid:
            out[cid] = {"chunk_id": cid, "quotes": quotes}
    return list(out.values())


def _truth_type(value) -> str:
    v = str(value or "").strip().lower()
    return v if v in TRUTH_TYPES else "other"


def _task_id(seed_chunk: str, level: int) -> str:
    return f"t_{hashlib.sha1(seed_chunk.encode()).hexdigest()[:8]}_L{level}"


def _reason_key(reason: str) -> str:
    """A reason without its specifics, for counting (``L0: only 1 of 5 quotes...`` → ``L0: only quotes...``)."""
    r = re.sub(r"'[^']*'|\"[^\"]*\"", "…", reason)
    return re.sub(r"\d+", "N", r)[:90]


def check_task_against_corpus(task: dict, corpus) -> list[str]:
    """Re-verify a written task from scratch (for tests and ``--check``): every kept quote is in its
    chunk, the truth-bearing items really hold their level's truth, no distractor holds a truth."""
    errors = validate_task(task)
    ids = [it["chunk_id"] for it in task["supporting_items"]] + [d["chunk_id"] for d in task["distractors"]] \
        + [c["chunk_id"] for c in task["clues"]]
    text = {c.id: c.text for c in corpus.chunks(list(dict.fromkeys(ids)))}
    for it in task["supporting_items"]:
        t = text.get(it["chunk_id"])
        if t is None:
            errors.append(f"unknown chunk {it['chunk_id']}")
            continue
        errors += [f"quote not in {it['chunk_id']}: {q!r}" for q in it["quotes"] if not quote_found(q, t)]
        if it["contains_truth"] != contains(task["truths"][it["level"]], t):
            errors.append(f"contains_truth of {it['chunk_id']} is wrong")
    for c in task["clues"]:
        if c["chunk_id"] not in text or not quote_found(c["quote"], text[c["chunk_id"]]):
            errors.append(f"clue quote not in {c['chunk_id']}: {c['quote']!r}")
    for d in task["distractors"]:
        if any(contains(t, text.get(d["chunk_id"], "")) for t in task["truths"]):
            errors.append(f"distractor {d['chunk_id']} contains a truth")
    return errors
