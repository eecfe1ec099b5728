"""validate_input and validate_output: encodings, JSON parsing, schemas with refs, unions and bytes."""

import orjson
import pytest

from engram.errors import InvalidInput
from engram.xrpc.errors import http_status
from engram.xrpc.lexicons import LexiconRegistry
from engram.xrpc.validate import ValidationError, decode_bytes, validate_input, validate_output

DOCS = [
    {
        "lexicon": 1,
        "id": "io.example.putThing",
        "defs": {
            "main": {
                "type": "procedure",
                "input": {
                    "encoding": "application/json",
                    "schema": {
                        "type": "object",
                        "required": ["space", "thing"],
                        "properties": {
                            "space": {"type": "string"},
                            "hash": {"type": "bytes", "maxLength": 32},
                            "thing": {
                                "type": "union",
                                "refs": ["io.example.defs#circle", "io.example.defs#square"],
                                "closed": True,
                            },
                        },
                    },
                },
                "output": {"encoding": "application/json", "schema": {"type": "ref", "ref": "#result"}},
            },
            "result": {
                "type": "object",
                "required": ["ids"],
                "properties": {"ids": {"type": "array", "items": {"type": "string", "format": "tid"}}},
            },
        },
    },
    {
        "lexicon": 1,
        "id": "io.example.defs",
        "defs": {
            "circle": {
                "type": "object",
                "required": ["r"],
                "properties": {"r": {"type": "integer", "minimum": 0}},
            },
            "square": {"type": "object", "required": ["side"], "properties": {"side": {"type": "integer"}}},
        },
    },
    {
        "lexicon": 1,
        "id": "io.example.upload",
        "defs": {
            "main": {
                "type": "procedure",
                "input": {"encoding": "*/*"},
                "output": {"encoding": "application/x-tar"},
            }
        },
    },
    {
        "lexicon": 1,
        "id": "io.example.images",
        "defs": {"main": {"type": "procedure", "input": {"encoding": "image/*"}}},
    },
    {"lexicon": 1, "id": "io.example.ping", "defs": {"main": {"type": "procedure"}}},
    {
        "lexicon": 1,
        "id": "io.example.empty",
        "defs": {
            "main": {
                "type": "procedure",
                "output": {"encoding": "application/json", "schema": {"type": "object", "properties": {}}},
            }
        },
    },
]
REGISTRY = LexiconRegistry.from_docs(DOCS)
PUT = REGISTRY.method("io.example.putThing")
GOOD = {"space": "s", "hash": {"$bytes": "3q2+7w"}, "thing": {"$type": "io.example.defs#circle", "r": 2}}


def put(body, content_type="application/json"):
    return validate_input(
        PUT, content_type, body if isinstance(body, bytes) else orjson.dumps(body), REGISTRY
    )


def test_valid_json_input_is_returned_parsed():
    assert put(GOOD) == GOOD
    assert decode_bytes(put(GOOD)["hash"]) == bytes.fromhex("deadbeef")
    assert put(GOOD, "Application/JSON; charset=utf-8") == GOOD


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (
            GOOD,
            "text/plain",
            "Wrong request encoding (Content-Type): expected application/json, got text/plain",
        ),
        (GOOD, None, "Wrong request encoding (Content-Type): expected application/json, got none"),
        (b"", "application/json", "A request body is expected but none was provided"),
        (b'{"space": ', "application/json", "Request body is not valid JSON"),
        (b'{"space": NaN}', "application/json", "Request body is not valid JSON"),
        (b"\xff\xfe", "application/json", "Request body is not valid JSON"),
        ([1, 2], "application/json", "Invalid input: input: must be an object"),
        ({"space": "s"}, "application/json", "Invalid input: input.thing: is required"),
        ({**GOOD, "space": 5}, "application/json", "Invalid input: input.space: must be a string"),
        (
            {**GOOD, "hash": {"$bytes": "A" * 48}},
            "application/json",
            "Invalid input: input.hash: must be at most 32 bytes",
        ),
        (
            {**GOOD, "hash": "deadbeef"},
            "application/json",
            'Invalid input: input.hash: must be bytes ({"$bytes": base64})',
        ),
        (
            {**GOOD, "thing": {"r": 2}},
            "application/json",
            "Invalid input: input.thing: must be an object with a $type",
        ),
        (
            {**GOOD, "thing": {"$type": "io.example.defs#triangle"}},
            "application/json",
            "Invalid input: input.thing: must be one of io.example.defs#circle, io.example.defs#square",
        ),
        (
            {**GOOD, "thing": {"$type": "io.example.defs#circle", "r": -1}},
            "application/json",
            "Invalid input: input.thing.r: must be at least 0",
        ),
        (
            {**GOOD, "thing": {"$type": "io.example.defs#square", "r": 1}},
            "application/json",
            "Invalid input: input.thing.side: is required",
        ),
    ],
)
def test_bad_input_is_a_400_with_a_clear_message(body, content_type, message):
    with pytest.raises(InvalidInput) as info:
        put(body, content_type)
    assert (http_status(info.value), info.value.name, info.value.message) == (400, "InvalidRequest", message)


def test_non_json_encodings_return_raw_bytes():
    upload = REGISTRY.method("io.example.upload")
    assert validate_input(upload, "application/octet-stream", b"\x00\x01", REGISTRY) == b"\x00\x01"
    assert validate_input(upload, None, b"x", REGISTRY) == b"x"
    images = REGISTRY.method("io.example.images")
    assert validate_input(images, "image/png", b"png", REGISTRY) == b"png"
    with pytest.raises(InvalidInput, match="expected image/\\*, got text/plain"):
        validate_input(images, "text/plain", b"png", REGISTRY)


def test_method_without_input_accepts_only_an_empty_body():
    ping = REGISTRY.method("io.example.ping")
    assert validate_input(ping, None, b"", REGISTRY) is None
    assert validate_input(ping, "application/json", b"", REGISTRY) is None
    with pytest.raises(InvalidInput, match="A request body was provided when none was expected"):
        validate_input(ping, "application/json", b"{}", REGISTRY)


def test_valid_output_passes():
    validate_output(PUT, {"ids": ["3jzfcijpj2z2a"], "extra": 1}, REGISTRY)
    validate_output(REGISTRY.method("io.example.empty"), {}, REGISTRY)
    validate_output(REGISTRY.method("io.example.ping"), None, REGISTRY)
    validate_output(REGISTRY.method("io.example.upload"), b"tar bytes are not checked", REGISTRY)


@pytest.mark.parametrize(
    ("method", "body", "path", "message"),
    [
        (
            "io.example.putThing",
            {"ids": ["3jzfcijpj2z2a", "nope"]},
            "output.ids[1]",
            "must be a TID (13 base32-sortable characters)",
        ),
        ("io.example.putThing", {}, "output.ids", "is required"),
        ("io.example.putThing", None, "output", "must be an object"),
        ("io.example.empty", [], "output", "must be an object"),
        ("io.example.ping", {}, "output", "the method declares no output"),
    ],
)
def test_off_lexicon_output_is_caught(method, body, path, message):
    with pytest.raises(ValidationError) as info:
        validate_output(REGISTRY.method(method), body, REGISTRY)
    assert (info.value.path, info.value.message) == (path, message)
