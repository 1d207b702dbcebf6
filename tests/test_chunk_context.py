"""The context a chunk is indexed with (c1.index.headers): identity, section heading, page.

Unit tests on the pieces, then the real indexer on real PDFs: two copies of one PDF that differ
only by file name are told apart by BM25 and by the embedding through their file-name words,
while what search returns is the chunk text itself; a repair re-embeds with the same header.
"""

from __future__ import annotations

import pytest

from c1.index.headers import (
    ChunkContext,
    contexts,
    headings,
    identity,
    is_heading,
    section_headings,
    stored_contexts,
    text_from_chunks,
)
from conftest import copy_file

FILING_PAGE = """Table of Contents
Consolidated Statement of Cash Flows
ACME, Inc. and Subsidiaries
Fiscal years ended December 25, 2021, December 26, 2020 and December 28, 2019
(in millions)
2021 2020 2019
Operating Activities
Net income $ 7,679 $ 7,175 $ 7,353
Depreciation and amortization 2,710 2,548 2,432
Change in assets and liabilities:
Accounts and notes receivable (651) (420) (650)
Investing Activities
Capital spending (4,625) (4,240) (4,232)
(Continued on following page)
61
Table of Contents
Item 8. Financial Statements and Supplementary Data
We sell our products through our direct sales force and through independent distributors in both
domestic and international markets.
Table of Contents
Marketing and Sales
The company markets its products through retail partners.
"""


@pytest.mark.parametrize("line", [
    "Consolidated Statement of Cash Flows", "ITEM 7. MANAGEMENT'S DISCUSSION AND ANALYSIS", "Marketing and Sales",
    "2.3 Results", "Item 8. Financial Statements and Supplementary Data", "Our Enterprise, Embedded and Semi-Custom Products",
])
def test_headings_are_recognised(line):
    assert is_heading(line)


@pytest.mark.parametrize("line", [
    "Net income $ 7,679 $ 7,175 $ 7,353",  # a table row
    "Fiscal years ended December 25, 2021, December 26, 2020 and December 28, 2019",  # figures
    "Change in assets and liabilities:",  # a row label that introduces rows
    "(Continued on following page)",
    "domestic and international markets.",  # the end of a sentence
    "The company markets its products through retail partners.",
    "61",
    "We generally warrant that our products sold to our customers will conform to our approved specifications",
])
def test_other_lines_are_not_headings(line):
    assert not is_heading(line)


def test_running_headers_are_not_section_headings():
    found = [h for _, h in headings(FILING_PAGE)]
    assert "Table of Contents" not in found  # on every page: a running header
    assert found[:2] == ["Consolidated Statement of Cash Flows", "ACME, Inc. and Subsidiaries"]
    assert "Item 8. Financial Statements and Supplementary Data" in found


def test_markdown_headings_count_even_when_repeated():
    text = "# Setup\nInstall it.\n\n## Usage\nRun it.\n\n## Usage\nAgain.\n\n## Usage\nAnd again.\n"
    assert [h for _, h in headings(text)] == ["Setup", "Usage", "Usage", "Usage"]


def test_markdown_heading_keeps_a_hash_that_ends_a_word():
    text = "# Learning C#\nIntro.\n\n## Usage ##\nRun it.\n\n#hashtag\n"
    assert [h for _, h in headings(text)] == ["Learning C#", "Usage"]


def test_each_chunk_gets_the_last_heading_before_it():
    start_investing = FILING_PAGE.index("Capital spending")
    start_item8 = FILING_PAGE.index("We sell")
    assert section_headings(FILING_PAGE, [0, start_investing, start_item8]) == [
        "", "Investing Activities", "Item 8. Financial Statements and Supplementary Data"]


def test_identity_adds_file_name_words_only_when_they_say_something():
    assert identity("UNITED STATES", "/f/3M_2018_10K.pdf", "/f/3M_2018_10K.pdf") == "UNITED STATES · 3M 2018 10K"
    assert identity("", "/f/3M_2018_10K.pdf", "/f/3M_2018_10K.pdf") == "3M 2018 10K"
    assert identity("3M 2018 10-K", "/f/3M_2018_10K.pdf", "/f/3M_2018_10K.pdf") == "3M 2018 10-K"  # already there
    # one of many documents of a file: the file name names the collection, not the document
    assert identity("Neil Peart", "/c/corpus.jsonl", "/c/corpus.jsonl#Neil Peart") == "Neil Peart"
    assert identity("Re: budget", "/mail/inbox/1.", "/mail/inbox/1.") == "Re: budget"


def test_embed_text_carries_the_header_and_leaves_passages_alone():
    ctx = ChunkContext("UNITED STATES", "UNITED STATES · 3M 2018 10K", "Consolidated Statement of Cash Flows", 62)
    assert ctx.embed_text("Purchases of property (1,577)") == (
        "UNITED STATES · 3M 2018 10K · Consolidated Statement of Cash Flows · page 62\nPurchases of property (1,577)")
    # a heading the chunk starts with is not repeated
    assert ctx.embed_text("Consolidated Statement of Cash Flows\nNet income").startswith(
        "UNITED STATES · 3M 2018 10K · page 62\n")
    passage = ChunkContext("Neil Peart", "Neil Peart", "", None)
    assert passage.embed_text("Neil Peart was a Canadian drummer.") == "Neil Peart was a Canadian drummer."
    band = ChunkContext("Rush (band)", "Rush (band)", "", None)
    assert band.embed_text("Rush were a Canadian rock band.") == "Rush (band)\nRush were a Canadian rock band."
    assert ctx.lexical_text("Purchases") == "Consolidated Statement of Cash Flows\nPurchases"
    assert passage.lexical_text("Rush were") == "Rush were"


