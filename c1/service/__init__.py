"""The search service and its HTTP transport: what a search or a status is for the long-lived front ends.

- :mod:`.search_service`: the service itself (open collections, one search as ``c1 search`` runs it, status
  rows, requests with slots and deadlines) shared by the resident process (c1/daemon), the search API and
  MCP (c1/commands/mcp.py). It imports no command.
- :mod:`.http_api`: the search API over HTTP (``c1 serve``), a thin transport over it.
"""
