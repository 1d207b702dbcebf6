"""Settings: defaults < TOML config file < C1_* environment < flags; errors are one line, exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from c1.config import Settings, config_path, load_settings
from c1.errors import C1Error


def write_config(c1_home: Path, text: str) -> Path:
    """The default config file location: $XDG_CONFIG_HOME/c1/config.toml (isolated by c1_home)."""
    path = config_path()
    assert path.is_relative_to(c1_home.parent), "config path must be isolated"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- unit: c1.config ------------------------------------------------------------------------


def test_defaults(c1_home, monkeypatch):
    monkeypatch.delenv("C1_HOME")
    monkeypatch.delenv("C1_DAEMON")  # the tests' environment turns the resident process off
    s = load_settings()
    assert s == Settings()
    assert s.collection == "default"
    assert s.home == Path(os.environ["XDG_DATA_HOME"]) / "c1"
    assert s.chroma_url is None and s.embed_url is None
    assert (s.chunk_tokens, s.chunk_overlap, s.budget, s.max_file_mb) == (512, 48, 32768, 50.0)
    assert s.collection_dir == s.home / "collections" / "default"


def test_xdg_fallbacks_without_variables(c1_home, monkeypatch, tmp_path):
    for var in ("C1_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert load_settings().home == tmp_path / "user" / ".local" / "share" / "c1"
    assert config_path() == tmp_path / "user" / ".config" / "c1" / "config.toml"


def test_c1_home_is_the_index_home(c1_home):
    assert load_settings().home == c1_home


def test_file_overrides_defaults(c1_home, monkeypatch):
    monkeypatch.delenv("C1_HOME")
    write_config(c1_home, 'collection = "from-file"\nbudget = 4096\nsoft_threshold = 0.25\n'
                          'home = "~/c1-data"\nbase_urls = ["http://a:1", "http://b:2"]\n')
    s = load_settings()
    assert s.collection == "from-file"
    assert s.budget == 4096 and isinstance(s.budget, int)
    assert s.soft_threshold == 0.25
    assert s.home == Path("~/c1-data").expanduser()
    assert s.base_urls == ("http://a:1", "http://b:2")
    assert s.chunk_tokens == 512  # untouched keys keep their defaults


def test_env_overrides_file(c1_home, monkeypatch):
    write_config(c1_home, 'collection = "from-file"\nbudget = 4096\nmax_turns = 7\n')
    monkeypatch.setenv("C1_COLLECTION", "from-env")
    monkeypatch.setenv("C1_BUDGET", "2048")
    monkeypatch.setenv("C1_BASE_URLS", "http://a:1, http://b:2,")
    monkeypatch.setenv("C1_MAX_TURNS", "")  # empty means unset
    s = load_settings()
    assert (s.collection, s.budget, s.max_turns) == ("from-env", 2048, 7)
    assert s.base_urls == ("http://a:1", "http://b:2")
    assert s.home == c1_home  # C1_HOME beats the default


def test_flags_override_env(c1_home, monkeypatch):
    write_config(c1_home, 'collection = "from-file"\n')
    monkeypatch.setenv("C1_COLLECTION", "from-env")
    monkeypatch.setenv("C1_CHROMA_URL", "http://env:8000")
    s = load_settings().with_flags(collection="from-flag", home=Path("/tmp/flag-home"), chroma_url=None, base_urls=())
    assert s.collection == "from-flag"
    assert s.home == Path("/tmp/flag-home")
    assert s.chroma_url == "http://env:8000"  # a flag not given (None) changes nothing
    assert s.collection_dir == Path("/tmp/flag-home/collections/from-flag")


def test_c1_config_names_the_file(c1_home, monkeypatch, tmp_path):
    write_config(c1_home, 'collection = "xdg-file"\n')
    explicit = tmp_path / "elsewhere.toml"
    explicit.write_text('collection = "explicit-file"\n')
    monkeypatch.setenv("C1_CONFIG", str(explicit))
    assert load_settings().collection == "explicit-file"


def test_missing_explicit_config_is_an_error(c1_home, monkeypatch, tmp_path):
    monkeypatch.setenv("C1_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(C1Error, match="does not exist"):
        load_settings()


def test_missing_default_config_is_fine(c1_home):
    assert not config_path().exists()
    assert load_settings().collection == "default"


@pytest.mark.parametrize("text,fragment", [
    ("collection = \n", "cannot read config file"),
    ("[unclosed\n", "cannot read config file"),
    ('collection = "a"\ncollection = "b"\n', "cannot read config file"),
    ('colection = "typo"\n', "unknown key(s) colection"),
    ('[index]\ncollection = "x"\n', "unknown key(s) index"),
    ('budget = "lots"\n', "'budget'"),
    ("max_file_mb = [1, 2]\n", "'max_file_mb'"),
    # the same checks as the flags
    ("budget = 10\n", "at least 1024"),
    ("parallel = 1000\n", "at most 32"),
    ("max_docs = -3\n", "at least 1"),
    ('collection = "/tmp/abs"\n', "not a collection name"),
    ("budget = 2048.5\n", "not a valid int"),
    ("chunk_overlap = 400\n", "half of chunk_tokens"),
    ('daemon = "sometimes"\n', "not a valid bool"),
])
def test_bad_config_file_is_one_clear_error(c1_home, text, fragment):
    path = write_config(c1_home, text)
    with pytest.raises(C1Error) as info:
        load_settings()
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert info.value.code == 2
    if "setting" not in message or "(config file" in message:
        assert str(path) in message


@pytest.mark.parametrize("value,expected", [("0", False), ("false", False), ("no", False), ("1", True), ("On", True)])
def test_the_daemon_setting_reads_booleans(c1_home, monkeypatch, value, expected):
    monkeypatch.setenv("C1_DAEMON", value)
    assert load_settings().daemon is expected
    write_config(c1_home, f"daemon = {str(not expected).lower()}\n")
    monkeypatch.delenv("C1_DAEMON")
    assert load_settings().daemon is (not expected)


def test_bad_env_value_is_one_clear_error(c1_home, monkeypatch):
    monkeypatch.setenv("C1_BUDGET", "lots")
    with pytest.raises(C1Error, match=r"setting 'budget': 'lots' is not a valid int"):
        load_settings()


def test_unknown_flag_setting_is_refused():
    with pytest.raises(C1Error, match="unknown setting"):
        Settings().with_flags(no_such_thing=1)


# --- the real CLI ---------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_collection_precedence(c1_home, invoke_c1, tmp_path):
    """--collection beats C1_COLLECTION, which beats the config file."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.txt").write_text("The quarterly gas storage report is due on Friday.\n")
    write_config(c1_home, 'collection = "filecol"\n')

    assert invoke_c1("index", docs, "--json", "--quiet").json()["collection"] == "filecol"
    env = {"C1_COLLECTION": "envcol"}
    assert invoke_c1("index", docs, "--json", "--quiet", env=env).json()["collection"] == "envcol"
    assert invoke_c1("index", docs, "--json", "--quiet", "--collection", "flagcol", env=env).json()["collection"] == "flagcol"
    assert sorted(p.name for p in (c1_home / "collections").iterdir()) == ["envcol", "filecol", "flagcol"]


