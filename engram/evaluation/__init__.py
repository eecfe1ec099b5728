"""Retrieval-quality evaluation: labelled queries run through the real search paths (`engram eval`).

`labels` loads a query set and its corpora, `metrics` scores rankings, `systems` runs each ranking system
against a space, `runner` ties them together and `report` prints the tables (docs/benchmarks.md).
"""
