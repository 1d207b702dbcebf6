"""File-name words: what a file name says a document is."""

import pytest

from c1.store.names import file_name_words


@pytest.mark.parametrize(
    "path, words",
    [
        ("/data/3M_2018_10K.pdf", "3M 2018 10K"),
        ("ADOBE_2022_10K.pdf", "ADOBE 2022 10K"),
        ("JPMORGAN_2022Q2_10Q.pdf", "JPMORGAN 2022 Q2 10Q"),
        ("/x/annualReport2019-final.docx", "annual Report 2019 final"),
        ("meeting notes [draft].md", "meeting notes draft"),
        ("/maildir/allen-p/inbox/1.", ""),
        ("/maildir/allen-p/inbox/23", ""),
        ("v1.2.3 release.txt", "v1 2 3 release"),
        ("3M 10-K [2022].pdf", "3M 10-K 2022"),
        ("form S-1 - draft-2.pdf", "form S-1 draft 2"),
        ("AMCOR-Q4-results.pdf", "AMCOR Q4 results"),
        ("2019-03-04 minutes.txt", "2019 03 04 minutes"),
    ],
)
def test_file_name_words(path, words):
    assert file_name_words(path) == words
