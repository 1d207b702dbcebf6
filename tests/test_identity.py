"""Document-level evidence (c1.retrieval.identity): the question's names and period against each
document's identity, as a ranking signal of ``Corpus.hybrid``.

Unit tests on reading questions and scoring identities, then real collections: long documents
that differ only in who and when they are about (their first page, or their file name) are told
apart for a question that names them, while one-chunk passages are left to their own scores.
"""

from __future__ import annotations

import pytest

from c1.retrieval.identity import asked, evidence, identity
from conftest import copy_file, hotpot_paragraphs, write_jsonl


@pytest.mark.parametrize("question, names, years, quarters", [
    ("How much did 3M spend on capital expenditure in FY2018, in USD millions?", {("3m",), ("usd",)}, {2018}, set()),
    ("In 2022 Q2, which of JPM's business segments had the highest net income?", {("jpm",)}, {2022}, {2}),
    ("Looking at VaR, did the risk that JPM faced in the second fiscal quarter of 2023 decrease?",
     {("var",), ("jpm",)}, {2023}, {2}),
    ("What is Adobe's year-over-year change in operating income from FY2015 to FY2016?", {("adobe",)}, {2015, 2016}, set()),
    ("Does American Water Works have positive working capital based on FY2022 data?",
     {("american", "water", "works")}, {2022}, set()),
    ("Walmart's DPO in FY18?", {("walmart",), ("dpo",)}, {2018}, set()),
    ("Who chaired the Bank of America board in fiscal 2021?", {("bank", "of", "america")}, {2021}, set()),
    ("Compare Kraft Heinz and PepsiCo on margins", {("kraft", "heinz"), ("pepsico",)}, set(), set()),
    # a capitalised word that only starts the sentence is not a name
    ("Inventory turnover is defined as COGS over inventory. What was it for Nike?", {("cogs",), ("nike",)}, set(), set()),
    ("how tall is the tower", set(), set(), set()),
])
def test_what_a_question_asks(question, names, years, quarters):
    a = asked(question)
    assert set(a.names) == names
    assert a.years == years and a.quarters == quarters


def _ids():
    return {
        "3m18": identity("UNITED STATES", "3M 2018 10K", "FORM 10-K For the fiscal year ended December 31, 2018 3M COMPANY"),
        "3m22": identity("UNITED STATES", "3M 2022 10K", "FORM 10-K For the fiscal year ended December 31, 2022 3M COMPANY"),
        "amex18": identity("Table of Contents", "AMERICANEXPRESS 2018 10K", "American Express Company annual report"),
        "jpm22": identity("", "JPMORGAN 2022 Q2 10Q", "JPMorgan Chase & Co. quarterly report"),
    }


def test_the_named_document_of_the_asked_period_wins():
    e = evidence(asked("How much did 3M spend on capital expenditure in FY2018?"), _ids())
    assert e["3m18"] == max(e.values()) > 0.7  # "3M" rules out two of the three others, the year the last
    assert e["3m22"] > e["amex18"] > 0  # the right name outweighs the right year
    assert e["jpm22"] == 0.0


def test_a_name_nearly_every_document_holds_is_little_evidence():
    """A folder of NDAs and a lower-cased question, whose "receiving party" and "confidential information"
    are read as the names the agreements write: the one agreement (named by its file only) that does not
    write them is not ruled out by them; a name one agreement holds still singles it out."""
    ids = {f"nda{i}": identity("MUTUAL NON-DISCLOSURE AGREEMENT", f"nda {i}", "the Receiving Party shall hold the "
                               "Confidential Information in confidence") for i in range(9)}
    ids["ingram"] = identity("", "ingram non disclosure", "each party agrees to keep the information secret")
    e = evidence(asked("does the Receiving Party share Confidential Information?"), ids)
    assert max(e.values()) < 0.15, e
    ids["ceii"] = identity("", "ceii and nda", "CEII and the Receiving Party agree")
    rarity = {"ceii": 6.0, "receiving party": 2.0, "confidential information": 1.5}.get  # IDF, as the corpus gives it
    e = evidence(asked("does CEII let the Receiving Party share Confidential Information?"), ids, rarity)
    assert max(e, key=e.get) == "ceii" and e["ceii"] > 0.5


def test_a_report_covers_its_own_year_and_the_years_before():
    ids = {"a15": identity("", "ADOBE 2015 10K", ""), "a16": identity("", "ADOBE 2016 10K", ""),
           "a17": identity("", "ADOBE 2017 10K", "")}
    e = evidence(asked("What is Adobe's change in operating income from FY2015 to FY2016?"), ids)
    assert e["a16"] > e["a15"] > e["a17"]


def test_first_page_dates_give_the_year_when_the_title_and_file_name_do_not():
    ids = {"x": identity("Annual report", "report", "For the fiscal year ended December 25, 2021"),
           "y": identity("Annual report", "report final", "For the fiscal year ended December 31, 2019")}
    e = evidence(asked("What were capital expenditures in fiscal 2019?"), ids)
    assert e["y"] > e["x"]


