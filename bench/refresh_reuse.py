#!/usr/bin/env python3
"""A keyword commit (c1 index --keywords-only of one new note), then refresh + one hybrid search: reuse vs full."""
import json, os, subprocess, sys, time
from pathlib import Path
root = Path(sys.argv[1]); env = json.load(open(root / "env.json")); os.environ.update(env)
from c1.config import Settings
from c1.retrieval.corpus import Corpus
s = Settings(home=Path(env["C1_HOME"]))
c = Corpus(s)
c.hybrid("Which Canadian rock band released Counterparts", 10)
for old in (root / "corpus").glob("note*.md"):
    old.unlink()  # a note of an earlier run would be unchanged: no commit
rows = {"reuse": [], "full": []}
for i in range(6):
    mode = "reuse" if i % 2 == 0 else "full"
    text = f"# Note {i}\n\nThe boiler number {i} was serviced by the caretaker.\n"
    (root / "corpus" / f"note{i}.md").write_text(text)
    subprocess.run([sys.executable, "-m", "c1", "index", str(root / "corpus"), "--quiet", "--keywords-only"],
                   env=os.environ, check=True)
    if mode == "full":
        c._vectors_mark = None
    t, w = time.process_time(), time.perf_counter()
    before = c.store.vectors
    assert c.refresh()
    kept = c.store.vectors is before
    hits = c.hybrid(f"boiler number {i} serviced caretaker", 5)
    rows[mode].append((time.process_time() - t, time.perf_counter() - w, kept))
    top = c.bm25(f"boiler number {i} serviced caretaker", 1)
    assert f"number {i}" in c.chunks([top[0][0]])[0].text, "the new note found"
for m, r in rows.items():
    print(m, "cpu s", [round(a, 3) for a, _, _ in r], "wall s", [round(b, 3) for _, b, _ in r],
          "client kept", [k for _, _, k in r])
