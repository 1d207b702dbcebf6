#!/usr/bin/env python3
"""Known-item search on real mail and PDFs: each question has one known target.

The corpus is a mixed folder as a user has one: the 993 shared Enron messages, the 18 FinanceBench
filings and the three SEC filings of ../shared/data (one collection; the filings' part is the one
bench/financebench.py builds, the mail is added to a copy of it). The questions are generated from
the same files by fixed rules, deterministically (no model, no randomness beyond a fixed seed):

- ``subject``: the subject line of a message, "RE:"/"FW:" prefixes removed, for subjects of at
  least three words with two content words that one message alone carries (its copies in other
  folders — the same Message-ID or the same body — are the same target);
- ``paraphrase``: a sentence of a message's body (10-30 words, four content words or more, no
  address, link or quoted line, in no other message) rewritten by rule: lower case, punctuation and
  stopwords dropped, words replaced through the table ``SYNONYMS`` below ("meeting" → "meetup",
  "send" → "forward", "price" → "cost" ...), and the word order shuffled with a seed derived from
  the message (a bag of words: neither BM25's phrase-free matching nor the embedding is helped by
  the original order);
- ``page``: a fact on a known page of an SEC filing: a table row (a label of three words or more
  followed by a number) whose label is on that page only, asked as "What was <company>'s <label>
  in <year>?" with the company and the year from the file name ("3M_2022_10K.pdf" → 3M, 2022);
  the target is the page (the filing at rank 1 with a returned chunk on that page). Labels that
  name a date ("Balance at December 31") are left out: the number columns are then dates.

Systems: ``hybrid`` (one search_corpus ranking, c1/eval's baseline) and ``builtin`` (the built-in
policy), at the same k. Measures: rank-1 accuracy (the target first), target in the top k, mean
reciprocal rank, documents returned; per kind of question and for the two halves (even positions
tune, odd positions held out).

    python bench/known_item.py                    # builds bench/out/mixed_home on first use
    python bench/known_item.py --kinds subject,paraphrase --per-kind 40
"""

from __future__ import annotations

import argparse
import dataclasses
import email
import email.policy
import hashlib
import json
import random
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.financebench import COLLECTION  # noqa: E402
from bench.financebench import build as build_filings  # noqa: E402
from bench.textpool import shared_data  # noqa: E402

OUT = REPO / "bench" / "out"
KINDS = ("subject", "paraphrase", "page")
STOP = frozenset(
    "a an and are as at be by did do does for from had has have he her his how i if in into is it its me my "
    "of on or our she so that the their them then there these they this those to was we were what when where "
    "which who will with would you your can could should may might must not no than too very just also been "
    "being am any all some please thanks thank let know get got here".split()
)
SYNONYMS = {
    "meeting": "meetup", "meet": "gather", "send": "forward", "sent": "forwarded", "price": "cost",
    "prices": "costs", "buy": "purchase", "sell": "vend", "question": "query", "questions": "queries",
    "help": "assist", "need": "require", "needs": "requires", "start": "begin", "started": "began",
    "end": "finish", "call": "phone", "told": "informed", "tell": "inform", "big": "large", "small": "little",
    "fast": "quick", "quickly": "rapidly", "show": "display", "shows": "displays", "find": "locate",
    "review": "examine", "attached": "enclosed", "update": "refresh", "new": "fresh", "company": "firm",
    "employees": "staff", "employee": "staffer", "job": "position", "money": "funds", "agreement": "contract",
    "agreements": "contracts", "issue": "problem", "issues": "problems", "market": "marketplace",
    "currently": "presently", "important": "significant", "discuss": "talk over", "discussed": "talked over",
    "received": "got", "receive": "get", "working": "operating", "work": "labor", "provide": "supply",
    "provided": "supplied", "information": "info", "report": "writeup", "change": "alter", "changes": "alterations",
    "begin": "commence", "office": "workplace", "people": "persons", "week": "7 days", "today": "this day",
}
"""The paraphrase rule's word replacements (common business-mail words; nothing fitted to the targets)."""
_ROW = re.compile(r"^\s*([A-Za-z][A-Za-z ,'’()&/-]{8,90}?)[\s.:]+(?:\$?\s?\(?-?\d[\d,]*(?:\.\d+)?\)?%?\s*){2,}$")
"""A table row: a label, then two numbers or more (the columns: years, segments) and nothing else."""
_MONTH = re.compile(r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december)\b", re.I)


@dataclasses.dataclass
class Item:
    kind: str
    question: str
    gold: tuple[str, ...]
    """Document ids (mail: the message and its copies) or ``<file>#p<page>`` keys (page facts)."""
    source: str


# --- the corpus ------------------------------------------------------------------------------


