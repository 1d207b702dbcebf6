"""``c1 completions SHELL``: print the shell completion script made from the command tree (c1/manual/generate.py)."""

from __future__ import annotations

import sys

from c1.errors import C1Error


def run_completions(app, shell: str) -> int:
    """``app``: the whole command tree (the CLI gives back what startup.build_only left out first)."""
    from c1.manual.generate import SHELLS, completion_script

    if shell not in SHELLS:
        raise C1Error(f"no completion for {shell!r}: bash, zsh or fish")
    sys.stdout.write(completion_script(shell, app))
    return 0
