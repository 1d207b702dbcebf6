"""Numbers as people write them (issue 33, defect 5): "97,640 employees" finds the cell 97640, "$1.2
million" finds 1,200,000 — one form of numbers on both sides of the keyword index — and an index
written before that form is refilled by the next `c1 index`."""

import pytest

from c1.store.lexical import LexicalIndex, query_terms, stems


def _form(text: str) -> str:
    from c1.store.keywords import keyword_form

    return keyword_form(text)


@pytest.mark.parametrize("written, read", [
    ("97,640 employees", "97640 employees"),
    ("$1,200,000", "$1200000"),
    ("1,200,000.50", "1200000.50"),
    ("1.200.000 €", "1200000 €"),  # German thousands
    ("1.234,56 EUR", "1234,56 EUR"),  # German decimals: the same two terms as 1,234.56
    ("1\u00a0200\u00a0000 €", "1200000 €"),  # French, no-break spaces
    ("CHF 1'200'000", "CHF 1200000"),
    ("９７，６４０人", "97640 人 "),  # full-width
])
def test_thousands_separators_are_dropped(written, read):
    assert _form(written) == read


@pytest.mark.parametrize("text", ["version 3.5", "97.640", "in 18 100 cases", "items 1,2,3", "12,345,6789",
                                  "dated 2.5.2020", "Fiscal 2019, 2018", "FY2018"])
def test_what_is_no_grouped_number_stays(text):
    """A decimal (one group after a dot reads as one: 97.640), a list, an ordinary space, a date."""
    assert _form(text) == text


@pytest.mark.parametrize("written, value", [
    ("$1.2 million", "1200000"), ("1,2 Millionen Euro", "1200000"), ("$0.5bn", "500000000"),
    ("US$1.2M", "1200000"), ("3 thousand", "3000"), ("2.5 billion", "2500000000"), ("9.764万元", "97640"),
])
def test_a_scaled_figure_is_also_its_value(written, value):
    assert value in _form(written).split()


def test_a_letter_scales_a_figure_only_after_a_currency_sign():
    assert "5000000" in _form("$5m").split() and _form("5 m long") == "5 m long"
    assert "1200000" not in _form("1.25 million").split() and "1250000" in _form("1.25 million").split()


def test_the_index_terms_and_the_passage_terms_agree():
    assert query_terms("97,640 employees") == ["97640", "employees"]
    assert set(stems("1,234.56")) == set(stems("1.234,56")) == {"1234", "56"}
    assert "1200000" in stems("a budget of $1.2 million")


def _ids(index: LexicalIndex, query: str) -> list[str]:
    return [i for i, _ in index.search(query, 5)]


def test_a_number_written_with_separators_finds_the_cell(tmp_path):
    index = LexicalIndex(tmp_path / "lexical")
    index.add("sheet_0", "sheet", "headcount.csv", "Year: 2022 | Employees: 97640 | Revenue: 1200000")
    index.add("note_0", "note", "fleet", "The company had 97 offices and 640 vehicles in 2022.")
    index.add("memo_0", "memo", "budget", "The approved budget for the Harbour project is $1.2 million.")
    index.commit()
    assert _ids(index, "97,640 employees")[0] == "sheet_0", "not the note with 97 and 640 apart"
    assert set(_ids(index, "1,200,000")[:2]) == {"sheet_0", "memo_0"}
    assert "sheet_0" in _ids(index, "$1.2 million")


def test_an_index_written_by_an_older_c1_is_refilled(new_c1_env):
    """An index whose text tantivy's tokenizer cut raw (no format mark) is refilled by `c1 index`."""
    import tantivy

    env = new_c1_env("old-lexical")
    corpus = env.root / "corpus"
    corpus.mkdir()
    (corpus / "headcount.csv").write_text("Year,Employees\n2021,95210\n2022,\"97,640\"\n", encoding="utf-8")
    assert env.run("index", corpus, "--quiet").rc == 0
    path = env.home / "collections" / "default" / "lexical"
    index = LexicalIndex(path)
    ids = index.all_ids()
    index.clear()
    for chunk_id in ids:  # as an older c1 wrote it
        index.writer.add_document(tantivy.Document(id=chunk_id, doc=chunk_id.split("_")[0], title="headcount",
                                                   text="Year: 2022 | Employees: 97,640"))
    index.writer.commit()
    index.close()
    (path / "c1-format").unlink()
    assert _ids(LexicalIndex(path), "97640") == [], "the old form holds 97 and 640"
    again = env.run("index", corpus, "--json")
    assert again.rc == 0, again.stderr
    assert "written by an older c1" in again.stdout
    assert _ids(LexicalIndex(path), "97,640"), "refilled from the manifest in today's form"
    assert (path / "c1-format").read_text().strip() == "2"


