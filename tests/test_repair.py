"""Collections and the way back from damage: `c1 rm`, folders deleted by hand or on disk, status that
lists every collection, and repair from the manifest (lexical index, Chroma store, chunk hashes).

One small real collection (Enron mail and two notes) is indexed once per module; each test works on
a copy of that home, so that damaging it costs a copy, not an embedding run.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import chroma_collection, copy_enron, inspect_collection, read_manifest

NOTES = {
    "glacier.md": "# Glacier memo\n\nThe Zanzibar glacier survey found quartzite moraines near the northern ridge.\n",
    "ferry.md": "# Ferry memo\n\nThe Oyster Bay ferry timetable changes to hourly crossings in the winter months.\n",
}


@pytest.fixture(scope="module")
def template(new_c1_env, shared_data, tmp_path_factory):
    """A home with collection ``default`` = 6 Enron messages (``mail/``) + two notes (``notes/``)."""
    env = new_c1_env("repair")
    corpus = tmp_path_factory.mktemp("repair-corpus")
    copy_enron(shared_data, corpus / "mail", 6, smallest=True)
    (corpus / "notes").mkdir()
    for name, text in NOTES.items():
        (corpus / "notes" / name).write_text(text)
    result = env.run("index", corpus, "--json", "--quiet")
    assert result.rc == 0, result.stderr
    env.corpus = corpus
    env.report = result.json()
    return env


@pytest.fixture
def home(template, c1_home) -> Path:
    """This test's copy of the template home (its corpus folder is the template's: copy it to change it)."""
    shutil.copytree(template.home, c1_home)
    return c1_home


def status_rows(run_c1) -> tuple[int, dict]:
    result = run_c1("status", "--json")
    assert "Traceback" not in result.stderr
    return result.rc, {r["collection"]: r for r in result.json()["collections"]}


def search_paths(run_c1, query: str) -> list[str]:
    result = run_c1("search", query, "--json", "-k", "3")
    assert result.rc in (0, 1), result.stderr
    return [d["path"] for d in result.json()["documents"]]


# --- c1 rm ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_rm_removes_the_collection_and_its_vectors(home, run_c1, template):
    assert run_c1("index", template.corpus / "notes", "-c", "keep", "--quiet").rc == 0
    result = run_c1("rm", "-c", "default", "--json")
    assert result.rc == 0, result.stderr
    out = result.json()
    assert out["removed"] is True and out["documents"] == template.report["documents"]
    assert out["vectors"] == str(home / "chroma")
    assert not (home / "collections" / "default").exists()
    with pytest.raises(Exception, match="has no vectors"):
        chroma_collection(home, "default")
    rc, rows = status_rows(run_c1)
    assert rc == 0 and list(rows) == ["keep"] and rows["keep"]["consistent"] is True
    assert run_c1("search", "Zanzibar glacier", "-c", "keep", "--json").json()["documents"][0]["path"].endswith("glacier.md")

    run_c1("rm", "-c", "default").assert_one_line_error(2, "no collection 'default'")
    missing = run_c1("rm")
    assert missing.rc == 2 and "--collection" in missing.stderr, "rm never picks a collection by default"


@pytest.mark.slow
def test_rm_after_the_folder_was_deleted_by_hand(home, run_c1):
    shutil.rmtree(home / "collections" / "default")
    result = run_c1("rm", "-c", "default", "--json")
    assert result.rc == 0, result.stderr
    assert result.json()["vectors"] == str(home / "chroma")
    with pytest.raises(Exception, match="has no vectors"):
        chroma_collection(home, "default")


# --- files and folders that are gone ------------------------------------------------------------


@pytest.mark.slow
def test_indexing_a_deleted_folder_removes_its_documents(home, run_c1, template, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(template.corpus, corpus)
    assert run_c1("index", corpus / "notes", "-c", "notes", "--quiet").rc == 0
    assert search_paths(run_c1, "Zanzibar glacier quartzite") != []
    shutil.rmtree(corpus / "notes")

    result = run_c1("index", corpus / "notes", "-c", "notes", "--json")
    assert result.rc == 0, result.stderr
    r = result.json()
    assert (r["deleted"], r["added"], r["documents"], r["total_chunks"]) == (2, 0, 0, 0)
    state = inspect_collection(home, "notes")
    state.assert_consistent()
    assert state.manifest_ids == set() and state.files == {}
    # A path that never held anything is still an error, and changes nothing.
    run_c1("index", corpus / "never", "-c", "notes").assert_one_line_error(2, "never", "no such file")


@pytest.mark.slow
def test_a_deleted_file_named_on_the_command_line_is_removed(home, run_c1, template, tmp_path):
    note = tmp_path / "one.md"
    note.write_text(NOTES["ferry.md"])
    assert run_c1("index", note, "-c", "single", "--quiet").rc == 0
    note.unlink()
    r = run_c1("index", note, "-c", "single", "--json").json()
    assert r["deleted"] == 1 and r["documents"] == 0


@pytest.mark.slow
def test_a_collection_recreated_after_its_folder_was_deleted_is_repaired(home, run_c1, template):
    shutil.rmtree(home / "collections" / "default")  # by hand: Chroma still holds every old vector
    result = run_c1("index", template.corpus / "notes", "--json")
    assert result.rc == 0, result.stderr
    assert result.json()["repaired"] is True
    state = inspect_collection(home)
    state.assert_consistent()
    assert len(state.docs) == 2
    rc, rows = status_rows(run_c1)
    assert rc == 0 and rows["default"]["consistent"] is True


# --- status lists every collection ----------------------------------------------------------------


@pytest.mark.slow
def test_status_lists_every_collection_and_why_one_is_broken(home, run_c1):
    cols = home / "collections"
    shutil.copytree(cols / "default", cols / "damaged")
    (cols / "damaged" / "manifest.sqlite").write_bytes(b"this is not a database" * 100)
    (cols / "a b").mkdir()  # left by an older c1, which accepted any name
    rc, rows = status_rows(run_c1)
    assert rc == 1
    assert set(rows) == {"default", "damaged", "a b"}
    assert rows["default"]["consistent"] is True and rows["default"]["documents"] == 8
    assert "damaged" in rows["damaged"]["error"] and "c1 rm -c damaged" in rows["damaged"]["error"]
    assert "not a collection name" in rows["a b"]["error"] and str(cols / "a b") in rows["a b"]["error"]
    plain = run_c1("status")
    assert plain.rc == 1 and "Traceback" not in plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0].startswith("a b\tBROKEN\t") and lines[1].startswith("damaged\tBROKEN\t")
    assert lines[2] == "default\t8 documents\t{}\tconsistent".format(lines[2].split("\t")[2])


@pytest.mark.parametrize("command", [["search", "glacier"], ["index", "NOTES"], ["status", "-c", "default"]])
@pytest.mark.slow
def test_a_damaged_manifest_is_one_line_saying_what_to_do(home, run_c1, template, command):
    (home / "collections" / "default" / "manifest.sqlite").write_bytes(b"\0" * 4096)
    args = [template.corpus / "notes" if a == "NOTES" else a for a in command]
    result = run_c1(*args)
    if command[0] == "status":
        assert result.rc == 1 and "c1 rm -c default" in result.stdout
    else:
        result.assert_one_line_error(2, "manifest", "c1 rm -c default", "index its files again")


# --- the lexical index ----------------------------------------------------------------------------


def _cut_store_files(lexical: Path) -> None:
    for f in lexical.glob("*.store"):
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


DAMAGE = {
    "folder removed": lambda lexical: shutil.rmtree(lexical),
    "meta.json emptied": lambda lexical: (lexical / "meta.json").write_text(""),
    "store files cut": _cut_store_files,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.slow
def test_a_damaged_lexical_index_is_seen_and_rebuilt(home, run_c1, template, damage):
    DAMAGE[damage](home / "collections" / "default" / "lexical")
    rc, rows = status_rows(run_c1)
    assert rc == 1 and rows["default"]["consistent"] is False
    assert any("lexical index" in p for p in rows["default"]["problems"]), rows["default"]

    search = run_c1("search", "Zanzibar glacier quartzite", "--json")
    assert search.rc == 0 and "Traceback" not in search.stderr
    assert "c1 index` repairs it" in search.stderr, "search says it lost keyword matching"

    result = run_c1("index", template.corpus, "--json")
    assert result.rc == 0, result.stderr
    r = result.json()
    assert r["repaired"] is True and r["unchanged"] == template.report["added"] and r["chunks"] == 0
    inspect_collection(home).assert_consistent()
    from c1.store.lexical import LexicalIndex

    hits = LexicalIndex(home / "collections" / "default" / "lexical").search("quartzite moraines", 3)
    assert hits, "keyword search works again"
    rc, rows = status_rows(run_c1)
    assert rc == 0 and rows["default"]["consistent"] is True


# --- the Chroma store -----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_damaged_chroma_store_is_rebuilt_from_the_manifest(home, run_c1, template):
    assert run_c1("index", template.corpus / "notes", "-c", "other", "--quiet").rc == 0
    db = home / "chroma" / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    data[:100] = b"x" * 100
    db.write_bytes(bytes(data))

    run_c1("search", "glacier").assert_one_line_error(2, "cannot be opened", "c1 index --rebuild")
    run_c1("index", template.corpus).assert_one_line_error(2, "cannot be opened", "c1 index --rebuild")
    rc, rows = status_rows(run_c1)
    assert rc == 1 and all("--rebuild" in r["error"] for r in rows.values())

    result = run_c1("index", template.corpus, "--rebuild", "--json")
    assert result.rc == 0, result.stderr
    r = result.json()
    assert r["repaired"] is True and r["chunks"] == 0 and r["unchanged"] == template.report["added"]
    assert (home / "chroma.damaged-1" / "chroma.sqlite3").exists()
    assert any("moved it to" in w["warning"] for w in r["warnings"])
    inspect_collection(home).assert_consistent()
    assert search_paths(run_c1, "Zanzibar glacier quartzite")[0].endswith("glacier.md")
    # The other collection lost its vectors with the store: status says so, `c1 index` refills them.
    rc, rows = status_rows(run_c1)
    assert rc == 1 and "no vectors" in rows["other"]["error"]
    assert run_c1("index", template.corpus / "notes", "-c", "other", "--json").json()["repaired"] is True
    assert status_rows(run_c1)[0] == 0


@pytest.mark.slow
def test_rebuild_re_embeds_every_chunk(home, run_c1, template):
    import numpy as np

    before = read_manifest(home / "collections" / "default" / "manifest.sqlite")
    ids = sorted(c["id"] for c in before["chunks"])
    model = {i: np.asarray(v) for i, v in chroma_collection(home).vectors(ids).items()}
    # One chunk's vector overwritten with a wrong one: only a re-embedding brings the model's vector back.
    victim = ids[0]
    wrong = np.roll(model[victim], 1) * -1.0
    vectors = chroma_collection(home)
    vectors.col.update(ids=[victim], embeddings=[wrong])
    vectors.close()
    assert np.allclose(chroma_collection(home).vectors([victim])[victim], wrong, atol=1e-6)

    result = run_c1("index", template.corpus, "--rebuild", "--json")
    assert result.rc == 0 and result.json()["repaired"] is True
    after = inspect_collection(home)
    after.assert_consistent()
    assert after.manifest_ids == {c["id"] for c in before["chunks"]}
    rebuilt = chroma_collection(home).vectors(ids)
    cosine = {i: float(np.dot(rebuilt[i], model[i]) / np.linalg.norm(rebuilt[i]) / np.linalg.norm(model[i]))
              for i in ids}
    assert min(cosine.values()) > 0.9999, sorted(cosine.items(), key=lambda kv: kv[1])[:3]
    assert not np.allclose(rebuilt[victim], wrong, atol=1e-3)


# --- chunk hashes: Chroma ahead of the manifest ----------------------------------------------------


class Crash(Exception):
    pass


@pytest.mark.slow
def test_a_crash_between_the_chroma_write_and_the_manifest_write_is_found_by_hash(home, template, tmp_path,
                                                                                monkeypatch):
    """Chunk ids are reused across versions of a document. A run killed before its manifest write has
    already deleted the changed file's old vectors (keywords first: its new chunks are embedded after the
    commit), so no vector in Chroma is stale, only missing. A vector that is stale all the same (written
    by an older c1 killed between its Chroma write and its manifest write) is found by its hash. A later
    run on another folder must leave neither."""
    from c1.store.status import collection_status
    from c1.config import load_settings
    from c1.store.embedders import make_embedder
    from c1.index.indexer import Indexer
    from c1.store.manifest import Manifest

    corpus = tmp_path / "corpus"
    shutil.copytree(template.corpus, corpus)
    settings = load_settings().with_flags(collection="hashes")
    embedder = make_embedder()
    Indexer(settings, embedder).run([str(corpus / "notes"), str(corpus / "mail")])
    (corpus / "notes" / "glacier.md").write_text(NOTES["glacier.md"].replace("Zanzibar", "Patagonia"))

    def crash(self, *args, **kwargs):
        raise Crash("killed between the Chroma upsert and the manifest write")

    with monkeypatch.context() as m:
        m.setattr(Manifest, "replace_files", crash)
        with pytest.raises(Crash):
            Indexer(settings, embedder).run([str(corpus / "notes")])
    status = collection_status(settings)
    assert status["stale_chunks"] == 0 and status["consistent"] is False and status["interrupted"] is True
    # What an older c1 left: the new text's vector under an id whose manifest text is old.
    old = next(c for c in inspect_collection(settings.home, "hashes").chunks if "Zanzibar" in c["text"])
    vectors = chroma_collection(settings.home, "hashes")
    vectors.col.upsert(ids=[old["id"]], embeddings=embedder.embed(["Patagonia glacier"]),
                       documents=["Patagonia"], metadatas=[{"doc": old["doc_id"], "hash": "0" * 16}])
    vectors.close()
    assert collection_status(settings)["stale_chunks"] == 1

    Indexer(settings, embedder).run([str(corpus / "mail")])  # the next run is on another folder
    state = inspect_collection(settings.home, "hashes")
    state.assert_consistent()
    texts = {c["id"]: c["text"] for c in state.chunks}
    got = chroma_collection(settings.home, "hashes").col.get(include=["documents"])
    assert dict(zip(got["ids"], got["documents"])) == texts, "Chroma holds exactly the manifest's text"
    status = collection_status(settings)
    assert status["stale_chunks"] == 0 and status["consistent"] is True
    # The changed note is indexed again by the next run over its folder.
    Indexer(settings, embedder).run([str(corpus / "notes")])
    assert any("Patagonia" in c["text"] for c in inspect_collection(settings.home, "hashes").chunks)


@pytest.mark.slow
def test_manifests_from_before_hashes_are_migrated(home, run_c1, template):
    """An old manifest (no hash column) still opens, reads and indexes."""
    path = home / "collections" / "default" / "manifest.sqlite"
    db = sqlite3.connect(path)
    with db:
        db.execute("ALTER TABLE chunks DROP COLUMN hash")
    db.close()
    rc, rows = status_rows(run_c1)
    assert rc == 0 and rows["default"]["consistent"] is True
    assert run_c1("search", "ferry timetable", "--json").rc == 0
    result = run_c1("index", template.corpus, "--json")
    assert result.rc == 0, result.stderr
    assert "hash" in {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(chunks)")}
    assert json.loads(result.stdout)["unchanged"] == template.report["added"]
