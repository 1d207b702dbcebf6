"""The built-in policy on real mail and a real filing, as a new user meets it (issue 14).

The corpus: every Enron message of the shared data that is a word-of-the-day mail (Dictionary.com's
and Wordsmith's, 41, several in copies) or that has no subject (31), one out-of-office message, and
seven pages of 3M's 2022 10-K (cover, MD&A, the income statement) cut from the shared filing with
pypdf. Each test names the defect it guards against.
"""

from __future__ import annotations

import email
import email.policy
import re
import shutil
from dataclasses import replace

import pytest

from c1.agent import events as ev
from c1.retrieval.corpus import Corpus
from c1.agent.policies.builtin import BuiltinPolicy
from c1.agent.search import run_search
from c1.config import Settings
from c1.store.embedders import MiniLMEmbedder
from c1.index.indexer import Indexer
from conftest import enron_messages, shared_data_dir

DATA = shared_data_dir()
FILING_PAGES = (1, 2, 3, 26, 27, 48, 49)
OUT_OF_OFFICE = "blair-l/sent_items/884."
HEADER_LABELS = {"From", "To", "Cc", "Bcc", "Date", "Sent", "Subject"}


def _wanted(path) -> bool:
    msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    subject = str(msg["subject"] or "")
    return not subject.strip() or re.search(r"Word of the Day|A\.Word\.A\.Day", subject) is not None


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    if not (DATA / "enron").is_dir() or not (DATA / "sec" / "3M_2022_10K.pdf").is_file():
        pytest.skip(f"shared data not found at {DATA} (set C1_SHARED_DATA)")
    from pypdf import PdfReader, PdfWriter

    root = tmp_path_factory.mktemp("mail-and-filing")
    maildir = DATA / "enron" / "maildir"
    for path in enron_messages(DATA):
        rel = path.relative_to(maildir)
        if _wanted(path) or str(rel) == OUT_OF_OFFICE:
            (root / "mail" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, root / "mail" / rel)
    reader, writer = PdfReader(DATA / "sec" / "3M_2022_10K.pdf"), PdfWriter()
    for page in FILING_PAGES:
        writer.add_page(reader.pages[page - 1])
    (root / "pdf").mkdir()
    writer.write(root / "pdf" / "3M_2022_10K.pdf")
    settings = Settings(home=root / "home", max_docs=5)
    embedder = MiniLMEmbedder()
    Indexer(settings, embedder).run([str(root / "mail"), str(root / "pdf")])
    corpus = Corpus(settings, embedder)
    yield settings, corpus
    corpus.close()


def _search(world, question, k=5, parallel=1):
    settings, corpus = world
    events: list = []
    result = run_search(corpus, replace(settings, max_docs=k, parallel=parallel), question,
                        lambda i: BuiltinPolicy(max_docs=k, variant=i), events.append)
    return result, events


def _titles(result) -> list[str]:
    return [d["title"] for d in result.documents]


def _text(world, doc_id: str) -> str:
    return " ".join(c.text for c in world[1].doc_chunks(doc_id))


@pytest.mark.slow
def test_follow_up_searches_come_from_content(world):
    """'What was 3M's total revenue in 2022?' with --parallel 4: no run follows a header field, a
    word that only starts a sentence or a bare first name ('Subject', 'PLEASE', 'Elizabeth' of
    "PLEASE send Elizabeth an e-mail")."""
    question = "What was 3M's total revenue in 2022?"
    _, events = _search(world, question, k=10, parallel=4)
    follow_ups = [e.arguments["query"] for e in events if isinstance(e, ev.ToolCalled)
                  and e.name == "search_corpus" and e.arguments.get("query") != question]
    assert follow_ups, "the runs searched more than the question"
    firsts = {q.split()[0] for q in follow_ups}
    assert not firsts & (HEADER_LABELS | {"PLEASE", "Elizabeth"}), follow_ups


@pytest.mark.slow
def test_no_junk_padding_after_the_filing(world):
    """The same question: the filing first, and no '(no subject)' mail after it (it was ranks 4-10)."""
    result, _ = _search(world, "What was 3M's total revenue in 2022?", k=10, parallel=4)
    titles = _titles(result)
    assert titles and "3M" in titles[0], titles
    assert "(no subject)" not in titles, titles


@pytest.mark.slow
def test_a_rare_word_ranks_the_one_message_holding_it_first(world):
    """'childhood' is in one message only (Dictionary.com's 'proclivity'): it comes first and nothing
    lacking the word is returned (the nearest-meaning 'empty nest syndrome' mails came first)."""
    result, _ = _search(world, "childhood")
    assert result.documents, "the message holding the word is found"
    assert result.documents[0]["title"].startswith("proclivity"), _titles(result)
    for d in result.documents:
        assert "childhood" in _text(world, d["id"]).lower(), f"{d['title']} lacks the word"


@pytest.mark.slow
def test_a_phrase_in_one_message_only_is_found_first(world):
    """'on call this weekend' is written in one message (an out-of-office note whose chunk the
    embedding barely sees behind 40 addresses): it comes first, alone."""
    result, _ = _search(world, "on call this weekend")
    assert _titles(result)[:1] == ["Out of Office - Friday, November 2, 2001"], _titles(result)
    assert len(result.documents) == 1, _titles(result)


@pytest.mark.slow
def test_the_word_question_returns_its_mail_with_a_real_sentence(world):
    """'What does the word proclivity mean?': the proclivity mail first, no other word-of-the-day mail
    padding the list, and the justification one sentence of one of its chunks, verbatim — not the
    From/To/Date/Subject block."""
    result, _ = _search(world, "What does the word proclivity mean?")
    first = result.documents[0]
    assert first["title"].startswith("proclivity"), _titles(result)
    assert len(result.documents) == 1, _titles(result)
    why = first["justification"]
    assert "proclivity" in why.lower() and not re.match(r"\s*(From|To|Date|Subject):", why), why
    flat = " ".join(why.split())  # a sentence as a person reads it: its hard line breaks joined
    assert any(flat in " ".join(c.text.split()) for c in world[1].doc_chunks(first["id"])), "verbatim, from one chunk"


@pytest.mark.slow
def test_scores_are_confidences_and_a_nonsense_question_gets_little(world):
    """Scores are confidences in [0, 1] that fall with the rank; a question nothing supports gets at
    most 2 documents (the list was padded to k)."""
    result, _ = _search(world, "What was 3M's total revenue in 2022?", k=10)
    scores = [d["score"] for d in result.documents]
    assert scores and all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    nonsense, _ = _search(world, "quantum sourdough starters on Mars", k=10)
    assert len(nonsense.documents) <= 2, _titles(nonsense)
