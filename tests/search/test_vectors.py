import contextlib
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import InvalidInput
from engram.search.vectors import (
    array_to_f16_bytes,
    decode_query_vector,
    encode_base64url,
    encode_query_vector,
    f16_bytes_to_array,
    similarity_permille,
)
from engram.xrpc.errors import http_status


def test_round_trip_gives_unit_vector_of_the_f16_values():
    v = np.random.default_rng(1).standard_normal(384).astype(np.float32)
    text = encode_query_vector(v)
    assert len(text) == math.ceil(384 * 2 * 4 / 3) and "=" not in text
    got = decode_query_vector(text)
    want = v.astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(got, want / np.linalg.norm(want), rtol=1e-6)
    assert got.dtype == np.float32 and abs(np.linalg.norm(got) - 1) < 1e-6


def test_little_endian_is_explicit():
    assert decode_query_vector(encode_base64url(bytes([0x00, 0x3C])))[0] == 1.0  # 1.0 in f16 LE
    assert f16_bytes_to_array(array_to_f16_bytes(np.array([1.5, -2]))).tolist() == [1.5, -2.0]


def _bad(text: str, fragment: str):
    with pytest.raises(InvalidInput) as info:
        decode_query_vector(text)
    assert http_status(info.value) == 400 and fragment in info.value.message, info.value.message


GOOD = encode_query_vector(np.arange(1, 9, dtype=np.float32))  # 8 values, 16 bytes, 22 chars


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty"),
        (GOOD[:17] + "+" + GOOD[18:], "invalid base64url character at position 17"),
        (GOOD[:3] + "/" + GOOD[4:], "invalid base64url character at position 3"),
        (GOOD + " ", "invalid base64url character at position 22"),
        (GOOD[:5] + "é" + GOOD[6:], "invalid base64url character at position 5"),
        (GOOD + "==", "padding '=' at position 22"),
        ("A", "not a valid base64url length"),
        (GOOD + "AAA", "not a valid base64url length"),
        (encode_base64url(b"\x00\x3c\x00"), "3 bytes is not a whole number of float16 values"),
        (encode_base64url(b"\x00" * 767), "767 bytes is not a whole number of float16 values"),
        (encode_base64url(array_to_f16_bytes(np.array([1.0, np.nan]))), "NaN or infinity"),
        (encode_base64url(array_to_f16_bytes(np.array([np.inf, 1.0]))), "NaN or infinity"),
        (encode_base64url(array_to_f16_bytes(np.array([-np.inf]))), "NaN or infinity"),
        (encode_base64url(b"\x00" * 16), "zero norm"),
        (encode_base64url(array_to_f16_bytes(np.array([0.0, -0.0]))), "zero norm"),
        ("AD3", "non-canonical"),  # last char carries non-zero unused bits
        ("A" * 44_000, "more than 16000 dimensions"),
    ],
)
def test_rejections_name_the_problem(text, fragment):
    _bad(text, fragment)


def test_dimension_cap_is_configurable():
    with pytest.raises(InvalidInput, match="more than 4 dimensions"):
        decode_query_vector(encode_query_vector(np.ones(5)), max_dims=4)
    assert decode_query_vector(encode_query_vector(np.ones(4)), max_dims=4).shape == (4,)


@given(st.text(max_size=200))
def test_arbitrary_text_is_either_a_unit_vector_or_a_400(text):
    try:
        v = decode_query_vector(text)
    except InvalidInput as exc:
        assert http_status(exc) == 400
    else:
        assert np.isfinite(v).all() and abs(float(np.linalg.norm(v)) - 1) < 1e-5


@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_fail_cleanly(raw):
    with contextlib.suppress(InvalidInput):
        decode_query_vector(encode_base64url(raw))


def test_similarity_is_truncated_and_clamped():
    assert similarity_permille(0.9999) == 999
    assert similarity_permille(1.2) == 1000
    assert similarity_permille(-0.3) == 0
    assert similarity_permille(0.5) == 500


def test_similarities_permille_matches_the_scalar_rule():
    from engram.search.vectors import similarities_permille, similarity_permille

    rng = np.random.default_rng(3)
    cosines = np.concatenate(
        [
            rng.uniform(-1.5, 1.5, 2000).astype(np.float32),
            np.array([0.0, 1.0, -0.0, 0.9995, 0.001, 0.0009999, 1.0000001, -1e-9], dtype=np.float32),
            np.nextafter(np.float32(0.5), np.float32(1), dtype=np.float32)[None],
        ]
    )
    assert similarities_permille(cosines) == [similarity_permille(c) for c in cosines]
