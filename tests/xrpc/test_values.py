"""validate_value: every lexicon field type, accepted and rejected, with the failing path."""

import pytest

from engram.xrpc.lexicons import LexiconRegistry
from engram.xrpc.validate import ValidationError, decode_bytes, validate_value

CID = "bafyreiclp443lavogvhj3d2ob2cxbfuscni2k5jk7bebjzg7khl3esabwq"
BLOB = {"$type": "blob", "ref": {"$link": CID}, "mimeType": "image/png", "size": 1000}

RECORD = {
    "lexicon": 1,
    "id": "io.example.record",
    "defs": {
        "main": {
            "type": "record",
            "key": "tid",
            "record": {
                "type": "object",
                "required": ["integer"],
                "nullable": ["nullableString"],
                "properties": {
                    "null": {"type": "null"},
                    "boolean": {"type": "boolean"},
                    "constBoolean": {"type": "boolean", "const": True},
                    "integer": {"type": "integer"},
                    "rangeInteger": {"type": "integer", "minimum": 10, "maximum": 20},
                    "enumInteger": {"type": "integer", "enum": [1, 2, 3]},
                    "constInteger": {"type": "integer", "const": 42},
                    "string": {"type": "string"},
                    "nullableString": {"type": "string"},
                    "lenString": {"type": "string", "minLength": 2, "maxLength": 20},
                    "graphemeString": {"type": "string", "minGraphemes": 10, "maxGraphemes": 20},
                    "enumString": {"type": "string", "enum": ["fish", "tree", "rock"]},
                    "knownString": {"type": "string", "knownValues": ["fish", "tree", "rock"]},
                    "constString": {"type": "string", "const": "fish"},
                    "datetime": {"type": "string", "format": "datetime"},
                    "bytes": {"type": "bytes"},
                    "sizeBytes": {"type": "bytes", "minLength": 4, "maxLength": 8},
                    "cidLink": {"type": "cid-link"},
                    "blob": {"type": "blob"},
                    "sizeBlob": {"type": "blob", "maxSize": 20},
                    "acceptBlob": {"type": "blob", "accept": ["image/*", "text/plain"]},
                    "array": {"type": "array", "items": {"type": "integer"}},
                    "lenArray": {
                        "type": "array",
                        "minLength": 2,
                        "maxLength": 4,
                        "items": {"type": "integer"},
                    },
                    "object": {"type": "ref", "ref": "#demoObject"},
                    "token": {"type": "ref", "ref": "#demoToken"},
                    "union": {"type": "union", "refs": ["#demoObject", "io.example.other#thing"]},
                    "closedUnion": {
                        "type": "union",
                        "closed": True,
                        "refs": ["#demoObject", "io.example.other"],
                    },
                    "unknown": {"type": "unknown"},
                    "tree": {"type": "ref", "ref": "#node"},
                },
            },
        },
        "demoToken": {"type": "token"},
        "demoObject": {
            "type": "object",
            "required": ["a"],
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        },
        "node": {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"type": "ref", "ref": "#node"}},
            },
        },
    },
}
OTHER = {
    "lexicon": 1,
    "id": "io.example.other",
    "defs": {
        "main": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        "thing": {"type": "object", "required": ["size"], "properties": {"size": {"type": "integer"}}},
    },
}
REGISTRY = LexiconRegistry.from_docs([RECORD, OTHER])
SCHEMA = {"type": "ref", "ref": "io.example.record"}


def check(**fields):
    validate_value(SCHEMA, {"integer": 1, **fields}, REGISTRY, "io.example.record", "record")


