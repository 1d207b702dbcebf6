"""``c1 mcp``: the agent as a Model Context Protocol server over stdio.

Built on the official ``mcp`` Python SDK (2.x, ``MCPServer``; installed with the ``mcp`` extra).
Two tools:

- ``search(query, collection?, max_docs?, parallel?)``: the whole multi-turn loop; returns the
  ``c1 search --json`` document (ranked supporting documents with their chunks, policy, stats).
- ``status()``: the collections of the index home, with document and chunk counts.

The SDK diverts file descriptor 1 to stderr while it serves, so nothing but protocol messages
reaches stdout (stray prints and library logs go to stderr). Searches run in worker threads
through the same :class:`~c1.service.search_service.SearchService` as the HTTP API: each collection's corpus
is opened once, policies are chosen the same way, and a slot limit bounds concurrent searches.
"""

from __future__ import annotations

import logging
from typing import Any

from c1.config import Settings
from c1.errors import C1Error

INSTRUCTIONS = (
    "c1 is a retrieval subagent over a local document index. Call `search` with a question: it runs a "
    "multi-turn search (hybrid BM25 + dense retrieval, self-pruning context) and returns the ranked "
    "supporting documents with their relevant chunks - evidence, never an answer. Call `status` to list "
    "the indexed collections."
)


def build_server(settings: Settings, max_concurrency: int = 2, timeout_s: float = 600.0):
    """(the :class:`mcp.server.mcpserver.MCPServer` with the ``search`` and ``status`` tools, its
    :class:`~c1.service.search_service.SearchService`: close it when done)."""
    try:
        import anyio
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise C1Error("`c1 mcp` needs the MCP SDK: pip install 'c1[mcp]' (mcp>=2.3)") from None
    from c1 import __version__
    from c1.service.search_service import ApiError, SearchService, validate_request

    service = SearchService(settings, max_concurrency=max_concurrency, timeout_s=timeout_s)
    server = MCPServer("c1", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    def run_search(fields: dict) -> dict:
        job = service.start(fields)
        if not job.wait(timeout_s):
            raise ToolError(f"the search took longer than {timeout_s:g} s and was cancelled")
        if job.result is None:
            raise ToolError(job.error or "search failed")
        return job.result

    @server.tool(description=(
        "Search the indexed documents for the evidence needed to answer `query`. Runs several turns of "
        "searching and pruning; returns the ranked supporting documents (id, title, path, score, "
        "justification, chunks) plus the policy used and run statistics. It does not answer the question."))
    async def search(query: str, collection: str | None = None, max_docs: int | None = None,
                     parallel: int | None = None) -> dict[str, Any]:
        body = {"query": query, "collection": collection, "max_docs": max_docs, "parallel": parallel}
        try:
            fields = validate_request({k: v for k, v in body.items() if v is not None})
            return await anyio.to_thread.run_sync(run_search, fields)
        except ApiError as exc:  # bad arguments, unknown collection, busy, model server unusable
            raise ToolError(exc.message) from None

    @server.tool(description="The collections of this c1 index: documents, chunks, embedder, consistency.")
    async def status() -> dict[str, Any]:
        return await anyio.to_thread.run_sync(service.status)

    return server, service


def run_mcp(settings: Settings, *, max_concurrency: int = 2, timeout_s: float = 600.0) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin (``c1 mcp``)."""
    server, service = build_server(settings, max_concurrency, timeout_s)
    logging.getLogger("chromadb").setLevel(logging.ERROR)
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
    return 0


if __name__ == "__main__":  # python -m c1.commands.mcp [--home DIR] [--collection NAME]: before the CLI has it
    import argparse
    import sys

    from c1.config import load_settings

    parser = argparse.ArgumentParser(prog="python -m c1.commands.mcp")
    parser.add_argument("--home")
    parser.add_argument("--collection")
    parser.add_argument("--policy")
    parser.add_argument("--base-url", action="append")
    ns = parser.parse_args()
    try:
        sys.exit(run_mcp(load_settings().with_flags(home=ns.home, collection=ns.collection, policy=ns.policy,
                                                    base_urls=tuple(ns.base_url or ()))))
    except C1Error as exc:
        sys.stderr.write(f"c1: error: {exc}\n")
        sys.exit(exc.code)