@pytest.mark.parametrize("text,fragment", [
    ("collection = \n", "cannot read config file"),
    ('colection = "typo"\n', "unknown key(s) colection"),
])
@pytest.mark.parametrize("command", [["status"], ["index", "."]])
def test_cli_bad_config_is_one_line_exit_2(c1_home, invoke_c1, text, fragment, command):
    write_config(c1_home, text)
    invoke_c1(*command).assert_one_line_error(2, fragment)


def test_cli_bad_env_value_is_one_line_exit_2(run_c1):
    """In a real process: the variable is read from the environment the process starts with."""
    run_c1("status", env={"C1_MAX_FILE_MB": "big"}).assert_one_line_error(2, "max_file_mb")


def test_cli_missing_c1_config_is_one_line_exit_2(invoke_c1, tmp_path):
    invoke_c1("status", env={"C1_CONFIG": str(tmp_path / "nope.toml")}).assert_one_line_error(2, "does not exist")


# --- every layer passes the same checks ------------------------------------------------------


@pytest.mark.parametrize("var,value,fragment", [
    ("C1_BUDGET", "10", "at least 1024"),
    ("C1_MAX_DOCS", "-3", "at least 1"),
    ("C1_PARALLEL", "1000", "at most 32"),
    ("C1_MAX_FILE_MB", "-5", "greater than 0"),
    ("C1_SOFT_THRESHOLD", "7", "at most 1"),
    ("C1_HARD_CUTOFF", "nan", "not a number"),
    ("C1_MAX_TURNS", "0", "at least 1"),
    ("C1_POLICY", "clever", "auto, llm, builtin"),
    ("C1_REASONING_EFFORT", "max", "low, medium, high"),
    ("C1_COLLECTION", "../escape", "not a collection name"),
    ("C1_COLLECTION", "a b", "not a collection name"),
    ("C1_DAEMON", "maybe", "not a valid bool"),
    ("C1_DAEMON_IDLE", "0", "greater than 0"),
])
def test_env_values_pass_the_flag_checks(c1_home, monkeypatch, var, value, fragment):
    monkeypatch.setenv(var, value)
    with pytest.raises(C1Error) as info:
        load_settings()
    assert fragment in str(info.value) and f"${var}" in str(info.value)


@pytest.mark.parametrize("flags,fragment", [
    ({"max_file_mb": -5}, "--max-file-mb"),
    ({"collection": "no[/]such"}, "--collection"),
    ({"parallel": 0}, "--parallel"),
])
def test_flag_values_are_checked(flags, fragment):
    with pytest.raises(C1Error, match=fragment):
        Settings().with_flags(**flags)


