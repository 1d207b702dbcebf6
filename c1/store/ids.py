"""Short, stable document ids: 8 lowercase base32 characters derived from the document key.

The model quotes them in every tool call, so they must be short; they are derived from the key
(path, or path#id) so that re-indexing from scratch gives the same ids. On a collision with a
different key the hash is salted until it is unique.
"""

from __future__ import annotations

import base64
import hashlib

LENGTH = 8


def doc_id_for(key: str, taken: dict[str, str]) -> str:
    """``taken`` maps doc_id → key for ids already in use (in the manifest or this run)."""
    salt = 0
    while True:
        digest = hashlib.blake2b(f"{key}\0{salt}".encode() if salt else key.encode(), digest_size=10).digest()
        doc_id = base64.b32encode(digest).decode().lower()[:LENGTH]
        if taken.get(doc_id, key) == key:
            return doc_id
        salt += 1


def chunk_id(doc_id: str, n: int) -> str:
    return f"{doc_id}_{n}"


def doc_of(chunk_id: str) -> str:
    return chunk_id.rsplit("_", 1)[0]