def test_acronyms_glued_and_split_names_match():
    e = evidence(asked("In 2022 Q2, which of JPM's segments earned most?"), _ids())
    assert max(e, key=e.get) == "jpm22"
    ids = {"ko": identity("Table of Contents", "COCACOLA 2017 10K", ""), "pep": identity("", "PEPSICO 2017 10K", "")}
    e = evidence(asked("What is the FY2017 return on assets for Coca Cola?"), ids)
    assert e["ko"] > e["pep"]


def test_a_name_run_no_document_holds_whole_stands_for_its_names():
    """"the Bosch NDA" is read as one name that no file holds: the NDA whose file name is Bosch's came
    second to one whose file name says NDA. Its words are names of their own, and an acronym also
    matches the initials of consecutive words ("Non-Disclosure Agreement")."""
    ids = {"bosch": identity("MUTUAL NON-DISCLOSURE AGREEMENT", "01 Bosch Automotive Service Solutions Mutual Non "
                             "Disclosure Agreement", "THIS AGREEMENT is made between the parties"),
           "roundhouse": identity("MUTUAL NON-DISCLOSURE AGREEMENT", "Roundhouse Creative Mutual NDA", "Roundhouse Creative"),
           "gwi": identity("", "NDA GWI Technohubs version V1", "Non-Disclosure Agreement between GWI and Technohubs")}
    question = asked("limitation of liability in the Bosch NDA")
    assert question.names == (("bosch", "nda"),)
    e = evidence(question, ids)
    assert max(e, key=e.get) == "bosch" and e["bosch"] == 1.0 and e["roundhouse"] < 0.5, e
    assert ids["bosch"].has_name(("nda",), True) and not ids["bosch"].has_name(("nda",), False)
    from c1.retrieval.identity import _held_names

    assert _held_names(asked("What does the Roundhouse Creative agreement say?"), ids) == [("roundhouse", "creative")]
    assert _held_names(question, ids) == [("bosch",), ("nda",)]
    notes = {"meeting": identity("Meeting notes", "meeting 08", "Attendees: Elena, Marco"),
             "contacts": identity("", "contacts", "name,email\nAda Byron,ada@example.com")}
    person = asked("email of Elena Fairbanks")
    assert _held_names(person, notes) == [("elena", "fairbanks")], "a word no candidate holds: one name, kept whole"
    assert set(evidence(person, notes).values()) == {0.0}


def test_nothing_that_tells_documents_apart_gives_no_evidence():
    ids = {"a": identity("", "ADOBE 2015 10K", ""), "b": identity("", "ADOBE 2015 10Q", "")}
    assert set(evidence(asked("What was Adobe's FY2015 revenue?"), ids).values()) == {0.0}
    assert set(evidence(asked("how does photosynthesis work"), _ids()).values()) == {0.0}


# --- in the real ranking ------------------------------------------------------------------------

COVER = "ANNUAL REPORT\n{company}\nFor the fiscal year ended December 31, {year}\n\n"


@pytest.fixture(scope="module")
def annual_reports(new_c1_env, shared_data):
    """Four long reports (text files named alike) whose bodies are the same real paragraphs; only
    their first page says whose report, for which year."""
    env = new_c1_env("reports")
    body = "\n\n".join(p["text"] for p in hotpot_paragraphs(shared_data, 6))
    folder = env.root / "reports"
    folder.mkdir()
    for i, (company, year) in enumerate([("Northwind Traders", 2019), ("Northwind Traders", 2021),
                                         ("Contoso Ltd", 2019), ("Contoso Ltd", 2021)]):
        (folder / f"report-{i}.txt").write_text(COVER.format(company=company, year=year) + body, encoding="utf-8")
    # a long note whose title is a word written all over the reports ("English")
    other = "\n\n".join(p["text"] for p in hotpot_paragraphs(shared_data, 3, start=100))
    (folder / "note.txt").write_text("English\n\n" + other, encoding="utf-8")
    result = env.run("index", folder, "--json")
    assert result.rc == 0, result.stderr
    return env


def _open(env):
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings

    return Corpus(load_settings().with_flags(home=str(env.home)))


@pytest.mark.parametrize("company, year", [("Northwind Traders", 2019), ("Northwind Traders", 2021),
                                           ("Contoso Ltd", 2019), ("Contoso Ltd", 2021)])
@pytest.mark.slow
def test_hybrid_ranks_the_report_the_question_names_first(annual_reports, company, year):
    corpus = _open(annual_reports)
    try:
        first_page = {d.doc_id: corpus.chunks([f"{d.doc_id}_0"])[0].text for d in corpus.store.manifest.all_docs()}
        assert all(corpus.doc(d).n_chunks > 1 for d in first_page)
        question = f"In fiscal {year}, which film did {company} mention among the Scott Derrickson titles?"
        hits = corpus.hybrid(question, 10)
        top = hits[0].doc.doc_id
        assert company in first_page[top] and str(year) in first_page[top], [h.doc.doc_id for h in hits]
        assert hits[0].chunk.n > 0  # a chunk deep in the report, which names neither
    finally:
        corpus.close()


