"""Token counting for budgets and chunk sizes.

The agent's budget is in *model* tokens. Without the model's tokenizer at hand (the built-in
policy has no model; gpt-oss's o200k vocabulary is not shipped offline), we estimate: English
prose averages about four characters per o200k token. Policies that talk to a real model replace
the estimate with the server's reported prompt token count.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def chars_for_tokens(tokens: int) -> int:
    return tokens * CHARS_PER_TOKEN
