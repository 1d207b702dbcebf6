#!/usr/bin/env python3
"""Generate the shell completions and the man page from the c1 command tree (c1/manual/).

    python scripts/gen_docs.py              # rewrite completions/ and man/c1.1 in the repository
    python scripts/gen_docs.py --out DIR    # write them under DIR instead
    python scripts/gen_docs.py --check      # exit 1 and list the files that are out of date

The generator lives in the package, so that an installed c1 prints the same scripts
(``c1 completions bash|zsh|fish``). It reads the command tree of the app it is handed: here
``c1.cli.app``, which this script joins to it (the generator does not import the CLI).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from c1.cli import app  # noqa: E402
from c1.manual.generate import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(app))
