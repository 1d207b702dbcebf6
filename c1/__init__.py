"""c1: a retrieval subagent for the command line."""

__version__ = "0.1.0"
