"""Reading chunk text for the built-in policy (c1/retrieval/text.py) on real messages and pages."""

from __future__ import annotations

import pytest

from c1.retrieval import text as policy_text
from c1.index.loaders import load
from c1.index.walk import Source
from conftest import shared_data_dir

DATA = shared_data_dir()
FORWARD = "kitchen-l/_americas/esvl/662."
"""A forwarded message: its own header block, a greeting-less note signed "Tammie", then the
forwarded message's header block (tab-separated, "Sent:") and a body signed "Thanks, Christa"."""


@pytest.fixture(scope="module")
def forward() -> str:
    path = DATA / "enron" / "maildir" / FORWARD
    if not path.is_file():
        pytest.skip(f"shared data not found at {DATA}")
    return load(Source(str(path), "eml"))[0].text


def test_units_are_content_sentences_verbatim(forward):
    spans = policy_text.units(forward)
    assert all(0 <= s < e <= len(forward) for s, e in spans), "spans of the text itself"
    assert all(e1 <= s2 for (_, e1), (s2, _) in zip(spans, spans[1:])), "in order, none overlapping another"
    units = [forward[s:e] for s, e in spans]
    assert "Please let me if you would like this formatted another way." in units
    assert "Let me know if you have any questions or need for me to make any adjustments." in units
    for unit in units:
        assert not unit.startswith(("From:", "To:", "Date:", "Subject:", "Sent:", "Cc:")), unit
        assert "Original Message" not in unit and "@" not in unit, unit


def test_names_come_from_content_and_first_names_are_known(forward):
    body = policy_text.content(forward)
    names = policy_text.entities(body)
    assert not {"From", "To", "Date", "Subject", "Sent", "Cc", "Winfrey", "Schoppe"} & set(names), names
    assert "Tammie Let" not in names, "a name never runs across a line break"
    assert {"Tammie", "Christa"} <= policy_text.bare_first_names(body)
    assert "Tom" in policy_text.bare_first_names("Tom Alonso wrote the memo. Ask Tom.")
    assert "Zoë" in policy_text.bare_first_names("Hi Zoë,\nthe starter is ready.")


def test_hard_wrapped_prose_joins_and_table_rows_stand_alone():
    text = ("3M believes this information is\nuseful to investors and management.\n"
            "Net sales $ 34,229 $ 35,355 $ 32,184\nOperating income 6,539 7,369 7,161\n")
    units = [text[s:e] for s, e in policy_text.units(text)]
    assert units[0] == "3M believes this information is\nuseful to investors and management."
    assert "Net sales $ 34,229 $ 35,355 $ 32,184" in units and "Operating income 6,539 7,369 7,161" in units


def test_a_long_line_starting_with_a_label_is_content():
    note = "Note: " + "the board approved the plan after a long review of its costs and risks. " * 4
    assert policy_text.units(note), "a paragraph that starts with a label is not a header field"
    assert policy_text.units("Subject: the plan\n") == []


def test_what_a_document_holds_follows_the_chunks_in_view():
    """A keyword query's terms are looked for in what the run holds now: a document first seen with
    a chunk holding one term, then with the chunk holding both, holds them all (it was scored on
    its first chunks for the rest of the run)."""
    from c1.retrieval.evidence import DocView, Ranker

    ranker = Ranker("heron nest")
    first = {"d": DocView("d", "Birds", [("d_0", "A heron stood in the reeds.")])}
    assert ranker.rank(first, ["d"], {}).features["d"]["keywords"] == 0.0
    later = {"d": DocView("d", "Birds", [("d_0", "A heron stood in the reeds."),
                                         ("d_1", "The heron built a nest of sticks.")])}
    assert ranker.rank(later, ["d"], {}).features["d"]["keywords"] == 1.0


def test_a_titles_first_capital_names_nothing():
    """Titles capitalise their first word as sentences do: "Political party" leaves "political party" in
    common words, while names of several capitalised words ("FA Cup", "Craig Westcarr") and a file
    name's words away from its start still write the question's words."""
    assert policy_text.truecase("what political party was the socialist candidate?", ["It was a political party."],
                       ["Political party"]) == "what political party was the socialist candidate?"
    assert policy_text.truecase("when did craig westcarr win the fa cup", [], ["FA Cup", "Craig Westcarr"]) == \
        "when did Craig Westcarr win the FA Cup"
    assert policy_text.truecase("what does bosch sell", [], ["01 Bosch Automotive Service Solutions"]) == "what does Bosch sell"


