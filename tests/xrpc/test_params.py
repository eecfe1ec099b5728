"""decode_params: query strings decoded and checked against a method's lexicon params."""

import pytest
from multidict import MultiDict, MultiDictProxy

from engram.errors import InvalidInput
from engram.xrpc.errors import http_status
from engram.xrpc.lexicons import LexiconRegistry
from engram.xrpc.validate import decode_params

LEXICON = {
    "lexicon": 1,
    "id": "io.example.query",
    "defs": {
        "main": {
            "type": "query",
            "parameters": {
                "type": "params",
                "required": ["space", "tags"],
                "properties": {
                    "space": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                    "offset": {"type": "integer", "minimum": -5},
                    "exact": {"type": "boolean"},
                    "fast": {"type": "boolean", "default": True},
                    "author": {"type": "string", "format": "did"},
                    "since": {"type": "string", "format": "datetime"},
                    "q": {"type": "string", "maxLength": 4, "minLength": 2},
                    "name": {"type": "string", "maxGraphemes": 3, "minGraphemes": 2},
                    "sort": {"type": "string", "enum": ["new", "top"]},
                    "mode": {"type": "string", "knownValues": ["hybrid", "vector"], "default": "hybrid"},
                    "tags": {
                        "type": "array",
                        "maxLength": 3,
                        "minLength": 1,
                        "items": {"type": "string", "maxLength": 4},
                    },
                    "ids": {"type": "array", "items": {"type": "integer", "maximum": 9}},
                    "flags": {"type": "array", "items": {"type": "boolean"}},
                    "ratio": {"type": "string", "default": "0.4"},
                },
            },
        }
    },
}
REGISTRY = LexiconRegistry.from_docs([LEXICON])
METHOD = REGISTRY.method("io.example.query")
BASE = [("space", "at://did:plc:a/space/io.example.space/x"), ("tags", "a")]


def decode(*pairs, base=True):
    return decode_params(METHOD, MultiDictProxy(MultiDict([*(BASE if base else []), *pairs])), REGISTRY)


def rejects(message, *pairs, base=True):
    with pytest.raises(InvalidInput) as info:
        decode(*pairs, base=base)
    assert http_status(info.value) == 400 and info.value.name == "InvalidRequest"
    assert info.value.message == message


def test_defaults_apply_and_absent_optionals_are_omitted():
    assert decode() == {
        "space": "at://did:plc:a/space/io.example.space/x",
        "tags": ["a"],
        "limit": 10,
        "fast": True,
        "mode": "hybrid",
        "ratio": "0.4",
    }


def test_values_are_typed():
    out = decode(
        ("limit", "50"),
        ("offset", "-5"),
        ("exact", "true"),
        ("fast", "false"),
        ("ids", "1"),
        ("ids", "09"),
        ("flags", "false"),
    )
    assert (out["limit"], out["offset"], out["exact"], out["fast"]) == (50, -5, True, False)
    assert out["ids"] == [1, 9] and out["flags"] == [False]


def test_arrays_are_repeated_keys_in_order():
    assert decode(("tags", "b"), ("tags", "c"))["tags"] == ["a", "b", "c"]


def test_unknown_parameters_are_ignored():
    out = decode(("nope", "1"), ("nope", "2"), ("Limit", "999"))
    assert "nope" not in out and "Limit" not in out and out["limit"] == 10


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([("limit", "51")], 'Invalid parameter "limit": must be at most 50'),
        ([("limit", "0")], 'Invalid parameter "limit": must be at least 1'),
        ([("offset", "-6")], 'Invalid parameter "offset": must be at least -5'),
        ([("limit", "ten")], 'Invalid parameter "limit": must be an integer'),
        ([("limit", "10abc")], 'Invalid parameter "limit": must be an integer'),
        ([("limit", "1.0")], 'Invalid parameter "limit": must be an integer'),
        ([("limit", "+5")], 'Invalid parameter "limit": must be an integer'),
        ([("limit", " 5")], 'Invalid parameter "limit": must be an integer'),
        ([("limit", "")], 'Invalid parameter "limit": must be an integer'),
        ([("limit", "١٢")], 'Invalid parameter "limit": must be an integer'),
        ([("offset", "9" * 400)], 'Invalid parameter "offset": must be an integer'),
        ([("limit", "5"), ("limit", "6")], 'Invalid parameter "limit": must be given at most once'),
        ([("exact", "True")], 'Invalid parameter "exact": must be true or false'),
        ([("exact", "1")], 'Invalid parameter "exact": must be true or false'),
        ([("author", "alice.test")], 'Invalid parameter "author": must be a DID (did:method:identifier)'),
        (
            [("since", "2024-01-01")],
            'Invalid parameter "since": must be an RFC 3339 datetime with seconds and a timezone (such as 1985-04-12T23:20:50.123Z)',
        ),
        ([("q", "abcde")], 'Invalid parameter "q": must be at most 4 bytes (UTF-8)'),
        ([("q", "éé é")], 'Invalid parameter "q": must be at most 4 bytes (UTF-8)'),
        ([("q", "a")], 'Invalid parameter "q": must be at least 2 bytes (UTF-8)'),
        ([("name", "abcd")], 'Invalid parameter "name": must be at most 3 graphemes'),
        ([("name", "👍")], 'Invalid parameter "name": must be at least 2 graphemes'),
        ([("sort", "old")], 'Invalid parameter "sort": must be one of new, top'),
        (
            [("tags", "b"), ("tags", "c"), ("tags", "d")],
            'Invalid parameter "tags": must have at most 3 items',
        ),
        ([("tags", "toolong")], 'Invalid parameter "tags[1]": must be at most 4 bytes (UTF-8)'),
        ([("ids", "1"), ("ids", "10")], 'Invalid parameter "ids[1]": must be at most 9'),
        ([("flags", "yes")], 'Invalid parameter "flags[0]": must be true or false'),
    ],
)
def test_bad_values_are_rejected_naming_the_parameter(pairs, message):
    rejects(message, *pairs)


def test_utf8_bytes_not_characters_count_for_max_length():
    assert decode(("q", "éé"))["q"] == "éé"  # 2 characters, 4 bytes: at the limit
    assert decode(("q", "ab"))["q"] == "ab"
    rejects('Invalid parameter "q": must be at most 4 bytes (UTF-8)', ("q", "ééa"))  # 3 characters, 5 bytes


def test_graphemes_count_clusters_not_code_points():
    family = "👩\u200d👩\u200d👦\u200d👦"  # 7 code points, one grapheme
    assert decode(("name", family + "e\u0301"))["name"] == family + "e\u0301"


def test_known_values_accept_other_values_but_enum_does_not():
    assert decode(("mode", "keyword"))["mode"] == "keyword"
    assert decode(("sort", "top"))["sort"] == "top"


def test_required_parameters_must_be_present():
    rejects('Missing required parameter "space"', ("tags", "a"), base=False)
    rejects('Missing required parameter "tags"', ("space", "s"), base=False)


def test_a_plain_mapping_works_too():
    out = decode_params(METHOD, {"space": "s", "tags": "t", "limit": "3"}, REGISTRY)
    assert out["tags"] == ["t"] and out["limit"] == 3


def test_method_without_parameters_decodes_to_nothing():
    registry = LexiconRegistry.from_docs(
        [{"lexicon": 1, "id": "io.example.bare", "defs": {"main": {"type": "query"}}}]
    )
    assert (
        decode_params(registry.method("io.example.bare"), MultiDictProxy(MultiDict([("x", "1")])), registry)
        == {}
    )
