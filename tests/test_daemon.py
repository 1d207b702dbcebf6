"""The resident process (c1/daemon): `c1 search` and `c1 status` through it print exactly what they print
in-process, and it survives what a user's machine does to it: kill -9, a stale socket, two homes,
concurrent commands, an upgrade of c1, a re-index, a read-only home, idling out.

Every check compares the command through the resident process with the same command under
``--no-daemon`` (the in-process path), on the same home, in the same test, and checks that the
resident process did answer (its count of requests served went up): a command whose request fails
there works in-process instead and would print the same.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import c1_argv, hotpot_paragraphs, indexed_hotpot, readonly_view, run_cli, shared_data_dir, write_jsonl

QUESTIONS = (  # the questions of the three records indexed (a question the corpus cannot support finds nothing)
    "Which Canadian rock band released a song called \"Counterparts\" and had a drummer who was inducted into the "
    "Modern Drummer Hall of Fame?",
    "What was the English football club Tottenham Hotspur that Leonard Francis played for commonly referred to as?",
    "In what year did the Danish plant ecologist who assisted a Danish chemist, famous for the introduction of the "
    "concept of pH die?",
)
ON = {"C1_DAEMON": "1", "C1_DAEMON_IDLE": "120"}


def _shared() -> Path:
    return shared_data_dir()


@pytest.fixture(scope="module")
def home(new_c1_env):
    """Three HotpotQA records' paragraphs, indexed; shared by the tests that do not change it."""
    return indexed_hotpot(new_c1_env, "daemon")


@pytest.fixture
def own_home(new_c1_env, request):
    """A home of this test's own (it re-indexes, damages or kills)."""
    env = indexed_hotpot(new_c1_env, request.node.name[:30])
    yield env
    stop(env.env)


def c1(env, *args, daemon: bool = True, extra: dict | None = None):
    """The CLI in a subprocess, through the resident process (``daemon``) or with ``--no-daemon``."""
    flags = () if daemon else ("--no-daemon",)
    return run_cli([*args, *flags], {**env.env, **ON, **(extra or {})}, timeout=300)


def settings_of(env: dict):
    from c1.config import Settings

    return Settings(home=Path(env["C1_HOME"]))


def ping(env: dict) -> dict | None:
    from c1.daemon.client import control

    return control(settings_of(env), "ping")


def served(env: dict) -> int:
    """Requests the home's resident process has answered (0 when none is running)."""
    reply = ping(env)
    return reply["served"] if reply else 0


def answered(env, *args):
    """``c1(env, *args)`` through the resident process, which must have answered it."""
    before = served(env.env)
    result = c1(env, *args)
    assert served(env.env) == before + 1, ("the resident process did not answer: the command ran in-process",
                                           result.stderr)
    return result


def stop(env: dict) -> None:
    from c1.daemon.client import control

    reply = ping(env)
    control(settings_of(env), "stop")
    if reply:
        wait_gone(reply["pid"])


def socket_path(env: dict) -> Path:
    from c1.daemon import protocol

    return protocol.paths(protocol.real_home(Path(env["C1_HOME"])))[0]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone for our purpose
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} still running"
        time.sleep(0.05)


def untimed(obj):
    """A --json document without its wall times (the only thing two identical searches may differ in)."""
    if isinstance(obj, dict):
        return {k: untimed(v) for k, v in obj.items() if k != "seconds"}
    if isinstance(obj, list):
        return [untimed(v) for v in obj]
    return obj


def same_search(env, *args) -> dict:
    """The search through the resident process and in-process: same exit code, stdout and stderr."""
    here = c1(env, "search", *args, daemon=False)
    there = answered(env, "search", *args)
    assert there.rc == here.rc, (there.stderr, here.stderr)
    assert there.stderr == here.stderr
    if "--json" in args:
        assert untimed(there.json()) == untimed(here.json())
        return there.json()
    if "--jsonl" in args:
        lines = [json.loads(line) for line in there.stdout.splitlines()]
        assert untimed(lines) == untimed([json.loads(line) for line in here.stdout.splitlines()])
        return {"events": lines}
    assert there.stdout == here.stdout
    return {}


# --- same results --------------------------------------------------------------------------------


@pytest.mark.slow
def test_searches_through_the_resident_process_print_what_in_process_searches_print(home):
    first = same_search(home, QUESTIONS[0], "--json", "-k", "3")
    assert first["documents"] and first["policy"] == "builtin"
    pid = ping(home.env)["pid"]
    same_search(home, QUESTIONS[1], "--parallel", "2")  # plain text
    events = same_search(home, QUESTIONS[2], "--jsonl")["events"]
    assert events[0]["event"] == "run_started" and events[-1]["event"] == "result"
    assert ping(home.env)["pid"] == pid, "one resident process served them all"


