"""engram: memory search for AI agents on the AT Protocol."""

__version__ = "0.1.0"