def test_a_sentences_first_capital_names_nothing_where_the_corpus_writes_the_word_in_lower_case():
    """A claim typed as a sentence ("Antimicrobial agents are more effective…", "Female carriers of the
    Apolipoprotein E4…") capitalises its first word by grammar: read as a name, it gave four abstracts
    whose identity matched "Antimicrobial" the first places over the abstract the claim is about. Where
    the corpus writes the word in lower case away from a sentence's start, it is no name; where the corpus
    capitalises it ("Enron"), or the next word is capitalised too ("Bank of America"), it stays one."""
    texts = ["Resistance follows antimicrobial use. Antimicrobial stewardship cuts antimicrobial use.",
             "In female carriers the allele raised the risk; female mice did not. Enron said so; the Enron deal.",
             "The bank of the river. Each bank lends."]
    claim = "Antimicrobial agents are more effective due to the pressure of antimicrobial usage."
    assert policy_text.truecase(claim, texts).startswith("antimicrobial agents")
    assert policy_text.question_entities(policy_text.truecase(claim, texts)) == []
    assert policy_text.question_entities(policy_text.truecase("Female carriers of the Apolipoprotein E4 allele", texts)) == \
        ["Apolipoprotein E4"]
    assert policy_text.truecase("Enron's CEO resigned", texts) == "Enron's CEO resigned"
    assert policy_text.truecase("Bank of America profits", texts) == "Bank of America profits"
    assert policy_text.truecase("Bank profits", texts) == "bank profits"
    assert policy_text.truecase("Antimicrobial agents work", []) == "Antimicrobial agents work"  # no evidence: as typed


def test_a_title_cased_title_names_nothing_its_own_text_writes_in_lower_case():
    """A paper's title capitalises every word ("… Amino Acid Usage and …") and its abstract says "usage":
    that capital named nothing, yet it made "usage" a name that four abstracts' identity matched, over
    the abstract the claim was about. A film's title is a name its own text writes so ("The Princess
    Diaries is a 2001 film"), and still names it."""
    names = [("Computational Analyses of Amino Acid Usage and Properties", "We studied amino acid usage in plants."),
             ("The Princess Diaries (film)", "The Princess Diaries is a 2001 American film."),
             ("Diaries of the war", "")]
    assert policy_text.truecase("antimicrobial usage rose", [], names) == "antimicrobial usage rose"
    assert policy_text.truecase("who played in princess diaries", [], names) == "who played in Princess Diaries"


def test_a_word_only_a_file_name_writes_names_its_document():
    """"can the receiving party share it under ingram's nda?": the text of ingram-non-disclosure.txt never says "Ingram" and its file name
    is in lower case, so no form with a capital was there to give; a word that only names write, and no
    text, names the document. A word the texts write (in any case) is left as typed."""
    texts = ["The Receiving Party shall hold the Confidential Information in confidence.",
             "Each party may share the agreement with its advisers, and the Receiving Party may not."]
    names = ["ingram non disclosure", "Mutual agreement"]
    assert policy_text.truecase("can the receiving party share it under ingram's nda?", texts, names) == \
        "can the Receiving Party share it under Ingram's nda?"
    assert policy_text.truecase("what does the mutual agreement say", texts, names) == "what does the mutual agreement say"


def test_quoted_words_are_truecased_but_matched_as_typed():
    """'the merger agreement between "glacier bancorp, inc." and "altabancorp"': the quoted names were kept as typed, so a
    lower-cased question named nothing and another merger agreement went first. Quoted words are
    truecased like the rest, while what is held as written (case and all) is what the user typed."""
    texts = ["This Agreement is made by Glacier Bancorp, Inc. and Altabancorp.",
             "Then Glacier Bancorp, Inc. shall file the Form S-4; Altabancorp shall call its meeting."]
    question = 'does the merger agreement between "glacier bancorp, inc." and "altabancorp" have a break fee?'
    assert policy_text.truecase(question, texts) == \
        'does the merger agreement between "Glacier Bancorp, Inc." and "Altabancorp" have a break fee?'
    from c1.retrieval.evidence import Ranker

    assert Ranker(policy_text.truecase(question, texts), typed=question).asked.exact == []
    assert len(Ranker('the album "Counterparts"').asked.exact) == 1


class _Counts:
    """A collection's term counts, as a searcher gives them (``size`` chunks, ``mentions(term)``)."""

    size = 5000

    def mentions(self, term: str) -> int:
        return {"ticagrelor": 12}.get(term, 900)


def test_a_document_closer_than_every_one_holding_the_rare_terms_misses_nothing():
    """``miss`` (a logit of -1.31 in the evidence model) marks a document that holds none of the
    question's rare terms where another does. The abstract closest to a claim often words it its own way
    ("the P2Y12 inhibitor" for "ticagrelor"): it missed nothing, while one farther from the claim than the
    abstract that says "ticagrelor" still misses."""
    from c1.retrieval.evidence import DocView, Ranker

    ranker = Ranker("ticagrelor lowers bleeding risk in diabetic patients", _Counts())
    assert list(ranker.asked.rare) == ["ticagrelor"]
    docs = {"holder": DocView("holder", "Ticagrelor trial", [("holder_0", "Ticagrelor was given to 900 patients.")]),
            "paraphrase": DocView("paraphrase", "P2Y12 inhibition", [("paraphrase_0", "The P2Y12 inhibitor cut bleeding.")]),
            "farther": DocView("farther", "Aspirin", [("farther_0", "Aspirin and bleeding in the elderly.")])}
    qsim = {"holder_0": 0.73, "paraphrase_0": 0.79, "farther_0": 0.60}
    feats = ranker.rank(docs, ["holder", "paraphrase", "farther"], qsim).features
    assert feats["paraphrase"]["miss"] == 0.0
    assert feats["farther"]["miss"] == 1.0 and feats["holder"]["miss"] == 0.0
