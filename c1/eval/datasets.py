"""Benchmark datasets → questions with their gold documents, and the corpus to index.

Every loader returns a :class:`Dataset`: questions (id, text, answer strings, gold keys) plus the
corpus, either as passages (``{id, title, text}``, indexed through c1's own ``.jsonl`` loader so
that ``id`` comes back as each document's ``source_id``) or as files (FinanceBench PDFs).

Gold keys are what a returned document is matched on:
- passage datasets: the passage id (its ``source_id`` once indexed);
- FinanceBench: ``"<doc_name>.pdf#p<page>"`` with c1's 1-based page numbers (FinanceBench's
  ``evidence_page_num`` is 0-based).

Formats (public schemas):
- ``hotpotqa``, ``2wiki``: JSON array or JSONL of ``{_id, question, answer, supporting_facts
  [[title, sent]], context [[title, [sentences]]]}``; passage id = title (see ``_passage_ids``).
- ``musique``: JSONL of ``{id, question, answer, answer_aliases?, answerable?, paragraphs [{idx,
  title, paragraph_text, is_supporting}]}``; unanswerable questions are left out.
- ``beir``: a folder with ``corpus.jsonl {_id, title, text}``, ``queries.jsonl {_id, text}`` and
  ``qrels/<split>.tsv`` (``query-id corpus-id score`` with a header; score > 0 is gold).
- ``financebench``: JSONL of ``{financebench_id, question, answer, doc_name, evidence
  [{evidence_page_num, doc_name?}]}`` and a folder of ``<doc_name>.pdf``.
- ``jsonl`` (generic; also ``frames`` and ``browsecomp-plus`` with their corpus in this shape):
  a folder with ``corpus.jsonl {id, title, text}`` and ``queries.jsonl {id, question, answer?,
  gold_ids[]}`` (or the path of the queries file, with ``corpus.jsonl`` beside it).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from c1.errors import C1Error

DATASETS = {
    "hotpotqa": "HotpotQA distractor JSON/JSONL (per-question or pooled paragraphs).",
    "musique": "MuSiQue JSONL (paragraphs with is_supporting; per-question or pooled).",
    "2wiki": "2WikiMultiHopQA JSON/JSONL (HotpotQA layout; per-question or pooled).",
    "beir": "A BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
    "financebench": "FinanceBench JSONL plus a folder of its PDFs (gold = document and page).",
    "jsonl": "Generic: corpus.jsonl {id,title,text} + queries.jsonl {id,question,answer?,gold_ids}.",
    "frames": "FRAMES, with your corpus in the generic jsonl layout.",
    "browsecomp-plus": "BrowseComp-Plus, with its corpus in the generic jsonl layout.",
}
SETTINGS = ("pooled", "per-question")


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str


@dataclass
class Question:
    id: str
    question: str
    answers: tuple[str, ...]
    """Answer strings (aliases included); empty when the set has none (BEIR, FinanceBench)."""
    gold: tuple[str, ...]
    passages: tuple[Passage, ...] = ()
    """This question's own paragraphs (the per-question setting)."""
    files: tuple[str, ...] = ()
    """This question's own files (FinanceBench, per-question setting)."""
    meta: dict = field(default_factory=dict)


@dataclass
class Dataset:
    name: str
    path: str
    questions: list[Question]
    passages: list[Passage] | None = None
    """The pooled corpus (unique passages of the whole file), or None for a file corpus."""
    files: list[str] | None = None
    """The pooled corpus as files (absolute paths), for FinanceBench."""
    gold_kind: str = "source_id"
    """``source_id``: gold keys are passage ids; ``page``: ``<file name>#p<page>``."""
    per_question: bool = False
    """Whether the per-question setting exists (each question carries its own corpus)."""
    notes: list[str] = field(default_factory=list)

    def fingerprint(self) -> str:
        """A content hash of the questions and the corpus (config identity for resuming)."""
        h = hashlib.blake2b(digest_size=16)
        h.update(self.name.encode())
        for q in self.questions:
            h.update(json.dumps([q.id, q.question, q.answers, q.gold], ensure_ascii=False).encode())
        h.update(corpus_fingerprint(self.passages or [], self.files or []).encode())
        return h.hexdigest()