@pytest.mark.slow
def test_passages_are_left_to_their_own_scores(new_c1_env, shared_data):
    """One-chunk documents take no document-level evidence: the ranking is BM25 ∥ dense → RRF alone."""
    from c1.retrieval.fusion import rrf

    env = new_c1_env("passages")
    corpus_file = write_jsonl(env.root / "paras.jsonl", hotpot_paragraphs(shared_data, 3))
    assert env.run("index", corpus_file, "--json").rc == 0
    corpus = _open(env)
    try:
        q = "Which 2014 film did Scott Derrickson direct for Marvel?"
        vec = corpus.embed_query(q)
        fused = rrf([[c for c, _ in corpus.bm25(q, 60)], [c for c, _ in corpus.dense(vec, 60)]])
        assert [h.chunk.id for h in corpus.hybrid(q, 5, vector=vec)] == [c for c, _ in fused[:5]]
        assert corpus.doc_evidence(q, [c.rsplit("_", 1)[0] for c, _ in fused]) == {}
    finally:
        corpus.close()


@pytest.mark.slow
def test_renamed_copies_of_a_long_pdf_follow_the_question(new_c1_env, shared_data):
    """The same real PDF under two file names: the question's name and year pick the copy."""
    env = new_c1_env("renamed")
    src = shared_data / "pdf" / "pypdf_sample_files" / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
    copy_file(src, env.root / "pdfs" / "NORTHWIND_2019_annual.pdf")
    copy_file(src, env.root / "pdfs" / "NORTHWIND_2021_annual.pdf")
    assert env.run("index", env.root / "pdfs", "--json").rc == 0
    corpus = _open(env)
    try:
        for year in (2019, 2021):
            hits = corpus.hybrid(f"What does Northwind's FY{year} annual report say about the blind text?", 6)
            assert str(year) in hits[0].doc.path
    finally:
        corpus.close()


@pytest.mark.parametrize("company, year", [("Northwind Traders", 2019), ("Contoso Ltd", 2021)])
@pytest.mark.slow
def test_builtin_policy_returns_the_named_report_first_and_what_its_first_search_found(annual_reports, company, year):
    """The built-in policy on long documents with one shared title ("ANNUAL REPORT"): the report
    the question names comes first, with the chunk the question's own search ranks first."""
    from dataclasses import replace

    from c1.agent.policies.builtin import BuiltinPolicy
    from c1.agent.search import run_search

    corpus = _open(annual_reports)
    try:
        first_page = {d.doc_id: corpus.chunks([f"{d.doc_id}_0"])[0].text for d in corpus.store.manifest.all_docs()}
        question = f"In fiscal {year}, which film did {company} mention among the Scott Derrickson titles?"
        result = run_search(corpus, replace(corpus.settings, max_docs=3), question,
                            lambda i: BuiltinPolicy(max_docs=3, variant=i))
        top = result.documents[0]
        assert company in first_page[top["id"]] and str(year) in first_page[top["id"]], \
            [first_page[d["id"]].splitlines()[1:3] for d in result.documents]
        assert corpus.hybrid(question, 5)[0].chunk.id in {c["id"] for c in top["chunks"]}
        # the note titled "English" is mentioned by every report, but that links it to nothing
        assert not any(corpus.doc(d["id"]).title == "English" for d in result.documents)
    finally:
        corpus.close()


@pytest.mark.slow
def test_the_hybrid_baseline_returns_one_search_depth_of_chunks(annual_reports):
    """c1 eval's single-shot baseline on long documents: reading the ranking further to fill k
    documents adds those documents, not dozens more chunks of the first ones."""
    from c1.eval.baselines import retrieve

    corpus = _open(annual_reports)
    try:
        assert corpus.size > 30
        docs = retrieve(corpus, "hybrid", "Which film did Contoso Ltd mention among the Scott Derrickson titles?", 5)
        assert len(docs) == 5  # every report and the note
        assert sum(len(d["chunks"]) for d in docs) <= 20 + 4  # 20 deep, and one chunk of each later document
    finally:
        corpus.close()


def test_the_file_name_year_wins_over_a_filing_date_in_the_title():
    ids = {"y22": identity("10-K - 02/08/2023 - 3M Company", "3M 2022 10K", ""),
           "y23": identity("10-K - 02/07/2024 - 3M Company", "3M 2023 10K", "")}
    assert ids["y22"].years == {2022}
    e = evidence(asked("What was 3M's FY2023 revenue?"), ids)
    assert e["y23"] > e["y22"]


def test_a_possessive_name_on_the_first_page_is_the_questions_name():
    """"Walmart's 2019 annual report" names Walmart as "What was Walmart's DPO in FY2019?" does."""
    ids = {"w19": identity("", "", "Walmart's 2019 annual report to shareholders"),
           "t19": identity("", "", "Target Corporation 2019 annual report to shareholders")}
    got = evidence(asked("What was Walmart's DPO in FY2019?"), ids)
    assert got.get("w19", 0.0) > got.get("t19", 0.0)