VALID = [
    {},
    {"null": None},
    {"boolean": False, "constBoolean": True},
    {"integer": -7, "rangeInteger": 10, "enumInteger": 3, "constInteger": 42},
    {"string": "", "nullableString": None, "lenString": "ab", "constString": "fish"},
    {"nullableString": "text"},
    {"lenString": "é" * 10},
    {"graphemeString": "👩\u200d👩\u200d👦\u200d👦" * 10},
    {"graphemeString": "🇫🇷" * 10},
    {"enumString": "rock", "knownString": "granite"},
    {"datetime": "2024-05-01T12:00:00.000Z"},
    {"bytes": {"$bytes": "aGVsbG8"}, "sizeBytes": {"$bytes": "aGVsbG8="}},
    {"bytes": {"$bytes": ""}},
    {"cidLink": {"$link": CID}},
    {"blob": BLOB, "sizeBlob": {**BLOB, "size": 20}, "acceptBlob": BLOB},
    {"acceptBlob": {**BLOB, "mimeType": "text/plain"}},
    {"array": [], "lenArray": [1, 2, 3, 4]},
    {"object": {"a": 1, "extra": "allowed"}},
    {"token": "io.example.record#demoToken"},
    {"union": {"$type": "io.example.record#demoObject", "a": 1}},
    {"union": {"$type": "io.example.other#thing", "size": 3}},
    {"union": {"$type": "com.example.unknown", "anything": True}},
    {"closedUnion": {"$type": "io.example.other", "name": "x"}},
    {"closedUnion": {"$type": "io.example.other#main", "name": "x"}},
    {"unknown": {"a": [1, {"b": None}]}},
    {"unknown": {"$type": "io.example.whatever", "x": 1}},
    {"tree": {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}},
    {"undeclared": {"anything": "goes"}},
]


@pytest.mark.parametrize("fields", VALID, ids=[",".join(f) or "minimal" for f in VALID])
def test_valid_values_pass(fields):
    check(**fields)


