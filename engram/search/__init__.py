"""Per-space vector search over FAISS, derived from the store."""
