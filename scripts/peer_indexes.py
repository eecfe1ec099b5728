"""The vector indexes scripts/bench_peers.py compares engram with: each builder takes the stored unit
vectors (float32, fp16-rounded) and returns `search(query) -> row positions`, best first. M=32,
construction breadth 80 and search breadth 128 wherever the library exposes them."""

from __future__ import annotations

import tempfile

import faiss
import numpy as np

from engram.search.index import IndexTuning, SpaceIndex
from engram.search.rows import IndexRows

K = 10
M = 32
EF_CONSTRUCTION = 80
EF_SEARCH = 128


def engram_index(vectors: np.ndarray, exact_max: int):
    n = len(vectors)
    rows = IndexRows(
        np.arange(n, dtype=np.int64),
        vectors.astype(np.float16),
        ["did:web:x"] * n,
        np.zeros(n, np.int64),
        [()] * n,
    )
    index = SpaceIndex.build(rows, vectors.shape[1], 1, IndexTuning(exact_max=exact_max))
    return lambda q: index.search(q, K, None, float("inf")).row_ids


def faiss_hnsw(vectors: np.ndarray):
    index = faiss.IndexHNSWFlat(vectors.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    index.add(vectors)
    index.hnsw.efSearch = EF_SEARCH
    return lambda q: index.search(q[None, :], K)[1][0]


def hnswlib_index(vectors: np.ndarray):
    import hnswlib

    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(max_elements=len(vectors), M=M, ef_construction=EF_CONSTRUCTION)
    index.set_num_threads(1)
    index.add_items(vectors, np.arange(len(vectors)))
    index.set_ef(EF_SEARCH)
    return lambda q: index.knn_query(q, k=K)[0][0]


def usearch_index(vectors: np.ndarray):
    from usearch.index import Index

    index = Index(ndim=vectors.shape[1], metric="ip", dtype="f32", connectivity=M, expansion_search=EF_SEARCH)
    index.add(np.arange(len(vectors)), vectors, threads=1)
    return lambda q: index.search(q, K, threads=1).keys


def chromadb_index(vectors: np.ndarray):
    """Chroma embedded (an in-process client over a temporary directory), its HNSW with our parameters."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=tempfile.mkdtemp(prefix="bench-chroma-"), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection(
        "bench",
        configuration={
            "hnsw": {
                "space": "ip",
                "max_neighbors": M,
                "ef_construction": EF_CONSTRUCTION,
                "ef_search": EF_SEARCH,
            }
        },
    )
    batch = client.get_max_batch_size()
    for start in range(0, len(vectors), batch):
        part = vectors[start : start + batch]
        collection.add(ids=[str(i) for i in range(start, start + len(part))], embeddings=part)
    return lambda q: [
        int(i) for i in collection.query(query_embeddings=q[None, :], n_results=K, include=[])["ids"][0]
    ]


def lancedb_index(vectors: np.ndarray):
    """LanceDB embedded over a temporary directory, with its IVF + HNSW (SQ) index."""
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(tempfile.mkdtemp(prefix="bench-lance-"))
    dims = vectors.shape[1]
    data = pa.table({
        "id": pa.array(np.arange(len(vectors), dtype=np.int64)),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dims),
    })  # fmt: skip
    table = db.create_table("bench", data)
    partitions = max(1, len(vectors) // 20_000)
    table.create_index(
        metric="dot",
        index_type="IVF_HNSW_SQ",
        num_partitions=partitions,
        m=M,
        ef_construction=EF_CONSTRUCTION,
    )

    def search(q: np.ndarray):
        hits = (
            table.search(q)
            .distance_type("dot")
            .limit(K)
            .nprobes(partitions)
            .ef(EF_SEARCH)
            .select(["id", "_distance"])
        )
        return hits.to_arrow()["id"].to_numpy()

    return search


def qdrant_local(vectors: np.ndarray):
    """qdrant-client's local mode (in-memory, no server): it scans every point exactly, in numpy."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(":memory:")
    client.create_collection(
        "bench", vectors_config=models.VectorParams(size=vectors.shape[1], distance=models.Distance.DOT)
    )
    client.upload_collection("bench", vectors=vectors, ids=list(range(len(vectors))))

    def search(q: np.ndarray):
        return [p.id for p in client.query_points("bench", query=q.tolist(), limit=K).points]

    return search


PEERS = {
    "engram exact": lambda v: engram_index(v, len(v) + 1),
    "engram HNSW + re-rank": lambda v: engram_index(v, 0),
    "faiss HNSWFlat": faiss_hnsw,
    "hnswlib": hnswlib_index,
    "usearch": usearch_index,
    "chromadb (embedded)": chromadb_index,
    "lancedb (IVF_HNSW_SQ)": lancedb_index,
    "qdrant-client (local)": qdrant_local,
}