@pytest.mark.slow
def test_a_search_for_a_number_as_written_finds_its_cell(new_c1_env):
    """The issue's own case, through `c1 search`: "97,640 employees" put a note holding 97 and 640
    apart first; the spreadsheet's cell 97640 now comes first, its row the passage."""
    import json

    env = new_c1_env("numbers")
    corpus = env.root / "corpus"
    corpus.mkdir()
    (corpus / "headcount.csv").write_text("Year,Employees,Revenue\n2021,95210,1100000\n2022,97640,1200000\n",
                                          encoding="utf-8")
    (corpus / "fleet.txt").write_text("Fleet report\n\nThe company had 97 offices and 640 vehicles in 2022. "
                                      "Employees use the vehicles for site visits.\n", encoding="utf-8")
    (corpus / "budget.txt").write_text("Budget memo\n\nThe approved budget for the Harbour project is $1.2 "
                                       "million for the coming year.\n", encoding="utf-8")
    assert env.run("index", corpus, "--quiet").rc == 0
    got = env.run("search", "97,640 employees", "--json", "--no-daemon", "--policy", "builtin", "-k", "3")
    assert got.rc == 0, got.stderr
    docs = json.loads(got.stdout)["documents"]
    assert docs[0]["path"].endswith("headcount.csv")
    assert "97640" in docs[0]["passages"][0]["text"]


def test_remembered_stems_and_words_are_each_callers_own_and_as_computed():
    """stems and coverage remember a text's words (reads rank the same chunks again): what comes back is the
    analyzer's answer, also asked a second time, and a caller that changes its list changes nobody else's."""
    from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

    from c1.retrieval.terms import coverage
    from c1.store.keywords import keyword_form

    analyzer = TextAnalyzerBuilder(Tokenizer.simple()).filter(Filter.lowercase()).filter(Filter.stemmer("english")).build()
    text = "The Herons predicted net sales of $1.2 million in 2022; herons nest."
    first = stems(text)
    assert first == analyzer.analyze(keyword_form(text))
    first.append("changed")
    assert stems(text) == analyzer.analyze(keyword_form(text)) and stems("") == [] and stems("...") == []
    assert coverage(["herons", "predicts", "nothing"], text) == pytest.approx(2 / 3)  # "predi" prefix
    assert coverage(["1200000", "2022"], text) == 1.0 and coverage(["1200000"], "no figure") == 0.0
    assert coverage(["herons", "predicts", "nothing"], text) == pytest.approx(2 / 3)


def test_a_texts_term_counts_are_those_of_its_stems():
    """A read counts the question's terms in the remembered joined stems, not in a list made for each text:
    the counts must be those of the stems' list, a word repeated side by side included."""
    import random
    from collections import Counter

    from c1.store.lexical import stem_counts

    rng = random.Random(5)
    words = ["heron", "herons", "sales", "sale", "net", "1,200", "$1.2 million", "the", "a", "q2", "é", "x_y"]
    for _ in range(2000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) + rng.choice(["", ".", " 2022"])
        bag = stems(text)
        wanted = list(dict.fromkeys(rng.sample(bag, min(len(bag), 3)) + ["absent", ""]))
        assert stem_counts(text, wanted) == (len(bag), {w: n for w, n in Counter(bag).items() if w in wanted}), text


def test_chunks_that_score_the_same_rank_by_id_whatever_the_build(tmp_path):
    """Two builds of one folder write its chunks in another order: a tie (two copies of a contract) must not
    change places between them, or the same question gets other confidences from the same files."""
    rows = [(f"copy{i}_0", "copy", "nda", "Either party may terminate for convenience on thirty days notice.")
            for i in range(12)] + [("other_0", "other", "memo", "Notice of the meeting, not of termination.")]
    got = []
    for name, order in (("forward", rows), ("backward", rows[::-1])):
        index = LexicalIndex(tmp_path / name)
        for i, (cid, doc, title, text) in enumerate(order):
            index.add(cid, doc, title, text)
            if i % 3 == 2:
                index.commit()  # several segments, as a real index has
        index.commit()
        got.append((index.search("terminate for convenience", 5), index.search("terminate for convenience", 3)))
    assert got[0] == got[1]
    copies = sorted(f"copy{i}_0" for i in range(12))
    assert [cid for cid, _ in got[0][0]] == copies[:5]
    assert [cid for cid, _ in got[0][1]] == copies[:3], "a tie longer than the hits fetched past k (3 + 8 < 12)"
