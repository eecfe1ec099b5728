import json
from pathlib import Path

import numpy as np
import pytest

from engram.embed.builtin import load_builtin

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.json"


@pytest.fixture(scope="session")
def builtin():
    """One built-in embedder for the whole folder: it is thread-safe and loading costs ~0.3 s."""
    return load_builtin()


@pytest.fixture(scope="session")
def reference():
    doc = json.loads(FIXTURE.read_text("utf-8"))
    doc["matrix"] = np.array(doc["vectors"], dtype=np.float32)
    return doc
