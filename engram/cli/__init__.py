"""The `engram` console script: thin commands over engram.service."""
