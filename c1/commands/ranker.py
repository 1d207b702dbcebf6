"""``c1 train ranker``: refit the built-in policy's document ranker on the user's own collection."""

from __future__ import annotations

from c1.config import Settings
from c1.terminal.console import emit_json, err, stderr_is_tty
from c1.errors import C1Error


def run_ranker(settings: Settings, *, questions: int, json_out: bool, quiet: bool) -> int:
    from c1.commands.train import _bar
    from c1.retrieval import ranker as rk
    from c1.retrieval.corpus import Corpus
    from c1.train.ranking import fit_collection

    if questions < 10:
        raise C1Error(f"--questions must be at least 10 (a fit on {questions} would be noise)")
    if not settings.collection_dir.is_dir():
        raise C1Error(f"no collection {settings.collection!r} in {settings.home}: index a folder first (c1 index PATH)")
    corpus = Corpus(settings)
    show = not quiet and stderr_is_tty()
    try:
        with _bar(show, "ranker", questions, {"tasks": "", "tok": ""}) as update:
            fitted = fit_collection(corpus, settings, questions, progress=lambda i, n: update(total=n, completed=i))
    finally:
        corpus.close()
    if fitted.informative < 5:
        raise C1Error(f"only {fitted.informative} of {fitted.questions} generated questions had a run that held its "
                      "document beside others: too few to fit; the shipped weights stay in use")
    path = settings.collection_dir / rk.FILE_NAME
    rk.save(fitted.weights, path)
    data = {"path": str(path), "questions": fitted.questions, "informative": fitted.informative,
            "held_gold": round(fitted.held_gold, 4), "weights": fitted.weights.weights}
    if json_out:
        emit_json(data)
    else:
        print(path)
    if not quiet:
        err().print(f"ranker: fitted on {fitted.questions} questions made from {settings.collection!r} "
                    f"({fitted.informative} informative; the run held the question's document for "
                    f"{fitted.held_gold:.0%}); the built-in policy uses it for this collection from now on "
                    f"(delete {path} to go back to the shipped weights)", soft_wrap=True, markup=False)
    return 0