@pytest.mark.slow
def test_the_trajectory_and_errors_come_back_as_in_process(home, tmp_path):
    there = answered(home, "search", QUESTIONS[0], "--save-trajectory", tmp_path / "a.json")
    here = c1(home, "search", QUESTIONS[0], "--save-trajectory", tmp_path / "b.json", daemon=False)
    assert there.rc == here.rc == 0 and there.stdout == here.stdout
    saved = [json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json")]
    assert saved[0]["trajectories"] and untimed(saved[0]) == untimed(saved[1])

    wrong = ("--embed-url", "http://127.0.0.1:9", "--embed-model", "other")
    there, here = answered(home, "search", "x", *wrong), c1(home, "search", "x", *wrong, daemon=False)
    line = there.assert_one_line_error(2, "was indexed with embedder")
    assert line == here.assert_one_line_error(2)
    assert ping(home.env) is not None


@pytest.mark.slow
def test_no_daemon_starts_nothing(new_c1_env):
    env = indexed_hotpot(new_c1_env, "nodaemon", records=1)
    assert c1(env, "search", QUESTIONS[0], daemon=False).rc == 0
    assert c1(env, "status", daemon=False).rc == 0
    assert not socket_path(env.env).exists() and ping(env.env) is None


# --- what a machine does to it -------------------------------------------------------------------


@pytest.mark.slow
def test_a_killed_resident_process_is_replaced(own_home):
    same_search(own_home, QUESTIONS[0], "--json")
    pid = ping(own_home.env)["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid)
    assert socket_path(own_home.env).exists(), "kill -9 leaves its socket behind"
    same_search(own_home, QUESTIONS[1], "--json")
    assert ping(own_home.env)["pid"] != pid


@pytest.mark.slow
def test_a_stale_socket_is_replaced(own_home):
    path = socket_path(own_home.env)
    stop(own_home.env)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:  # bound, never listening: refuses
        dead.bind(str(path))
    same_search(own_home, QUESTIONS[0], "--json")
    assert ping(own_home.env) is not None


@pytest.mark.slow
def test_two_homes_two_processes_each_answers_for_its_own(home, new_c1_env):
    other = indexed_hotpot(new_c1_env, "other-home", start=3)
    try:
        a = same_search(home, QUESTIONS[0], "--json")
        b = same_search(other, QUESTIONS[0], "--json")
        assert {d["id"] for d in a["documents"]} != {d["id"] for d in b["documents"]}
        assert ping(home.env)["pid"] != ping(other.env)["pid"]
        assert ping(home.env)["home"] == os.path.realpath(home.env["C1_HOME"])

        from c1.daemon import protocol

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # a request for another home: refused
            sock.connect(str(socket_path(home.env)))
            sock.sendall(protocol.dumps({"op": "search", "build": protocol.build_id(), "home": other.env["C1_HOME"],
                                         "settings": {}, "query": "x"}))
            reply = protocol.loads(sock.makefile("rb").readline())
        assert reply["type"] == "refused" and reply["reason"] == "home"
    finally:
        stop(other.env)


@pytest.mark.slow
def test_concurrent_commands_start_one_process_and_each_gets_its_own_answer(own_home):
    stop(own_home.env)
    env = {**own_home.env, **ON}
    procs = [subprocess.Popen(c1_argv("search", q, "--json"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for q in QUESTIONS * 2]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    # counted before the in-process searches below: on a loaded machine they can outlast the idle time
    running = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _is_daemon_of(p, own_home.env["C1_HOME"])]
    assert len(running) == 1, running
    assert served(own_home.env) == len(procs), "the resident process answered every one"
    for q, (out, _) in zip(QUESTIONS * 2, outs):
        here = c1(own_home, "search", q, "--json", daemon=False)
        assert untimed(json.loads(out)) == untimed(here.json())


def _is_daemon_of(proc: Path, home: str) -> bool:
    try:
        argv = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"c1.daemon" in argv and os.path.realpath(home).encode() in argv and alive(int(proc.name))


@pytest.mark.slow
def test_a_resident_process_of_another_build_is_replaced(own_home, tmp_path):
    """An upgrade (here: an edited copy of c1) must not be answered by the process of the old code."""
    import c1
    from c1.daemon import protocol

    copy = tmp_path / "pkg"
    shutil.copytree(Path(c1.__file__).parent, copy / "c1", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**own_home.env, **ON, "PYTHONPATH": str(copy)}
    stop(own_home.env)
    first = run_cli(["search", QUESTIONS[0], "--json"], env, cwd=tmp_path)  # not the checkout's c1 (python -m)
    old = ping(own_home.env)
    assert first.rc == 0 and old is not None and old["build"] != protocol.build_id() and old["served"] == 1
    with open(copy / "c1" / "__init__.py", "a") as f:
        f.write("\n# an upgrade\n")
    second = run_cli(["search", QUESTIONS[0], "--json"], env, cwd=tmp_path)
    assert second.rc == 0 and untimed(second.json()) == untimed(first.json())
    new = ping(own_home.env)
    assert new["pid"] != old["pid"] and new["build"] != old["build"] and new["served"] == 1
    wait_gone(old["pid"])


@pytest.mark.slow
def test_a_reindex_is_seen_without_a_restart(own_home):
    same_search(own_home, QUESTIONS[0], "--json")
    pid = ping(own_home.env)["pid"]
    write_jsonl(own_home.corpus / "more.jsonl", hotpot_paragraphs(_shared(), 2, start=10))
    assert own_home.run("index", own_home.corpus, "--quiet").rc == 0
    records = json.loads((_shared() / "hotpotqa" / "hotpotqa_dev_distractor_200.jsonl").read_text().splitlines()[10])
    found = same_search(own_home, records["question"], "--json", "-k", "3")
    gold = {t for t, _ in records["supporting_facts"]}
    assert gold & {d["source_id"] for d in found["documents"]}, "the new paragraphs are searched"
    assert ping(own_home.env)["pid"] == pid


@pytest.mark.slow
def test_a_read_only_home(home, tmp_path):
    with readonly_view(home.home, tmp_path / "ro") as view:
        env = type(home)(home.root, {**home.env, "C1_HOME": str(view), "TMPDIR": str(tmp_path)})
        try:
            same_search(env, QUESTIONS[0], "--json")
            assert ping(env.env) is not None
            there, here = answered(env, "status", "--json"), c1(env, "status", "--json", daemon=False)
            assert there.rc == here.rc == 0 and there.json() == here.json()
        finally:
            stop(env.env)


@pytest.mark.slow
def test_a_read_only_home_is_copied_once_and_cleaned_up_on_sigterm(home, tmp_path):
    """On a read-only home the resident process reads Chroma and tantivy from private copies: each request
    made new ones (262 MB each on a real home: `c1 status` took 6.4 s), and `kill -TERM` left them all."""
    temp = tmp_path / "temp"
    temp.mkdir()

    def copies() -> set[str]:
        return {p.name for p in temp.iterdir() if p.name.startswith("c1-readonly-")}

    with readonly_view(home.home, tmp_path / "ro") as view:
        env = type(home)(home.root, {**home.env, "C1_HOME": str(view), "TMPDIR": str(temp)})
        try:
            assert c1(env, "status", "--json").rc == 0
            pid = ping(env.env)["pid"]
            first = copies()
            assert first, "the resident process reads from private copies"
            assert answered(env, "status", "--json").rc == 0
            assert answered(env, "search", QUESTIONS[0], "--json").rc == 0
            assert answered(env, "status", "--json").rc == 0
            assert copies() == first, "copied once"
            os.kill(pid, signal.SIGTERM)
            wait_gone(pid)
            assert copies() == set(), "removed when the process is ended by SIGTERM"
        finally:
            stop(env.env)


@pytest.mark.slow
def test_it_idles_out(new_c1_env):
    env = indexed_hotpot(new_c1_env, "idle", records=1)
    assert c1(env, "search", QUESTIONS[0], extra={"C1_DAEMON_IDLE": "1"}).rc == 0
    reply = ping(env.env)
    assert reply is not None
    wait_gone(reply["pid"], timeout=30)
    assert not socket_path(env.env).exists()


# --- status --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_status_through_the_resident_process(own_home):
    def both():
        there, here = answered(own_home, "status", "--json"), c1(own_home, "status", "--json", daemon=False)
        assert there.rc == here.rc and there.json() == here.json()
        plain = answered(own_home, "status")
        assert plain.stdout == c1(own_home, "status", daemon=False).stdout
        return there

    first = both()
    assert first.rc == 0 and ping(own_home.env) is not None
    assert both().json() == first.json(), "asked again, unchanged"
    write_jsonl(own_home.corpus / "more.jsonl", hotpot_paragraphs(_shared(), 1, start=20))
    assert own_home.run("index", own_home.corpus, "--quiet").rc == 0
    grown = both().json()["collections"][0]
    assert grown["chunks"] > first.json()["collections"][0]["chunks"] and grown["consistent"]
    shutil.rmtree(own_home.home / "collections" / "default" / "lexical")
    broken = both()
    assert broken.rc == 1 and "lexical index" in " ".join(broken.json()["collections"][0]["problems"])
    same_search(own_home, QUESTIONS[0], "--json")  # the warning "keyword search is off", on both paths


def test_the_client_costs_little_to_import():
    """What `c1 search` imports when the resident process answers: none of the heavy libraries."""
    code = ("import sys; import c1.cli, c1.commands.search, c1.daemon.client, c1.agent.result; "
            "print(sorted(m for m in ('chromadb', 'onnxruntime', 'numpy', 'tantivy', 'tokenizers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_a_search_through_the_resident_process_imports_only_the_round_trip(home):
    """`c1 search` through the resident process costs what Python and the flags cost: no pydantic (Typer's
    coercion of values that need none is skipped), no store, no model, no agent beyond the result type;
    a bad value still gets Typer's own error. The plain output into a pipe comes rendered by the resident
    process: no rich, no excerpt of passages here, and the same text as an in-process search prints."""
    answered(home, "search", QUESTIONS[0], "--json", "-q")  # the resident process is up
    for form in (["--json"], []):
        before = served(home.env)
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "c1", "search", QUESTIONS[1], *form, "-q",
                               "-k", "3", "--budget", "8192", "--soft-threshold", "0.4"],
                              env={**home.env, **ON}, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert served(home.env) == before + 1, "answered by the resident process"
        if form:
            assert json.loads(proc.stdout)["budget"] == 8192 and len(json.loads(proc.stdout)["documents"]) <= 3
        else:
            here = subprocess.run([sys.executable, "-m", "c1", "search", QUESTIONS[1], "-q", "-k", "3", "--budget",
                                   "8192", "--soft-threshold", "0.4", "--no-daemon"],
                                  env={**home.env, **ON}, capture_output=True, text=True, timeout=300)
            assert proc.stdout == here.stdout and proc.stdout.startswith(" 1. ")
        names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
        heavy = sorted(n for n in names if n.split(".")[0] in ("pydantic", "pydantic_core", "chromadb", "onnxruntime",
                                                                "numpy", "tantivy", "tokenizers", "rich"))
        assert heavy == [], form
        ours = ("c1.agent.", "c1.index.", "c1.store.", "c1.retrieval.")
        assert sorted(n for n in names if n.startswith(ours)) == ["c1.agent.result"], form
    bad = c1(home, "search", QUESTIONS[0], "-k", "0")
    assert bad.rc == 2 and "-k" in bad.stderr and "Traceback" not in bad.stderr


def test_a_request_imports_nothing_until_the_warm_up_has_imported(tmp_path, monkeypatch):
    """Two threads importing numpy (chromadb) at once can fail with 'partially initialized module': the
    first request, sent while the warm-up thread imports, waits for those imports before its own."""
    import threading

    from c1.daemon import protocol, server

    importing, release = threading.Event(), threading.Event()

    def slow_import(self):
        importing.set()
        release.wait(30)

    monkeypatch.setattr(server.Resident, "_import", slow_import)
    monkeypatch.setattr(server.Corpora, "embedder", lambda self, settings: None)  # no session: not the point
    dispatched = []

    def dispatch(self, request, send):
        dispatched.append(request["op"])
        send({"type": "rows", "rows": []})

    monkeypatch.setattr(server.Resident, "_dispatch", dispatch)
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = tmp_path / "s"
    listening.bind(str(path))
    resident = server.Resident(str(tmp_path), 60, listening, path)
    threading.Thread(target=resident._warm, daemon=True).start()
    assert importing.wait(10)
    ours, theirs = socket.socketpair()
    handler = threading.Thread(target=resident._handle, args=(theirs,), daemon=True)
    ours.sendall(protocol.dumps({"op": "status", "build": protocol.build_id(), "home": str(tmp_path),
                                 "settings": {}, "names": []}))
    handler.start()
    handler.join(0.5)
    assert handler.is_alive() and dispatched == [], "the request ran while the warm-up was importing"
    release.set()
    handler.join(10)
    assert dispatched == ["status"]
    assert protocol.loads(ours.makefile("rb").readline())["type"] == "rows"
    ours.close()
    listening.close()


@pytest.mark.slow
def test_a_search_and_a_status_sent_the_moment_it_listens_are_answered(home):
    """Repeated: a fresh resident process, a search and a status sent as soon as its socket exists (while
    its warm-up thread imports); both answered, nothing failed in its log."""
    import threading

    from c1.daemon import protocol

    stop(home.env)
    settings = settings_of(home.env)
    real = protocol.real_home(Path(home.env["C1_HOME"]))
    path = socket_path(home.env)
    for attempt in range(3):
        log = home.root / f"race{attempt}.log"
        with open(log, "w") as err:
            proc = subprocess.Popen([sys.executable, "-m", "c1.daemon", "--home", real, "--idle", "60"],
                                    env={**home.env, **ON}, stderr=err)
        deadline = time.monotonic() + 60
        while not path.exists():
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.002)
        last: dict = {}

        def ask(request: dict, key: str) -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(path))
                s.sendall(protocol.dumps({**request, "build": protocol.build_id(), "home": real}))
                for line in s.makefile("rb"):
                    last[key] = protocol.loads(line)

        threads = [threading.Thread(target=ask, args=(r, k)) for k, r in (
            ("search", {"op": "search", "settings": protocol.settings_to_json(settings), "query": QUESTIONS[0]}),
            ("status", {"op": "status", "settings": protocol.settings_to_json(settings), "names": ["default"]}))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        stop(home.env)
        proc.wait(30)
        assert last["search"]["type"] == "result" and last["search"]["result"]["documents"], last
        assert last["status"]["type"] == "rows" and "error" not in last["status"]["rows"][0], last
        assert "failed" not in log.read_text(), log.read_text()


# --- the first search after a start (issue #23) --------------------------------------------------


def log_of(env: dict) -> Path:
    from c1.daemon import protocol

    return protocol.paths(protocol.real_home(Path(env["C1_HOME"])))[2]


def wait_logged(env: dict, text: str, pid: int, timeout: float = 180) -> None:
    """Until the resident process ``pid`` wrote a line holding ``text`` in its log."""
    deadline = time.monotonic() + timeout
    while not any(f"[{pid}]: " in line and text in line for line in log_of(env).read_text().splitlines()):
        assert time.monotonic() < deadline, log_of(env).read_text()[-3000:]
        time.sleep(0.1)


@pytest.mark.slow
def test_index_leaves_the_resident_process_started_and_warm(new_c1_env):
    """`c1 index` starts the home's resident process as it begins and, once it has committed, has it open the
    collection and run a first search: the next `c1 search` is answered by it, as in-process."""
    env = new_c1_env("warm-by-index")
    env.corpus = env.root / "corpus"
    env.corpus.mkdir()
    write_jsonl(env.corpus / "paragraphs.jsonl", hotpot_paragraphs(_shared(), 3))
    try:
        assert c1(env, "index", env.corpus, "--quiet").rc == 0
        reply = ping(env.env)
        assert reply is not None, "the index left no resident process"
        assert reply["served"] == 0, "its warm-up is not a request of the user's"
        wait_logged(env.env, "a first search of 'default'", reply["pid"])
        first = same_search(env, QUESTIONS[0], "--json", "-k", "3")
        assert first["documents"] and ping(env.env)["pid"] == reply["pid"]
        assert "failed" not in log_of(env.env).read_text()
    finally:
        stop(env.env)


@pytest.mark.slow
def test_a_fresh_resident_process_searches_the_snapshot_its_predecessor_wrote_without_chroma(new_c1_env):
    """`c1 index` writes the collection's vector snapshot (c1/store/flat.py); a resident process started for
    the home answers from it with Chroma never loaded, and prints what an in-process search reading Chroma
    prints."""
    from c1.store import flat

    env = new_c1_env("snapshot")
    env.corpus = env.root / "corpus"
    env.corpus.mkdir()
    write_jsonl(env.corpus / "paragraphs.jsonl", hotpot_paragraphs(_shared(), 3))
    settings = settings_of(env.env)
    try:
        assert c1(env, "index", env.corpus, "--quiet").rc == 0
        assert flat.fresh(settings)
        stop(env.env)
        first = answered(env, "search", QUESTIONS[0], "--json", "-k", "3").json()
        pid = ping(env.env)["pid"]
        assert "chromadb" not in Path(f"/proc/{pid}/maps").read_text(), "the fresh process loaded Chroma"
        assert b"OPENBLAS_NUM_THREADS=1\0" in Path(f"/proc/{pid}/environ").read_bytes()  # c1.one_blas_thread
        flat.snapshot_path(settings).unlink()
        here = c1(env, "search", QUESTIONS[0], "--json", "-k", "3", daemon=False).json()  # reads Chroma
        assert [d["id"] for d in first["documents"]] == [d["id"] for d in here["documents"]]
        assert first["documents"]
        stop(env.env)  # a resident process that found no snapshot writes it once it has answered
        answered(env, "search", QUESTIONS[1], "--json", "-k", "3")
        wait_logged(env.env, "wrote the vector snapshot of 'default'", ping(env.env)["pid"])
        assert flat.fresh(settings)
    finally:
        stop(env.env)


@pytest.mark.slow
def test_index_without_the_daemon_starts_nothing(new_c1_env):
    env = new_c1_env("cold-index")
    env.corpus = env.root / "corpus"
    env.corpus.mkdir()
    write_jsonl(env.corpus / "paragraphs.jsonl", hotpot_paragraphs(_shared(), 1))
    assert env.run("index", env.corpus, "--quiet").rc == 0  # C1_DAEMON=0, as the tests run
    assert c1(env, "index", env.corpus, "--quiet", extra={"C1_POLICY": "llm", "C1_BASE_URLS": "http://127.0.0.1:9"}).rc == 0
    assert not socket_path(env.env).exists() and ping(env.env) is None  # a model's searches do not use it


def _wait_for_log(env: dict, *fragments: str, timeout: float = 120) -> str:
    """The resident process's log once a line holds one of ``fragments``."""
    from c1.daemon import protocol

    log = protocol.paths(protocol.real_home(Path(env["C1_HOME"])))[2]
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        if any(f in text for f in fragments):
            return text
        assert time.monotonic() < deadline, f"none of {fragments} in the log within {timeout:g} s:\n{text}"
        time.sleep(0.05)


def _outlive_an_idle_daemon(control, idle: float) -> None:
    """Start a resident process of another home that nobody asks anything, and return once it has idled
    out: a clock that is the daemon's own idle timer on this machine, not a sleep beside it. With ``idle``
    longer than a watched process's idle time plus its one-second check, a watched process that was not
    kept warm is gone by then."""
    home = Path(control.env["C1_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "c1.daemon", "--home", str(home), "--idle", str(idle)],
                            env=control.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert "serving" in proc.stderr.readline()  # its idle time counts from here
        assert proc.wait(timeout=120) == 0
        assert "exiting: idle" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow  # a watch, its resident process and a control one: c1 processes, about 10 s
def test_a_watch_keeps_it_from_idling_out(new_c1_env):
    env = indexed_hotpot(new_c1_env, "watch-warm", records=1)
    proc = subprocess.Popen(c1_argv("index", env.corpus, "--watch", "--quiet"), env={**env.env, **ON, "C1_DAEMON_IDLE": "2"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while (reply := ping(env.env)) is None:
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() is not None else ""
            time.sleep(0.1)
        # its own work done (the first search of the collection): from here on only the
        # watch's requests keep it, and without them it would idle out within its idle time and a check
        _wait_for_log(env.env, "a first search of", "request failed", "warm-up failed")
        _outlive_an_idle_daemon(new_c1_env("idle-control"), idle=4)  # twice the watched one's idle time
        assert alive(reply["pid"]) and ping(env.env)["pid"] == reply["pid"], "it idled out while the collection was watched"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
        wait_gone(reply["pid"], timeout=60)  # not kept once the watch stopped
    finally:
        if proc.poll() is None:
            proc.kill()
        stop(env.env)


def test_loading_the_models_ahead_imports_nothing(tmp_path):
    """The models load in a thread beside the one importing chromadb: that is safe only if loading them
    imports no module (two threads importing numpy at once can fail)."""
    code = (
        "import importlib, json, sys\n"
        "from pathlib import Path\n"
        "from c1.service.models import LOAD_IMPORTS, load_models\n"
        "for name in LOAD_IMPORTS: importlib.import_module(name)\n"
        "from c1.config import Settings\n"
        "from c1.store.embedders import make_embedder\n"
        "embedder = make_embedder()\n"
        "before = set(sys.modules)\n"
        "problems = load_models(Settings(home=Path(sys.argv[1])), embedder)\n"
        "print(json.dumps({'new': sorted(set(sys.modules) - before), 'problems': problems}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"new": [], "problems": []}