def build(home: Path) -> None:
    """The filings' collection (bench/financebench.py's, built once) copied into ``home``, plus the
    Enron mail indexed into it."""
    from c1.config import load_settings
    from c1.store.embedders import MiniLMEmbedder
    from c1.index.indexer import Indexer

    settings = load_settings().with_flags(home=str(home), collection=COLLECTION)
    if (settings.collection_dir / "mail.json").is_file():
        return
    if not home.exists():
        fb_home = OUT / "fb_home"
        build_filings(fb_home)
        shutil.copytree(fb_home, home)
    print(f"indexing the Enron mail into {home} (once)", file=sys.stderr)
    report = Indexer(settings, MiniLMEmbedder()).run([str(shared_data() / "enron" / "maildir")])
    (settings.collection_dir / "mail.json").write_text(json.dumps({"documents": report.documents,
                                                                    "chunks": report.total_chunks}))


# --- the questions ---------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9][a-z0-9'&-]*", text.lower())


def _content(words: list[str]) -> list[str]:
    return [w for w in words if w not in STOP and len(w) > 1]


def paraphrase(sentence: str, seed: str) -> str:
    """The paraphrase rule (see the module docstring)."""
    words = [SYNONYMS.get(w, w) for w in _content(_words(sentence))]
    rng = random.Random(hashlib.blake2b(seed.encode(), digest_size=8).hexdigest())
    rng.shuffle(words)
    return " ".join(words)


def mail_items(corpus, per_kind: int) -> list[Item]:
    """Subject and paraphrase questions from the Enron messages, in path order."""
    root = (shared_data() / "enron" / "maildir").resolve()
    by_path = {str(Path(d.path).resolve()): d.doc_id for d in corpus.store.manifest.all_docs()}
    groups: dict[str, dict] = {}  # one per distinct message (copies in several folders)
    for path in sorted(root.rglob("*")):
        if not path.is_file() or str(path.resolve()) not in by_path:
            continue
        msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        try:
            body = msg.get_body(("plain",))
            text = body.get_content() if body is not None else ""
        except (KeyError, LookupError):
            text = ""
        key = str(msg["message-id"] or "") or hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        same = next((k for k, g in groups.items() if g["body"] == text and text.strip()), None)
        g = groups.setdefault(same or key, {"subject": str(msg["subject"] or ""), "body": text, "docs": [], "path": str(path)})
        g["docs"].append(by_path[str(path.resolve())])
    subjects: dict[str, list[str]] = {}
    for k, g in groups.items():
        s = re.sub(r"^\s*((re|fw|fwd)\s*:\s*)+", "", g["subject"], flags=re.I).strip()
        g["clean_subject"] = s
        subjects.setdefault(s.lower(), []).append(k)
    items = []
    for k, g in groups.items():
        s = g["clean_subject"]
        if len(s.split()) >= 3 and len(_content(_words(s))) >= 2 and len(subjects[s.lower()]) == 1:
            items.append(Item("subject", s, tuple(g["docs"]), g["path"]))
    subject_items = items[:per_kind]
    bodies = {k: " ".join(g["body"].split()).lower() for k, g in groups.items()}
    para = []
    for k, g in groups.items():
        for raw in re.split(r"(?<=[.!?])\s+", " ".join(line for line in g["body"].splitlines()
                                                       if not line.lstrip().startswith(">"))):
            sent = raw.strip()
            n = len(sent.split())
            if not 10 <= n <= 30 or re.search(r"@|https?:|www\.|:\s*$", sent) or len(_content(_words(sent))) < 4:
                continue
            low = " ".join(sent.split()).lower()
            if any(low in other for o, other in bodies.items() if o != k):
                continue
            para.append(Item("paraphrase", paraphrase(sent, g["path"]), tuple(g["docs"]), g["path"]))
            break
        if len(para) >= per_kind:
            break
    return subject_items + para