def test_contexts_rebuilt_from_stored_chunks_match_the_original(shared_data):
    """A repair has only the manifest's chunks: the headings it computes must be the indexer's."""
    from c1.config import Settings
    from c1.index.chunking import chunk_spans
    from c1.index.loaders import load
    from c1.store.manifest import Chunk, DocRecord
    from c1.index.walk import walk

    pdf = shared_data / "pdf" / "pypdf_sample_files" / "006-pdflatex-outline" / "pdflatex-outline.pdf"
    sources, _ = walk([str(pdf)], max_bytes=1 << 30)
    doc = load(sources[0])[0]
    spans = chunk_spans(doc.text, Settings().chunk_tokens, Settings().chunk_overlap)
    chunks = [Chunk(f"d_{n}", "d", n, s.start, s.end, doc.page_at(s.start), doc.text[s.start:s.end])
              for n, s in enumerate(spans)]
    original = contexts(doc.title, doc.path, doc.key, doc.text, chunks)
    record = DocRecord("d", doc.key, doc.path, doc.title, None, len(chunks))
    rebuilt = stored_contexts(record, chunks)
    assert [rebuilt[c.id] for c in chunks] == original
    assert [c.heading for c in original][1:] == ["2 Bar", "4 Foo", "7 Foo"]  # the PDF's numbered sections
    assert text_from_chunks(chunks).split() == doc.text.split()


@pytest.fixture(scope="module")
def twin_filings(new_c1_env, shared_data):
    """One real 4-page PDF under two names, indexed: only the file names tell them apart."""
    env = new_c1_env("twins")
    src = shared_data / "pdf" / "pypdf_sample_files" / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
    folder = env.root / "filings"
    copy_file(src, folder / "ACME_2019_10K.pdf")
    copy_file(src, folder / "ZENITH_2021_10K.pdf")
    result = env.run("index", folder, "--json")
    assert result.rc == 0, result.stderr
    return env


def _open(env):
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings

    return Corpus(load_settings().with_flags(home=str(env.home)))


@pytest.mark.parametrize("name, other", [("ACME", "ZENITH"), ("ZENITH", "ACME")])
@pytest.mark.slow
def test_file_name_words_reach_bm25_and_the_embedding(twin_filings, name, other):
    corpus = _open(twin_filings)
    try:
        docs = corpus.store.manifest.all_docs()
        paths = {d.doc_id: d.path for d in docs}
        n = next(d.n_chunks for d in docs if name in d.path)  # both copies have as many chunks
        assert n >= 3
        lexical = [paths[cid.rsplit("_", 1)[0]] for cid, _ in corpus.bm25(f"{name} 10K", 2 * n)]
        assert all(name in f for f in lexical[:n]) and all(other in f for f in lexical[n:]), lexical
        # the embedding sees the header beside the chunk's own text (the same in both copies)
        dense = [paths[cid.rsplit("_", 1)[0]] for cid, _ in corpus.dense(corpus.embed_query(f"{name} 10K annual report"), 2 * n)]
        assert all(name in f for f in dense[:3]), dense
    finally:
        corpus.close()


@pytest.mark.slow
def test_search_returns_the_chunk_text_not_the_header(twin_filings):
    from c1.agent.context import Context
    from c1.agent.tools import Tools

    corpus = _open(twin_filings)
    try:
        tools = Tools(corpus, Context(), "ZENITH 2021 10K blind text")
        obs = tools.execute("search_corpus", {"query": "ZENITH 2021 10K blind text"})
        stored = {c.id: c.text for c in corpus.store.manifest.iter_chunks()}
        assert obs.refs and "ZENITH" in corpus.doc(obs.refs[0].doc_id).path
        for block in obs.text:
            assert stored[block.chunk_id].strip() in block.text
            assert "ZENITH 2021 10K" not in block.text.split("\n", 1)[1]  # the header is not shown
        assert not any("ZENITH" in t for t in stored.values())
    finally:
        corpus.close()


def test_a_year_glued_to_a_word_is_also_searched_alone():
    from c1.store.lexical import query_terms

    assert query_terms("What is the FY2018 capex in 2022Q2 (in USD)?") == [
        "what", "is", "the", "fy2018", "2018", "capex", "2022q2", "2022", "usd"]


@pytest.mark.slow
def test_a_repair_embeds_and_indexes_chunks_with_the_same_header(new_c1_env, shared_data):
    """Vectors lost from Chroma and a lexical index rebuilt after a crash come back as the first
    run made them: the repair rebuilds each chunk's header from the manifest alone."""
    import numpy as np

    from c1.config import load_settings
    from c1.store.embedders import make_embedder
    from c1.index.indexer import Indexer
    from c1.store.collection import open_store

    env = new_c1_env("repair")
    src = shared_data / "pdf" / "pypdf_sample_files" / "006-pdflatex-outline" / "pdflatex-outline.pdf"
    copy_file(src, env.root / "docs" / "ACME_2019_handbook.pdf")
    assert env.run("index", env.root / "docs", "--json").rc == 0
    settings = load_settings().with_flags(home=str(env.home))
    embedder = make_embedder()
    store = open_store(settings, embedder, create=True)
    ids = sorted(store.manifest.chunk_ids())
    before = store.vectors.vectors(ids)
    lexical_before = store.lexical.search("ACME handbook Bar", 50)
    store.vectors.delete(ids[1:])
    store.manifest.set_meta("dirty", "1")
    store.close()

    report = Indexer(settings, embedder).run([str(env.root / "docs")])
    assert report.repaired
    store = open_store(settings, embedder, create=False)
    try:
        after = store.vectors.vectors(ids)
        for cid in ids:
            assert float(np.dot(before[cid], after[cid])) > 0.9999, cid
        assert store.lexical.search("ACME handbook Bar", 50) == lexical_before
    finally:
        store.close()
