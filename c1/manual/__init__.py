"""The generated files: the shell completions and the man page, made from the c1 command tree.

- :mod:`.tree`: the command tree read from the Typer app it is handed (never the CLI itself).
- :mod:`.man_page`: ``man/c1.1``, one builder per section.
- :mod:`.generate`: the bash, zsh and fish completions, and the driver that writes or checks every file
  (``scripts/gen_docs.py``, ``c1 completions``).
"""
