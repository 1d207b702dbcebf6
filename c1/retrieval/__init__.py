"""The read side of retrieval: a collection searched (hybrid search, re-rank), and the evidence that
ranks and justifies its documents (identity, passages, sentences, fusion)."""
