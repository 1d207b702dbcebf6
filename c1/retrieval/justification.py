"""The built-in policy's justification of a document within a run, before passages exist: the one
readable sentence of the chunks it holds that bears most on the question (:func:`justify`)."""

from __future__ import annotations

import re

from c1.retrieval import sentences as sx

def justify(ranker, doc, qsim: dict[str, float], ranking=None) -> str:
    """The built-in policy's justification of a document from the chunks it holds (``doc``: an
    ``evidence.DocView``): the readable sentence holding most of the question's terms, each weighted by
    its rarity in the corpus (and, for a document a bridge brought in, the bridge's name), best chunk
    first on ties; never a header, greeting, signature or separator, and a sentence that many chunks
    hold word for word (a mailing list's footer, a disclaimer) is boilerplate, passed over."""
    from c1.retrieval.terms import content_terms
    from c1.store.lexical import stems

    weights = dict(ranker.asked.weights)
    for e in bridge_names(doc.doc_id, ranking):
        for w in content_terms(e):
            weights.setdefault(w, 1.0)
    wanted = {(stems(t) or [t])[0]: w for t, w in weights.items()}
    cands = []
    for cid, text in doc.chunks:
        units = sx.split(text)
        for i, u in enumerate(units):
            if u.kind not in sx.READABLE:
                continue
            unit = u.text(text)
            have = set(stems(unit))
            hit = sum(w for t, w in wanted.items() if t in have)
            n_words = sx.words(unit)
            fit = hit + 0.1 * qsim.get(cid, 0.0) + min(n_words, 30) / 300 - (0.5 if n_words < 4 else 0.0)
            cands.append((fit, unit, (text, units, i)))
    cands.sort(key=lambda c: -c[0])
    for _, unit, where in cands[:6]:
        if not _boilerplate(ranker.searcher, unit):
            return _shown(*where)
    return _shown(*cands[0][2]) if cands else ""


def bridge_names(doc_id: str, ranking) -> tuple[str, ...]:
    """What of a run's ``ranking`` a document's justification weighs besides the question: the pivots'
    bridges, where a bridge brought the document in (else none)."""
    if ranking is None or not ranking.features.get(doc_id, {}).get("bridge"):
        return ()
    from c1.retrieval.bridges import BRIDGES_PER_PIVOT

    return tuple(e for p in ranking.pivots for e in ranking.bridges.get(p, [])[:BRIDGES_PER_PIVOT])


def _shown(text: str, units: list, i: int) -> str:
    """The ``i``-th unit of ``text`` as a justification shows it: a row with its column names, else readable."""
    u = units[i]
    return sx.row_with_header(text, units, i) if u.kind == "row" else sx.readable(u.text(text))


def _boilerplate(corpus, unit: str, copies: int = 5) -> bool:
    """A sentence whose first words more than ``copies`` chunks hold word for word (a list footer, a
    disclaimer, one message filed in several folders) justifies nothing."""
    if corpus is None or not hasattr(corpus, "mentions"):
        return False
    head = " ".join(re.findall(r"\w+", unit)[:10])
    return len(head.split()) >= 4 and corpus.mentions(head) > copies