def corpus_fingerprint(passages: list[Passage] | tuple[Passage, ...], files: list[str] | tuple[str, ...] = ()) -> str:
    """Content hash of a corpus: passages (id, title, text) and files (name and bytes)."""
    h = hashlib.blake2b(digest_size=16)
    for p in passages:
        h.update(json.dumps([p.id, p.title, p.text], ensure_ascii=False).encode())
        h.update(b"\0")
    for path in files:
        h.update(os.path.basename(path).encode() + b"\0" + _file_digest(path).encode())
    return h.hexdigest()


def _file_digest(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


# --- entry point -------------------------------------------------------------------------------


def load_dataset(name: str, path: str | Path, *, split: str | None = None, docs: str | Path | None = None) -> Dataset:
    """Load a benchmark by name (see ``DATASETS``); raises C1Error with a one-line reason."""
    path = Path(path).expanduser()
    if name not in DATASETS:
        raise C1Error(f"unknown dataset {name!r}: choose from {', '.join(DATASETS)}")
    if not path.exists():
        raise C1Error(f"{path}: no such file or directory")
    try:
        if name in ("hotpotqa", "2wiki"):
            ds = load_hotpot_like(name, path)
        elif name == "musique":
            ds = load_musique(path)
        elif name == "beir":
            ds = load_beir(path, split)
        elif name == "financebench":
            ds = load_financebench(path, docs)
        else:
            ds = load_generic(name, path)
    except (OSError, UnicodeDecodeError) as exc:
        raise C1Error(f"cannot read {name} data at {path}: {exc}") from None
    if not ds.questions:
        raise C1Error(f"{path}: no {name} questions found")
    seen: set[str] = set()
    for q in ds.questions:
        if q.id in seen:
            raise C1Error(f"{path}: question id {q.id!r} appears twice (results are kept per question id)")
        seen.add(q.id)
    return ds


def select(questions: list[Question], limit: int | None, seed: int | None) -> list[Question]:
    """The questions to run: shuffled with ``seed`` when given (file order otherwise), first ``limit``.

    Raising ``limit`` keeps the earlier questions: a run of 4 is a prefix of a run of 8.
    """
    chosen = list(questions)
    if seed is not None:
        random.Random(seed).shuffle(chosen)
    return chosen[:limit] if limit is not None else chosen


# --- readers -----------------------------------------------------------------------------------


def read_records(path: Path) -> Iterator[dict]:
    """JSON objects from a JSON array file or a JSONL file (blank lines skipped)."""
    with open(path, encoding="utf-8-sig") as f:
        head = f.read(4096).lstrip()
        f.seek(0)
        if head.startswith("["):
            try:
                data = json.load(f)
            except ValueError as exc:
                raise C1Error(f"{path}: invalid JSON ({exc})") from None
            for item in data:
                if isinstance(item, dict):
                    yield item
            return
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                raise C1Error(f"{path}, line {number}: invalid JSON") from None
            if not isinstance(item, dict):
                raise C1Error(f"{path}, line {number}: not a JSON object")
            yield item


def _need(record: dict, key: str, where: str):
    if key not in record:
        raise C1Error(f"{where}: missing field {key!r}")
    return record[key]


def _passage_ids(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(title, text) → passage id: the title, or ``title #n`` when one title has several texts."""
    by_title: dict[str, list[str]] = {}
    for title, text in pairs:
        texts = by_title.setdefault(title, [])
        if text not in texts:
            texts.append(text)
    out = {}
    for title, texts in by_title.items():
        for n, text in enumerate(texts, 1):
            out[(title, text)] = title if len(texts) == 1 else f"{title} #{n}"
    return out


def _pool(questions: list[Question]) -> list[Passage]:
    seen: dict[str, Passage] = {}
    for q in questions:
        for p in q.passages:
            seen.setdefault(p.id, p)
    return list(seen.values())


# --- HotpotQA and 2WikiMultiHopQA --------------------------------------------------------------


def load_hotpot_like(name: str, path: Path) -> Dataset:
    records = list(read_records(path))
    raw = []
    for i, r in enumerate(records):
        where = f"{path}, record {i + 1}"
        context = _need(r, "context", where)
        paras = [(str(title), "".join(sentences).strip()) for title, sentences in context]
        support = [str(t) for t, _ in _need(r, "supporting_facts", where)]
        raw.append((r, paras, support))
    ids = _passage_ids([p for _, paras, _ in raw for p in paras])
    questions = []
    for i, (r, paras, support) in enumerate(raw):
        passages = tuple(Passage(ids[(t, x)], t, x) for t, x in paras if x)
        by_title = {p.title: p.id for p in passages}
        gold = tuple(dict.fromkeys(by_title.get(t, t) for t in support))
        answer = str(r.get("answer", "")).strip()
        questions.append(Question(
            str(r.get("_id") or r.get("id") or i), str(_need(r, "question", f"{path}, record {i + 1}")),
            (answer,) if answer else (), gold, passages,
            meta={k: r[k] for k in ("type", "level") if k in r},
        ))
    return Dataset(name, str(path), questions, passages=_pool(questions), per_question=True)


# --- MuSiQue -----------------------------------------------------------------------------------


def load_musique(path: Path) -> Dataset:
    raw, skipped = [], 0
    for i, r in enumerate(read_records(path)):
        if r.get("answerable") is False:
            skipped += 1
            continue
        where = f"{path}, record {i + 1}"
        paras = [(str(p.get("title", "")), str(p.get("paragraph_text", "")).strip(), bool(p.get("is_supporting")))
                 for p in _need(r, "paragraphs", where)]
        raw.append((i, r, paras))
    ids = _passage_ids([(t, x) for _, _, paras in raw for t, x, _ in paras])
    questions = []
    for i, r, paras in raw:
        passages = tuple(Passage(ids[(t, x)], t, x) for t, x, _ in paras if x)
        gold = tuple(dict.fromkeys(ids[(t, x)] for t, x, sup in paras if sup and x))
        answers = [str(r.get("answer", "")).strip(), *(str(a).strip() for a in r.get("answer_aliases") or [])]
        questions.append(Question(
            str(r.get("id") or i), str(_need(r, "question", f"{path}, record {i + 1}")),
            tuple(dict.fromkeys(a for a in answers if a)), gold, passages,
        ))
    ds = Dataset("musique", str(path), questions, passages=_pool(questions), per_question=True)
    if skipped:
        ds.notes.append(f"{skipped} unanswerable question(s) left out")
    return ds


# --- BEIR --------------------------------------------------------------------------------------


def load_beir(path: Path, split: str | None) -> Dataset:
    if not path.is_dir():
        raise C1Error(f"{path}: a BEIR dataset is a folder with corpus.jsonl, queries.jsonl and qrels/")
    for part in ("corpus.jsonl", "queries.jsonl"):
        if not (path / part).is_file():
            raise C1Error(f"{path}: no {part} (BEIR layout)")
    qrels_dir = path / "qrels"
    splits = sorted(p.stem for p in qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []
    if not splits:
        raise C1Error(f"{path}: no qrels/<split>.tsv")
    if split is None:
        split = "test" if "test" in splits else splits[0] if len(splits) == 1 else None
        if split is None:
            raise C1Error(f"{path}: several qrels splits ({', '.join(splits)}): choose one with --split")
    elif split not in splits:
        raise C1Error(f"{path}: no qrels/{split}.tsv (have {', '.join(splits)})")
    gold: dict[str, list[str]] = {}
    with open(qrels_dir / f"{split}.tsv", encoding="utf-8", newline="") as f:
        for n, row in enumerate(csv.reader(f, delimiter="\t")):
            if not row or (n == 0 and not _is_number(row[-1])):
                continue  # the header
            if len(row) < 3:
                raise C1Error(f"{qrels_dir / f'{split}.tsv'}, line {n + 1}: expected query-id, corpus-id, score")
            if float(row[2]) > 0:
                gold.setdefault(row[0], [])
                if row[1] not in gold[row[0]]:
                    gold[row[0]].append(row[1])
    passages = []
    for r in read_records(path / "corpus.jsonl"):
        text = str(r.get("text", "")).strip()
        if text:
            passages.append(Passage(str(r["_id"]), str(r.get("title") or ""), text))
    questions = [
        Question(str(r["_id"]), str(r["text"]), (), tuple(gold[str(r["_id"])]))
        for r in read_records(path / "queries.jsonl") if str(r.get("_id")) in gold
    ]
    return Dataset("beir", str(path), questions, passages=passages, notes=[f"qrels split {split!r}"])


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


# --- FinanceBench ------------------------------------------------------------------------------


def page_key(file_name: str, page: int) -> str:
    """The gold key of a page: ``<file name>#p<1-based page>``."""
    return f"{file_name}#p{page}"


def load_financebench(path: Path, docs: str | Path | None) -> Dataset:
    folder = Path(docs).expanduser() if docs else _default_pdf_dir(path)
    if not folder.is_dir():
        raise C1Error(f"FinanceBench PDFs: {folder} is not a folder (pass --docs DIR)")
    questions, missing, no_evidence = [], set(), 0
    for i, r in enumerate(read_records(path)):
        where = f"{path}, record {i + 1}"
        doc = str(_need(r, "doc_name", where))
        gold, files = [], []
        for ev in _need(r, "evidence", where) or []:
            name = str(ev.get("doc_name") or doc)
            pdf = folder / f"{name}.pdf"
            if not pdf.is_file():
                missing.add(name)
                continue
            files.append(str(pdf.resolve()))
            gold.append(page_key(f"{name}.pdf", int(ev["evidence_page_num"]) + 1))
        if not gold:
            no_evidence += not (r.get("evidence") or [])
            continue
        questions.append(Question(
            str(r.get("financebench_id") or i), str(_need(r, "question", where)), (),
            tuple(dict.fromkeys(gold)), files=tuple(dict.fromkeys(files)),
            meta={"answer": str(r.get("answer", "")), "doc_name": doc},
        ))
    if not questions:
        raise C1Error(f"none of the FinanceBench PDFs were found in {folder} (e.g. {sorted(missing)[:1]}.pdf)")
    files = sorted({f for q in questions for f in q.files})
    ds = Dataset("financebench", str(path), questions, files=files, gold_kind="page", per_question=True)
    if missing:
        ds.notes.append(f"{len(missing)} PDF(s) missing from {folder}: their questions are left out")
    if no_evidence:
        ds.notes.append(f"{no_evidence} question(s) without evidence pages left out")
    return ds


def _default_pdf_dir(path: Path) -> Path:
    for cand in (path.parent / "pdfs", path.parent / "documents", path.parent):
        if cand.is_dir() and any(cand.glob("*.pdf")):
            return cand
    return path.parent / "pdfs"


# --- generic (FRAMES, BrowseComp-Plus, your own) -----------------------------------------------


def load_generic(name: str, path: Path) -> Dataset:
    if path.is_dir():
        corpus, queries = path / "corpus.jsonl", path / "queries.jsonl"
    else:
        corpus, queries = path.parent / "corpus.jsonl", path
    for part in (corpus, queries):
        if not part.is_file():
            raise C1Error(f"{part}: not found (the {name} layout is corpus.jsonl + queries.jsonl)")
    passages, seen = [], set()
    for n, r in enumerate(read_records(corpus), 1):
        ident = r.get("id", r.get("_id"))
        text = str(r.get("text", "")).strip()
        if ident is None or str(ident).strip() == "":
            raise C1Error(f"{corpus}, record {n}: missing field 'id'")
        if text and str(ident) not in seen:
            seen.add(str(ident))
            passages.append(Passage(str(ident), str(r.get("title") or ""), text))
    questions = []
    for n, r in enumerate(read_records(queries), 1):
        where = f"{queries}, record {n}"
        text = r.get("question", r.get("text"))
        if text is None:
            raise C1Error(f"{where}: missing field 'question'")
        gold = r.get("gold_ids", r.get("gold"))
        if not isinstance(gold, list):
            raise C1Error(f"{where}: 'gold_ids' must be a list of corpus ids")
        answer = r.get("answer", r.get("answers"))
        answers = [answer] if isinstance(answer, str) else list(answer or [])
        questions.append(Question(
            str(r.get("id", r.get("_id", n))), str(text),
            tuple(dict.fromkeys(str(a).strip() for a in answers if str(a).strip())),
            tuple(dict.fromkeys(str(g) for g in gold)),
        ))
    ds = Dataset(name, str(path), questions, passages=passages)
    unknown = {g for q in questions for g in q.gold} - seen
    if unknown:
        ds.notes.append(f"{len(unknown)} gold id(s) are not in corpus.jsonl")
    return ds
