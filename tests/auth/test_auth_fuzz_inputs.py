"""Arbitrary header text never crashes the verifiers: it is accepted or refused with a 401 name."""

import asyncio
import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict
from support.fakes.static_resolver import StaticResolver
from support.reader_cases import ReaderWorld

from engram.auth.jws import JwsError, parse_jws
from engram.auth.reader import ReaderVerifier
from engram.errors import NotAuthenticated

WORLD = ReaderWorld("did:web:engram.example.com")
VALID = dict(WORLD.signed(WORLD.credential()))
NAMES = ("InvalidToken", "BadSpaceSignature", "AuthRequired")
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=200)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parse_jws_only_raises_jws_error(text):
    with contextlib.suppress(JwsError):
        parse_jws(text)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(VALID)), value=header_text)
def test_reader_refuses_any_single_corrupted_header_cleanly(name, value):
    headers = CIMultiDict({**VALID, name: value})
    verifier = ReaderVerifier(WORLD.service_did, StaticResolver(WORLD.documents()), now=lambda: WORLD.now)
    try:
        asyncio.run(verifier.verify(headers, WORLD.space))
    except NotAuthenticated as e:
        assert e.name in NAMES
    else:
        assert value.strip() == VALID[name].strip()
