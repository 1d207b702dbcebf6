#!/usr/bin/env python3
"""Check the natural-question files ``bench/natural/<kind>.jsonl`` (see README.md for the schema).

For each file: every line is a JSON object with the fields of the schema; ids are ``<kind>-nat-NN`` and
unique; every gold key names a document of the kind's corpus (as ``bench/suite.py``'s ``Case.key`` gives
it); every answer string occurs in some gold document's text (as c1 loads it; case and whitespace
ignored); legal spans and financebench pages lie inside their gold document; the style tags hold
where a rule can tell (``lower``: no capital, no final punctuation; ``two-doc``: two gold documents
or more; ``paraphrase``: no run of ``RUN`` words copied from a gold text); no question repeats a
benchmark question of its kind. Prints the count per style and exits 1 when anything is wrong.

    python bench/natural/check.py                    # every file in the folder
    python bench/natural/check.py hotpotqa mail      # some kinds
    python bench/natural/check.py --no-text legal    # keys only (no document is loaded)
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from bench.textpool import shared_data  # noqa: E402

KINDS = ("hotpotqa", "musique", "financebench", "mail", "legal", "sheets", "scifact")
STYLES = ("lower", "typo", "vague", "party", "two-doc", "paraphrase")
FIELDS = {"id": str, "question": str, "gold": list, "answers": list, "style": list, "pages": list, "spans": list,
          "copies": dict, "note": str}
REQUIRED = ("id", "question", "gold", "style")
MIN_QUESTIONS, MIN_PER_STYLE, RUN = 40, 8, 6


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


# --- the corpora: key -> text (lazily) ---------------------------------------------------------


class Corpus:
    """The documents of one kind: ``keys`` (all gold keys that exist), ``text(key)``, ``benchmark``
    (the kind's own benchmark questions) and, for PDFs, ``pages(key)``."""

    def __init__(self, kind: str):
        self.kind = kind
        self._texts: dict[str, str] = {}
        self._paths: dict[str, Path] = {}
        self.benchmark: list[str] = []
        getattr(self, f"_load_{kind}")()

    @property
    def keys(self) -> set[str]:
        return set(self._texts) | set(self._paths)

    def text(self, key: str) -> str:
        if key not in self._texts:
            self._texts[key] = _file_text(str(self._paths[key]))
        return self._texts[key]

    def pages(self, key: str) -> int:
        return _pdf_pages(str(self._paths[key]))

    def _passages(self, kind: str) -> None:
        from bench.multihop import FILES
        from c1.eval.datasets import load_dataset

        folder, name = FILES[kind]
        ds = load_dataset(kind, shared_data() / folder / name)
        self._texts = {p.id: f"{p.title}\n{p.text}" for p in ds.passages}
        self.benchmark = [q.question for q in ds.questions]

    def _load_hotpotqa(self) -> None:
        self._passages("hotpotqa")

    def _load_musique(self) -> None:
        self._passages("musique")

    def _load_scifact(self) -> None:
        folder = shared_data() / "scifact"
        for line in (folder / "corpus.jsonl").read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                self._texts[str(r["id"])] = f"{r.get('title') or ''}\n{r.get('text') or ''}"
        self.benchmark = [json.loads(x)["question"] for x in (folder / "claims_train.jsonl").read_text().splitlines() if x.strip()]

    def _files(self, root: Path, pattern: str = "*") -> None:
        self._paths = {str(p.relative_to(root)): p for p in sorted(root.rglob(pattern)) if p.is_file()}

    def _load_mail(self) -> None:
        self._files(shared_data() / "enron" / "maildir")

    def _load_legal(self) -> None:
        self._files(shared_data() / "legal" / "files")
        queries = shared_data() / "legal" / "queries.jsonl"
        self.benchmark = [json.loads(x)["question"] for x in queries.read_text().splitlines() if x.strip()]

    def _load_financebench(self) -> None:
        data = shared_data()
        self._paths = {p.name: p for p in [*(data / "financebench" / "pdfs").glob("*.pdf"), *(data / "sec").glob("*.pdf")]}
        rows = (data / "financebench" / "financebench_dev_18.jsonl").read_text().splitlines()
        self.benchmark = [json.loads(x)["question"] for x in rows if x.strip()]

    def _load_sheets(self) -> None:
        from bench import suite

        root = suite.SUITE / f"sheets-files-v{suite.SHEETS_VERSION}"
        items = root.parent / f"sheets-items-v{suite.SHEETS_VERSION}.json"
        if not root.is_dir():
            import tempfile

            root = Path(tempfile.mkdtemp(prefix="c1-sheets-"))
            self.benchmark = [i.question for i in suite._sheets_files(root)]
        elif items.is_file():
            self.benchmark = [x["question"] for x in json.loads(items.read_text())]
        self._files(root)


@lru_cache(maxsize=None)
def _loaded(path: str):
    from c1.index.loaders import load
    from c1.index.walk import kind_of, Source

    kind = "eml" if "/enron/maildir/" in path else kind_of(path) or "text"
    return load(Source(path, kind))


def _file_text(path: str) -> str:
    """The text c1 indexes for a file (its documents' titles and texts); '' when c1 skips it."""
    from c1.index.documents import Skip

    try:
        return "\n".join(f"{d.title}\n{d.text}" for d in _loaded(path))
    except Skip:
        return ""


def _pdf_pages(path: str) -> int:
    docs = _loaded(path)
    return max((n for d in docs for _, n in (d.pages or [])), default=1)


# --- the checks ------------------------------------------------------------------------------


def check_record(r: dict, kind: str, corpus: Corpus | None, texts: bool) -> list[str]:
    """What is wrong with one record (empty when nothing)."""
    bad = [f"missing field {f!r}" for f in REQUIRED if f not in r]
    bad += [f"unknown field {f!r}" for f in r if f not in FIELDS]
    bad += [f"field {f!r} must be a {FIELDS[f].__name__}" for f in r if f in FIELDS and not isinstance(r[f], FIELDS[f])]
    if bad:
        return bad
    q, gold, styles = r["question"], r["gold"], r["style"]
    if not re.fullmatch(rf"{re.escape(kind)}-nat-\d{{2,}}", r["id"]):
        bad.append(f"id {r['id']!r} is not {kind}-nat-NN")
    if not q.strip():
        bad.append("empty question")
    if not gold or not all(isinstance(g, str) and g for g in gold) or len(set(gold)) != len(gold):
        bad.append("gold must be a non-empty list of distinct strings")
    bad += [f"unknown style {s!r} (styles: {', '.join(STYLES)})" for s in styles if s not in STYLES]
    if not styles:
        bad.append("no style tag")
    if "lower" in styles and (q != q.lower() or q.rstrip()[-1:] in ".?!"):
        bad.append("style lower: has a capital or final punctuation")
    if "two-doc" in styles and len(gold) < 2:
        bad.append("style two-doc: fewer than two gold documents")
    if corpus is None:
        return bad
    missing = [g for g in gold if g not in corpus.keys]
    bad += [f"gold {g!r} is not a document of {kind}" for g in missing]
    for g, alts in r.get("copies", {}).items():
        if not isinstance(alts, list):
            bad.append(f"copies: {g!r} must map to a list of keys")
            continue
        if g not in gold:
            bad.append(f"copies: {g!r} is not a gold key")
        bad += [f"copies: {a!r} is not a document of {kind}" for a in alts if a not in corpus.keys]
    bad += _spans(r, gold, corpus, texts)
    if missing or not texts:
        return bad
    gold_texts = [corpus.text(g) for g in gold]
    for a in r.get("answers", []):
        if not isinstance(a, str) or not a.strip():
            bad.append("an answer must be a non-empty string")
        elif not any(_norm(a) in _norm(t) for t in gold_texts):
            bad.append(f"answer {a!r} is in no gold text")
    if "paraphrase" in styles and (run := _copied(q, gold_texts)):
        bad.append(f"style paraphrase: copies {run!r} from a gold text")
    return bad


def _spans(r: dict, gold: list[str], corpus: Corpus, texts: bool) -> list[str]:
    bad = []
    for s in r.get("spans", []):
        if not (isinstance(s, list) and len(s) == 3 and isinstance(s[0], str) and all(isinstance(x, int) for x in s[1:])):
            bad.append(f"span {s!r} is not [relpath, start, end]")
        elif s[0] not in gold:
            bad.append(f"span {s!r}: its file is not a gold key")
        elif texts and not 0 <= s[1] < s[2] <= len(_raw(corpus, s[0])):
            bad.append(f"span {s!r} lies outside its file")
    for p in r.get("pages", []):
        m = re.fullmatch(r"(.+)#p(\d+)", p) if isinstance(p, str) else None
        if not m:
            bad.append(f"page {p!r} is not <file>#p<page>")
        elif m[1] not in gold:
            bad.append(f"page {p!r}: its file is not a gold key")
        elif texts and not 1 <= int(m[2]) <= corpus.pages(m[1]):
            bad.append(f"page {p!r}: the file has {corpus.pages(m[1])} pages")
    return bad


def _raw(corpus: Corpus, key: str) -> str:
    """A legal file's own text (spans are character offsets into the file as read)."""
    return corpus._paths[key].read_text(encoding="utf-8")


def _copied(question: str, texts: list[str]) -> str:
    """A run of ``RUN`` words of the question found in order in one of ``texts`` ('' when none)."""
    words = _words(question)
    joined = [" " + " ".join(_words(t)) + " " for t in texts]
    for i in range(len(words) - RUN + 1):
        run = " ".join(words[i:i + RUN])
        if any(f" {run} " in t for t in joined):
            return run
    return ""


def check_file(path: Path, texts: bool = True) -> tuple[list[str], collections.Counter, int]:
    """Problems (``line N: ...``), the style counts and the number of questions of one file."""
    kind = path.stem
    if kind not in KINDS:
        return [f"{path.name}: unknown kind (kinds: {', '.join(KINDS)})"], collections.Counter(), 0
    corpus = Corpus(kind)
    bench = {_norm(q) for q in corpus.benchmark}
    problems, styles, seen, n = [], collections.Counter(), {}, 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as exc:
            problems.append(f"line {number}: invalid JSON ({exc})")
            continue
        if not isinstance(r, dict):
            problems.append(f"line {number}: not a JSON object")
            continue
        n += 1
        bad = check_record(r, kind, corpus, texts)
        if r.get("id") in seen:
            bad.append(f"id {r['id']!r} already on line {seen[r['id']]}")
        seen.setdefault(r.get("id"), number)
        if isinstance(r.get("question"), str) and _norm(r["question"]) in bench:
            bad.append("the question is one of the benchmark's")
        problems += [f"line {number} ({r.get('id')}): {b}" for b in bad]
        styles.update(s for s in r.get("style", []) if isinstance(s, str))
    if n < MIN_QUESTIONS:
        problems.append(f"{n} questions, fewer than {MIN_QUESTIONS}")
    return problems, styles, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kinds", nargs="*", help=f"from {', '.join(KINDS)} (default: every file here)")
    ap.add_argument("--no-text", action="store_true", help="check keys only; load no document")
    args = ap.parse_args(argv)
    files = [HERE / f"{k}.jsonl" for k in args.kinds] if args.kinds else sorted(HERE.glob("*.jsonl"))
    failed = False
    for path in files:
        if not path.is_file():
            print(f"{path.name}: no such file", file=sys.stderr)
            failed = True
            continue
        problems, styles, n = check_file(path, not args.no_text)
        few = [s for s in STYLES if styles[s] < MIN_PER_STYLE]
        counts = ", ".join(f"{s} {styles[s]}" for s in STYLES)
        print(f"{path.stem}: {n} questions; {counts}" + (f" (under {MIN_PER_STYLE}: {', '.join(few)})" if few else ""))
        for p in problems:
            print(f"  {path.name} {p}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
