"""The built-in policy: an algorithmic search agent that needs no model.

It drives the same four tools under the same context rules as a model would, in rounds:

1. search the whole question, alone: its results are the anchor ranking. The anchor is that
   search's whole document ranking (what one search returns, ``Corpus.hybrid``), not only the
   few chunks one call could show: while chunks it returns for its top documents are unshown,
   the question's search is called again (``first_pages`` times at most) to show them. A phrase
   the question quotes (or a short keyword query as a whole) is also looked for as written
   (``grep_corpus``), so that the one file that holds it is seen;
2. decompose the question — quoted titles and capitalised names (nationality adjectives such as
   "Canadian rock band" left out; "X and Y", "X or Y" split) — and search each part; at the same
   time follow the bridge entities of the best documents so far (pivots): names in a pivot's
   content that the question does not contain, the one in the sentence that matches the question
   best first (never a header field, a date, a bare first name or a name written all over the
   corpus: c1/retrieval/evidence.py);
3. follow the bridges of the documents that became pivots, and read multi-chunk documents that
   lead the answer;
4. stop when a round after the second leaves the answer set unchanged, or when the turns or the budget
   run out (a cap of four rounds was deleted: it changed no answer of 990 suite questions).

Every document held is scored against the question from what the run has seen
(:class:`c1.retrieval.evidence.Ranker`: similarity, the question's own search, names, rare terms and
phrases, document identity, links and bridges from pivots), and its score is a confidence in
[0, 1]. Documents the question names keep their place in the answer (all of them for a
comparison question). Only documents that the question's own search found, or that have evidence
beyond similarity (named, linked, bridged, identity, a rare term or phrase of the question), may
enter the answer (``gate``): the run does not end below its own first search because a
sub-search brought in something merely similar. Documents whose confidence is under the floor
are not returned, so a question with little support gets fewer than ``max_docs``. The answer's
documents are then ordered by the fitted document ranker (:mod:`c1.retrieval.ranker`, weights fitted on
questions generated from collections: ``bench/ranker_fit.py``, ``c1 train ranker``).

Past the soft limit it prunes the lowest-scored chunks until the context is back under 3/4 of
that limit — never a chunk of a document in its answer set or of a pivot — and only in a turn
that goes on searching. The answer is the ranked list, each document with its confidence and
justified by one sentence of one of its chunks, verbatim: the one that best supports the question.

``variant`` diversifies parallel runs (``--parallel``): odd variants search clauses of the
question before names and add the question's key terms to bridge queries; variants 2 and up
rotate the order of the parts and follow the second-best bridge entity first.

Where each part lives:

- this package: :mod:`.driver` (settings, state, the turn by turn decision, what came back, the
  ranking of what is held), :mod:`.queries` (the searches: own search and its pages, parts, bridges,
  phrases, what to read whole), :mod:`.answer` (which documents, their order, confidences and
  justifications, what to prune);
- the evidence features and their weights: :mod:`c1.retrieval.evidence` (the ``Ranker``),
  :mod:`c1.retrieval.question_terms` (what a question gives to score against),
  :mod:`c1.retrieval.bridges`, :mod:`c1.retrieval.identity` (a document's identity against the names
  and period asked about);
- the order the evidence allows and the confidences: :mod:`c1.retrieval.ranking`,
  :mod:`c1.retrieval.confidence`;
- the fitted document ranker and its weights: :mod:`c1.retrieval.ranker`, ``c1/data/ranker.json``
  (``python bench/ranker_fit.py --write``; ``c1 train ranker`` refits them on a collection);
- what is handed over after the run (every policy's): :mod:`c1.retrieval.passages`.
"""

from c1.agent.policies.builtin.driver import SMALL_BUDGET, BuiltinPolicy
from c1.agent.policies.builtin.queries import is_comparison

__all__ = ["BuiltinPolicy", "SMALL_BUDGET", "is_comparison"]