@pytest.mark.parametrize("name", ["default", "work", "eval-hotpotqa-q0123abcd", "a", "v1.2_x-y", "9"])
def test_good_collection_names(name):
    assert Settings().with_flags(collection=name).collection == name


@pytest.mark.parametrize("name", ["a b", "../escape", "/tmp/abs", ".", "..", "a..b", "x/", "-x", "x-", "é", "a" * 64, ""])
def test_bad_collection_names(name):
    from c1.config import collection_name_problem

    assert collection_name_problem(name)


@pytest.mark.parametrize("name", ["a b", "../escape", "ABSOLUTE"])
def test_cli_bad_collection_name_leaves_nothing_behind(c1_home, invoke_c1, tmp_path, name):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.txt").write_text("The quarterly gas storage report is due on Friday.\n")
    absolute = tmp_path / "abs"
    invoke_c1("index", docs, "-c", str(absolute) if name == "ABSOLUTE" else name).assert_one_line_error(
        2, "not a collection name")
    assert not c1_home.exists() or list(c1_home.rglob("*")) == []
    assert not absolute.exists() and not (c1_home / "escape").exists()


def test_cli_max_file_mb_must_be_positive(invoke_c1, tmp_path):
    invoke_c1("index", tmp_path, "--max-file-mb", "-5").assert_one_line_error(2, "--max-file-mb")


# --- settings checked together, one set of limits -----------------------------------------------


@pytest.mark.parametrize("flags,fragment", [
    (["--soft-threshold", "0.9", "--hard-cutoff", "0.2"], "soft threshold 0.9 is above hard cutoff 0.2"),
    (["--budget", "1024", "--hard-cutoff", "0.1"], "budget 1024 × hard cutoff 0.1 leaves 102 tokens"),
    (["--parallel", "33"], "'parallel': 33 must be at most 32 (--parallel)"),
    (["--max-docs", "101"], "'max_docs': 101 must be at most 100 (-k/--max-docs)"),
])
def test_settings_that_do_not_go_together_are_one_line(c1_home, invoke_c1, flags, fragment):
    """Accepted before, each: the first ran, the second ended in "nothing found" with errors: 1."""
    rc, out, err = invoke_c1("search", "gate code", *flags)
    assert rc == 2 and out == "" and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], err


def test_a_flag_mends_what_the_config_file_set(c1_home):
    write_config(c1_home, "hard_cutoff = 0.3\n")
    assert load_settings().with_flags(soft_threshold=0.2).soft_threshold == 0.2
    with pytest.raises(C1Error, match="above hard cutoff 0.3"):
        load_settings().with_flags()


def test_the_cli_and_the_api_share_their_limits(c1_home, invoke_c1):
    """`--parallel` went to 32 on the command line and 16 in the API; the API refused questions over 4,000
    characters, the command line searched 4,900."""
    from c1.config import MAX_QUERY_CHARS, bounds
    from c1.service.search_service import ApiError, validate_request

    for name in ("parallel", "max_docs", "budget", "max_turns"):
        low, high = bounds(name)
        validate_request({"query": "q", name: int(high)})
        with pytest.raises(ApiError):
            validate_request({"query": "q", name: int(high) + 1})
        rc, _, err = invoke_c1("search", "q", "--" + name.replace("_", "-"), str(int(high) + 1))
        assert rc == 2 and f"must be at most {high:g}" in err, err
    long = "word " * (MAX_QUERY_CHARS // 5 + 20)
    with pytest.raises(ApiError, match="longer than"):
        validate_request({"query": long})
    rc, _, err = invoke_c1("search", long)
    assert rc == 2 and "at most 4,000" in err


@pytest.mark.parametrize("url,fragment", [
    ("notaurl", "give the scheme, or host:port"),
    ("ftp://host:21", "scheme 'ftp'"),
    ("http://host:99999", "bad port"),
    ("http://a b:8000", "holds a space"),
])
def test_a_base_url_that_is_not_a_url_is_refused(c1_home, invoke_c1, monkeypatch, url, fragment):
    """`--base-url notaurl` was taken for http://notaurl/v1 and failed later, as a server that is down."""
    rc, out, err = invoke_c1("search", "q", "--base-url", url)
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and f"--base-url {url!r} is not a URL" in lines[0] and fragment in lines[0], err
    monkeypatch.setenv("C1_BASE_URLS", url)
    with pytest.raises(C1Error, match=r"\(\$C1_BASE_URLS\)"):
        load_settings()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://models.example.org", "localhost:8001", "[::1]:8000"])
def test_a_base_url_as_people_write_it_is_taken(c1_home, url):
    assert Settings().with_flags(base_urls=(url,)).base_urls == (url,)