def page_items(per_kind: int) -> list[Item]:
    """Table-row facts of the three SEC filings, read with c1's own PDF loader."""
    from c1.index.loaders import load
    from c1.store.names import file_name_words
    from c1.index.walk import Source

    out = []
    files = sorted((shared_data() / "sec").glob("*.pdf"))
    for path in files:
        doc = load(Source(str(path), "pdf"))[0]
        words = file_name_words(str(path)).split()
        company = words[0]
        year = next((w[:4] for w in words if re.match(r"(19|20)\d\d", w)), "")
        starts = [s for s, _ in doc.pages] + [len(doc.text)]
        rows: dict[str, set[int]] = {}
        first: dict[str, int] = {}
        for (start, page), end in zip(doc.pages, starts[1:]):
            for line in doc.text[start:end].splitlines():
                m = _ROW.match(line)
                if not m:
                    continue
                label = " ".join(m.group(1).strip(" ,.:-").split())
                if len(label.split()) < 3 or len(_content(_words(label))) < 2 or label.split()[-1].lower() in STOP \
                        or _MONTH.search(label):
                    continue
                rows.setdefault(label.lower(), set()).add(page)
                first.setdefault(label.lower(), page)
        unique = sorted((p, label) for label, pages in rows.items() if len(pages) == 1 for p in pages)
        step = max(1, len(unique) // max(1, per_kind // len(files)))
        for page, label in unique[::step][: per_kind // len(files)]:
            out.append(Item("page", f"What was {company}'s {label} in {year}?", (f"{path.name}#p{page}",), str(path)))
    return out


def items(corpus, kinds: tuple[str, ...], per_kind: int, cache: Path) -> list[Item]:
    """The questions, generated once and kept in ``cache`` (regenerated when the rules or the index change)."""
    ids = sorted(d.doc_id for d in corpus.store.manifest.all_docs())  # the targets are this index's documents
    key = hashlib.blake2b(json.dumps([kinds, per_kind, SYNONYMS, _ROW.pattern, _MONTH.pattern, ids]).encode(),
                          digest_size=8).hexdigest()
    if cache.is_file():
        data = json.loads(cache.read_text())
        if data.get("key") == key:
            return [Item(**x) for x in data["items"]]
    out = []
    if "subject" in kinds or "paraphrase" in kinds:
        out += [i for i in mail_items(corpus, per_kind) if i.kind in kinds]
    if "page" in kinds:
        out += page_items(per_kind)
    cache.write_text(json.dumps({"key": key, "items": [dataclasses.asdict(i) for i in out]}, ensure_ascii=False))
    return out


# --- running ---------------------------------------------------------------------------------


def run(home: Path, systems: list[str], k: int, kinds: tuple[str, ...], per_kind: int, options: dict | None = None,
        **flags) -> list[dict]:
    from bench.multihop import policy_choice
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings
    from c1.eval.datasets import Question
    from c1.eval.scoring import run_one
    from c1.eval.systems import parse_systems

    settings = load_settings().with_flags(home=str(home), collection=COLLECTION, max_docs=k, **flags)
    corpus = Corpus(settings)
    rows = []
    try:
        questions = items(corpus, kinds, per_kind, OUT / "known_items.json")
        for system in parse_systems(",".join(systems)):
            choice = policy_choice(settings, system, options)
            for n, it in enumerate(questions):
                corpus.clear_query_cache()
                kind = "page" if it.kind == "page" else "source_id"
                q = Question(f"{it.kind}-{n}", it.question, (), it.gold)
                row = run_one(corpus, settings, q, system, choice, kind)
                # each returned document gives one key (a gold page it covers, else its id), in rank order
                rank = next((i for i, key in enumerate(row["returned"], 1) if key in it.gold), None)
                rows.append({"system": system.label, "kind": it.kind, "n": n, "tune": n % 2 == 0,
                             "question": it.question, "rank": rank, "returned": len(row["documents"]),
                             "seconds": row["cost"]["seconds"], "scores": [d.get("score") for d in row["documents"]]})
            print(f"  {system.label}: done", file=sys.stderr)
    finally:
        corpus.close()
    return rows


def summarise(rows: list[dict], k: int) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    return {
        "n": n,
        "rank1": sum(r["rank"] == 1 for r in rows) / n,
        "topk": sum(r["rank"] is not None and r["rank"] <= k for r in rows) / n,
        "mrr": sum(1 / r["rank"] for r in rows if r["rank"]) / n,
        "returned": statistics.fmean(r["returned"] for r in rows),
        "s_median": statistics.median(r["seconds"] for r in rows),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=OUT / "mixed_home")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--systems", default="hybrid,builtin")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--per-kind", type=int, default=60, help="questions of each kind (at most)")
    ap.add_argument("--budget", type=int, default=0, help="context budget of the agent runs (default: c1's)")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="a BuiltinPolicy field for the builtin systems (e.g. prune_below=0.01), repeatable")
    ap.add_argument("--rows", type=Path)
    ap.add_argument("--json-out", type=Path, default=OUT / "known_item.jsonl")
    args = ap.parse_args(argv)

    build(args.home)
    kinds = tuple(x.strip() for x in args.kinds.split(",") if x.strip())
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    from bench.multihop import parse_options

    options = parse_options(args.option)
    rows = run(args.home, systems, args.k, kinds, args.per_kind, options, **({"budget": args.budget} if args.budget else {}))
    labels = list(dict.fromkeys(r["system"] for r in rows))
    report = {"bench": "known_item", "k": args.k, "budget": args.budget or None, "options": options,
              "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "parts": {}}
    parts = [("all", lambda r: True), ("tune", lambda r: r["tune"]), ("held-out", lambda r: not r["tune"])]
    parts += [(kind, lambda r, kind=kind: r["kind"] == kind) for kind in kinds]
    print(f"\nknown-item search, mixed folder (Enron mail + 21 filings), k = {args.k}")
    print(f"{'part':<12}{'system':<10}{'n':>5}{'rank-1':>8}{'top-k':>8}{'MRR':>8}{'returned':>10}{'s p50':>8}")
    for part, keep in parts:
        report["parts"][part] = {}
        for s in labels:
            res = summarise([r for r in rows if r["system"] == s and keep(r)], args.k)
            report["parts"][part][s] = res
            if res["n"]:
                print(f"{part:<12}{s:<10}{res['n']:>5}{res['rank1']:>8.3f}{res['topk']:>8.3f}{res['mrr']:>8.3f}"
                      f"{res['returned']:>10.2f}{res['s_median']:>8.2f}")
    from bench.report import save

    save(report, args.json_out, rows, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