INVALID = [
    ({"integer": "one"}, "record.integer", "must be an integer"),
    ({"integer": 1.0}, "record.integer", "must be an integer"),
    ({"integer": True}, "record.integer", "must be an integer"),
    ({"integer": None}, "record.integer", "must be an integer"),
    ({"null": False}, "record.null", "must be null"),
    ({"boolean": "green"}, "record.boolean", "must be a boolean"),
    ({"boolean": 0}, "record.boolean", "must be a boolean"),
    ({"constBoolean": False}, "record.constBoolean", "must be true"),
    ({"rangeInteger": 9000}, "record.rangeInteger", "must be at most 20"),
    ({"rangeInteger": 9}, "record.rangeInteger", "must be at least 10"),
    ({"enumInteger": 7}, "record.enumInteger", "must be one of [1, 2, 3]"),
    ({"constInteger": 41}, "record.constInteger", "must be 42"),
    ({"string": None}, "record.string", "must be a string"),
    ({"string": 2}, "record.string", "must be a string"),
    ({"lenString": "."}, "record.lenString", "must be at least 2 bytes (UTF-8)"),
    ({"lenString": "abcdefg-abcdefg-abcdefg"}, "record.lenString", "must be at most 20 bytes (UTF-8)"),
    ({"lenString": "é" * 11}, "record.lenString", "must be at most 20 bytes (UTF-8)"),
    ({"lenString": "a\ud800bcdef"}, "record.lenString", "must be valid Unicode text (no lone surrogates)"),
    (
        {"graphemeString": "👩\u200d👩\u200d👦\u200d👦" * 9},
        "record.graphemeString",
        "must be at least 10 graphemes",
    ),
    ({"graphemeString": "abcdefg-abcdefg-abcdefg"}, "record.graphemeString", "must be at most 20 graphemes"),
    ({"enumString": "unexpected"}, "record.enumString", "must be one of fish, rock, tree"),
    ({"constString": "tree"}, "record.constString", "must be 'fish'"),
    ({"datetime": "2024-05-01 12:00"}, "record.datetime", "must be an RFC 3339 datetime"),
    ({"bytes": "green"}, "record.bytes", "must be bytes"),
    ({"bytes": {}}, "record.bytes", "must be bytes"),
    ({"bytes": {"bytes": "asdf"}}, "record.bytes", "must be bytes"),
    ({"bytes": {"$bytes": "aGVsbG8", "extra": 1}}, "record.bytes", "must be bytes"),
    ({"bytes": {"$bytes": "not base64!"}}, "record.bytes", "must be standard base64"),
    ({"bytes": {"$bytes": "a"}}, "record.bytes", "must be standard base64"),
    ({"sizeBytes": {"$bytes": "b25l"}}, "record.sizeBytes", "must be at least 4 bytes"),
    ({"sizeBytes": {"$bytes": "b25lb25lb25lb25lb25l"}}, "record.sizeBytes", "must be at most 8 bytes"),
    ({"cidLink": "green"}, "record.cidLink", "must be a CID link"),
    ({"cidLink": {"$link": "green"}}, "record.cidLink", "must be a CID link"),
    ({"blob": "green"}, "record.blob", "must be a blob"),
    ({"blob": {**BLOB, "mimeType": False}}, "record.blob", "must be a blob with a string mimeType"),
    ({"blob": {**BLOB, "ref": {"$link": "nope"}}}, "record.blob", "must be a CID link"),
    ({"sizeBlob": {**BLOB, "size": 12345}}, "record.sizeBlob", "must be a blob of at most 20 bytes"),
    (
        {"acceptBlob": {**BLOB, "mimeType": "video/mp4"}},
        "record.acceptBlob",
        "must be a blob of type image/*, text/plain",
    ),
    ({"array": 123}, "record.array", "must be an array"),
    ({"array": [1, True]}, "record.array[1]", "must be an integer"),
    ({"lenArray": [0]}, "record.lenArray", "must have at least 2 items"),
    ({"lenArray": [0] * 10}, "record.lenArray", "must have at most 4 items"),
    ({"object": 123}, "record.object", "must be an object"),
    ({"object": {"b": 1}}, "record.object.a", "is required"),
    ({"object": {"a": "not-a-number"}}, "record.object.a", "must be an integer"),
    ({"token": 123}, "record.token", "must be the token io.example.record#demoToken"),
    ({"token": "io.example.record#wrongToken"}, "record.token", "must be the token"),
    ({"union": 123}, "record.union", "must be an object with a $type"),
    ({"union": {"a": 1, "b": 2}}, "record.union", "must be an object with a $type"),
    ({"union": {"$type": "io.example.record#demoObject", "a": "x"}}, "record.union.a", "must be an integer"),
    ({"union": {"$type": "io.example.other#thing"}}, "record.union.size", "is required"),
    (
        {"closedUnion": {"$type": "example.unknown-lexicon.blah", "a": 1}},
        "record.closedUnion",
        "must be one of",
    ),
    ({"closedUnion": {"$type": "io.example.other"}}, "record.closedUnion.name", "is required"),
    ({"unknown": False}, "record.unknown", "must be an object"),
    ({"unknown": [1]}, "record.unknown", "must be an object"),
    ({"unknown": {"$bytes": "123"}}, "record.unknown", "must be an object"),
    ({"unknown": BLOB}, "record.unknown", "must be an object"),
    (
        {"tree": {"children": [{"children": [{"value": "deep"}]}]}},
        "record.tree.children[0].children[0].value",
        "must be an integer",
    ),
]


@pytest.mark.parametrize(("fields", "path", "message"), INVALID, ids=[f"{p}:{m[:20]}" for _, p, m in INVALID])
def test_invalid_values_fail_at_the_right_path(fields, path, message):
    with pytest.raises(ValidationError) as info:
        check(**fields)
    assert info.value.path == path
    assert info.value.message.startswith(message)
    assert str(info.value) == f"{path}: {info.value.message}"


def test_missing_required_field():
    with pytest.raises(ValidationError) as info:
        validate_value(SCHEMA, {}, REGISTRY, "io.example.record", "record")
    assert (info.value.path, info.value.message) == ("record.integer", "is required")


def test_top_level_type_mismatch_and_empty_root_path():
    with pytest.raises(ValidationError) as info:
        validate_value({"type": "ref", "ref": "#demoObject"}, [], REGISTRY, "io.example.record", "")
    assert (info.value.path, str(info.value)) == ("", "must be an object")


def test_decode_bytes_accepts_padded_and_unpadded_base64():
    assert decode_bytes({"$bytes": "aGVsbG8"}) == b"hello"
    assert decode_bytes({"$bytes": "aGVsbG8="}) == b"hello"
    with pytest.raises(ValidationError):
        decode_bytes({"$bytes": "aGVsbG8_"})  # base64url is not the data model's alphabet
