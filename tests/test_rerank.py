"""The reranker (c1/retrieval/rerankers.py): the in-process ONNX cross-encoder, the /rerank client against a
real server on 127.0.0.1 that runs it, and where c1 uses it (Corpus.hybrid's first chunks, read_document)."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from c1.retrieval.rerankers import OnnxReranker, RemoteReranker, RerankerError, make_reranker
from model_servers import ModelServer

Q = "How many people live in Berlin?"
PASSAGES = [
    "New York City is famous for the Metropolitan Museum of Art.",
    "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
    "Berlin is the capital of Germany; its zoo is the oldest in the country.",
]


@pytest.fixture(scope="module")
def onnx():
    return OnnxReranker()


def test_the_cross_encoder_scores_as_the_published_model(onnx):
    scores = onnx.score(Q, PASSAGES)
    assert abs(scores[1] - 9.33) < 0.2, scores  # sentence-transformers' own example: 9.331
    assert scores[0] < -5 and scores[1] > scores[2] > scores[0]


def test_pairs_scored_at_once_score_as_they_do_one_by_one(onnx):
    many = PASSAGES * 4 + [p.upper() for p in PASSAGES]
    alone = OnnxReranker(threads=1)
    at_once = OnnxReranker(threads=3).score(Q, many)
    assert at_once == alone.score(Q, many), "the same score for each pair, in the passages' order"
    assert at_once[1] > at_once[0] and at_once[4] > at_once[3]


def test_pairs_are_not_padded_and_only_the_passage_is_cut(onnx):
    short = onnx._tokenizer.encode(Q, PASSAGES[0])
    assert len(short.ids) < 40 and 0 not in short.ids, "no padding to 512"
    long_passage = " ".join(["The agreement shall be governed by the laws of the State of Delaware."] * 80)
    enc = onnx._tokenizer.encode(Q, long_passage)
    query_ids = onnx._query_tokenizer.encode(Q, add_special_tokens=False).ids
    assert len(enc.ids) == onnx.max_tokens
    assert enc.ids[1 : 1 + len(query_ids)] == query_ids, "the query is whole"
    assert enc.type_ids.count(0) == len(query_ids) + 2 and enc.type_ids[-1] == 1, "token types: query 0, passage 1"
    long_query = " ".join(["contract"] * 300)
    assert onnx._query_tokenizer.encode(onnx._short_query(long_query), add_special_tokens=False).ids.__len__() == onnx.query_tokens
    assert len(onnx.score(long_query, [long_passage])) == 1, "a query longer than the model still leaves the passage room"


def test_a_passage_scores_the_same_alone_and_in_a_batch(onnx):
    together = onnx.score(Q, PASSAGES)
    alone = [onnx.score(Q, [p])[0] for p in PASSAGES]
    assert together == pytest.approx(alone, abs=1e-3)
    assert onnx.score(Q, []) == []


@pytest.mark.parametrize("shape,path", [("jina", ""), ("jina", "/v1/rerank"), ("tei", "/rerank")])
def test_the_rerank_client_reads_what_a_real_server_scores(onnx, shape, path):
    with ModelServer(reranker=onnx, rerank_shape=shape) as server:
        remote = RemoteReranker(server.url + path)
        got = remote.score(Q, PASSAGES)
        assert len(server.posts()) == 1
    assert got == pytest.approx(onnx.score(Q, PASSAGES), abs=1e-4), "in the passages' order, not the server's"


def test_a_rerank_server_that_fails_is_a_clear_error(onnx):
    with ModelServer(reranker=onnx) as server:
        with pytest.raises(RerankerError, match="answered 404"):
            RemoteReranker(server.url + "/v2/nothing").score(Q, PASSAGES)
        url = server.url
    with pytest.raises(RerankerError, match=f"rerank server {url}/rerank unreachable"):
        RemoteReranker(url).score(Q, PASSAGES)


def test_the_setting_names_the_reranker():
    assert make_reranker("off") is None
    assert isinstance(make_reranker("auto"), OnnxReranker) and make_reranker("onnx") is make_reranker("auto")
    assert isinstance(make_reranker("http://127.0.0.1:9/v1/rerank"), RemoteReranker)


# --- inside c1 ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def contract(shared_data, tmp_path_factory):
    """One real commercial contract (many chunks) and a few HotpotQA paragraphs, indexed once."""
    import json

    from c1.config import Settings
    from c1.store.embedders import BgeSmallEmbedder
    from c1.index.indexer import Indexer

    root = tmp_path_factory.mktemp("rerank")
    docs = root / "docs"
    docs.mkdir()
    cuad = sorted((shared_data / "legal" / "files" / "cuad").glob("*.txt"), key=lambda p: p.stat().st_size)[0]
    shutil.copy(cuad, docs / cuad.name)
    records = [json.loads(line) for line in (shared_data / "hotpotqa" / "hotpotqa_dev_distractor_200.jsonl").open()][:3]
    with open(docs / "paras.jsonl", "w") as f:
        for r in records:
            for title, sents in r["context"]:
                f.write(json.dumps({"id": title, "title": title, "text": "".join(sents)}) + "\n")
    settings = Settings(home=root / "home", daemon=False)
    embedder = BgeSmallEmbedder()
    Indexer(settings, embedder).run([str(docs)])
    return settings, embedder, cuad.name


def _corpus(contract, rerank):
    from c1.retrieval.corpus import Corpus

    settings, embedder, _ = contract
    return Corpus(replace(settings, rerank=rerank), embedder)


@pytest.mark.slow
def test_read_document_orders_a_documents_best_chunks_by_the_cross_encoder(contract, onnx):
    corpus = _corpus(contract, "onnx")
    try:
        (doc,) = [d for d in corpus.store.manifest.all_docs() if d.path.endswith(contract[2])]
        chunks = corpus.doc_chunks(doc.doc_id)
        corpus.RERANK_TOP = 4  # of its 7 chunks
        assert len(chunks) > corpus.RERANK_TOP
        query = "Which state's law governs the agreement?"
        blend = corpus.rank_chunks(chunks, query)
        read = corpus.rank_chunks(chunks, query, rerank=True)
        top = corpus.RERANK_TOP
        head = [c for c, _ in blend[:top]]
        by_model = onnx.score(query, [c.text for c in head])
        assert [c.id for c, _ in read[:top]] == [c.id for _, c in sorted(zip(by_model, head), key=lambda x: -x[0])]
        assert [s for _, s in read] == [s for _, s in blend], "ranks keep their scores"
        assert [c.id for c, _ in read[top:]] == [c.id for c, _ in blend[top:]]
        assert "govern" in read[0][0].text.lower()
        assert [c.id for c, _ in corpus.rank_chunks(chunks, query)] == [c.id for c, _ in blend], "the policy's view: no model"
    finally:
        corpus.close()
    for setting in ("off", "auto"):  # auto: nowhere, by measurement (AUTO_RERANK)
        other = _corpus(contract, setting)
        try:
            assert [c.id for c, _ in other.rank_chunks(chunks, query, rerank=True)] == [c.id for c, _ in blend]
        finally:
            other.close()
    off = _corpus(contract, "off")
    assert off.score_passages(query, ["x"]) is None
    off.close()


@pytest.mark.slow
def test_search_reranks_its_first_chunks_only_when_asked(contract, onnx):
    from c1.retrieval.corpus import AUTO_RERANK, passage_text

    query = "Who was the drummer of Rush?"
    auto, on = _corpus(contract, "auto"), _corpus(contract, "onnx")
    try:
        plain = auto.hybrid(query, 10)
        assert AUTO_RERANK == {"search": False, "read": False}  # measured: docs/embedders.md
        reranked = on.hybrid(query, 10)
        top = min(on.RERANK_TOP, len(plain))
        by_model = onnx.score(query, [passage_text(h.doc, h.chunk) for h in plain[:top]])
        expected = [h.chunk.id for _, h in sorted(zip(by_model, plain[:top]), key=lambda x: -x[0])]
        assert [h.chunk.id for h in reranked[:top]] == expected
        assert [h.score for h in reranked] == [h.score for h in plain]
        texts = [h.chunk.text for h in plain[:3]]
        assert auto.score_passages(query, texts) == pytest.approx(onnx.score(query, texts), abs=1e-4), \
            "other code (passages) can score with the collection's reranker whatever the places"
    finally:
        auto.close()
        on.close()


@pytest.mark.slow
def test_a_rerank_server_that_is_down_is_a_one_line_error(run_c1, tmp_path):
    (tmp_path / "a.txt").write_text("The ferry leaves Oyster Bay at nine.")
    (tmp_path / "b.txt").write_text("The ferry to Oyster Bay is late on Sundays.")
    assert run_c1("index", str(tmp_path), "-q").rc == 0
    run_c1("search", "-q", "--policy", "builtin", "--rerank", "http://127.0.0.1:9/rerank", "ferry").assert_one_line_error(
        2, "rerank server http://127.0.0.1:9/rerank unreachable")
    run_c1("search", "--rerank", "sometimes", "ferry").assert_one_line_error(2, "not auto, off, onnx or an http(s):// URL")
