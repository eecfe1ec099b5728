"""String formats: interop-style tables of valid and invalid values per format."""

import pytest

from engram.identifiers import SpaceRef, parse_space_uri
from engram.xrpc.formats import FORMATS

LONG_RKEY = "o" * 512

VALID = {
    "did": [
        "did:plc:z72i7hdynmk6r22z27h6tvur",
        "did:web:example.com",
        "did:web:localhost%3A8080",
        "did:method:val:two",
        "did:m:v",
        "did:method::::val",
        "did:method:-:_:.",
        "did:key:zQ3shZc2QzApp2oymGvQbzP8eKheVshBHbU4ZYjeXqwSKEn6N",
    ],
    "handle": [
        "alice.bsky.social",
        "john.test",
        "jan.test",
        "a234567890123456789.test",
        "xn--ls8h.test",
        "a.co",
        "laptop.local",
        "8.cn",
    ],
    "at-identifier": ["did:plc:z72i7hdynmk6r22z27h6tvur", "alice.bsky.social"],
    "nsid": [
        "com.example.fooBar",
        "net.users.bob.ping",
        "a-0.b-1.c",
        "a.b.c",
        "com.atproto.feed.postV2",
        "cn.8.lex.stuff",
    ],
    "tid": ["3jzfcijpj2z2a", "7777777777777", "3zzzzzzzzzzzz", "2222222222222"],
    "record-key": [
        "3jui7kd54zh2y",
        "self",
        "example.com",
        "~1.2-3_",
        "dHJ1ZQ",
        "pre:fix",
        "_",
        "...",
        LONG_RKEY,
    ],
    "cid": [
        "bafyreidfayvfuwqa7qlnopdjiqrxzs6blmoeu4rujcjtnci5beludirz2a",
        "bafyreiclp443lavogvhj3d2ob2cxbfuscni2k5jk7bebjzg7khl3esabwq",
        "QmZtmD2qt6fJot32nabSP3CUjicnypEBz7bHVDhPQt9aAy",
    ],
    "datetime": [
        "1985-04-12T23:20:50.123Z",
        "1985-04-12T23:20:50.123456Z",
        "1985-04-12T23:20:50.12345678912345Z",
        "1985-04-12T23:20:50Z",
        "1985-04-12T23:20:50.0Z",
        "1985-04-12T23:20:50.123+00:00",
        "1985-04-12T23:20:50.123-07:00",
        "0985-04-12T23:20:50.123-07:00",
        "1984-02-29T00:00:00Z",
        "2024-12-31T23:59:59+14:00",
    ],
    "uri": [
        "https://example.com",
        "https://example.com/path?q=1#frag",
        "dns:example.com",
        "at://did:plc:asdf123",
        "did:plc:asdf123",
        "mailto:a@b.co",
    ],
    "language": [
        "en",
        "pt-BR",
        "ja",
        "zh-Hant-TW",
        "de-419",
        "i-klingon",
        "x-private",
        "sgn-BE-FR",
        "en-GB-oed",
        "de-DE-1901",
        "en-u-co-phonebk",
    ],
    "at-uri": [
        "at://did:plc:asdf123",
        "at://user.bsky.social",
        "at://did:plc:asdf123/com.atproto.feed.post",
        "at://did:plc:asdf123/com.atproto.feed.post/record",
        "at://did:plc:asdf123/com.atproto.feed.post/" + LONG_RKEY,
        "at://did:web:example.com/io.nsid.someFunc/self.",
        "at://did:web:example.com/io.nsid.someFunc/lang:",
        "at://did:web:example.com/io.nsid.someFunc/~",
        "at://did:web:example.com/io.nsid.someFunc/...",
        "at://did:web:localhost%3A8080/app.bsky.feed.post/3jui7kd54zh2y",
        "at://did:plc:asdf123/com.atproto.feed.postV2",
        "at://did:plc:asdf123/com.atproto.feed.post/record#/text",
        "at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/space/app.bsky.group/default",
        "at://did:plc:you/space/garden.engram.space/memory/did:plc:me/garden.engram.memory/3jui7kd54zh2y",
        "at://did:plc:you/space/garden.engram.space/memory/did:plc:me",
    ],
}

INVALID = {
    "did": [
        "did",
        "didmethodval",
        "method:did:val",
        "did:method:",
        "didmethod:val",
        "did:methodval",
        ":did:method:val",
        "did.method.val",
        "did:method:val:",
        "did:method:val%",
        "DID:method:val",
        "did:METHOD:val",
        "did:m123:val",
        "did:method:val/two",
        "did:method:val?two",
        "did:method:val#two",
        "did:plc:" + "a" * 2048,
        "",
    ],
    "handle": [
        "did:thing.test",
        "did:thing",
        "john-.test",
        "john.0",
        "john.-",
        "xn--bcher-.tld",
        "john..test",
        "jo_hn.test",
        "-john.test",
        ".john.test",
        "jo!hn.test",
        "john.test.",
        "john",
        "a" * 64 + ".test",
        "john.t\u00e9st",
        "",
    ],
    "at-identifier": ["123", "did:plc:", "john", ""],
    "nsid": [
        "com.example",
        "com",
        "com.exa💩ple.thing",
        "com.example.3",
        "com.example.foo-bar",
        "com.example.thing.",
        ".com.example",
        "com.example.*",
        "1com.example.thing",
        "com..example.thing",
        "123",
        "",
    ],
    "tid": [
        "3jzfcijpj2z21",
        "0000000000000",
        "3jzfcijpj2z2aa",
        "3jzfcijpj2z2",
        "3jzf-cij-pj2z-2a",
        "zzzzzzzzzzzzz",
        "kjzfcijpj2z2a",
        "000",
    ],
    "record-key": [
        "alpha/beta",
        ".",
        "..",
        "#extra",
        "@handle",
        "any space",
        "any+space",
        "number[3]",
        "number(3)",
        '"quote"',
        "dHJ1ZQ==",
        "",
        "o" * 513,
    ],
    "cid": [
        "green",
        "123",
        "example.com",
        "bafyreiclp443lavogvhj3d2ob2cxbfuscni2k5jk7bebjzg7khl3esabw",
        "QmZtmD2qt6fJot32nabSP3CUjicnypEBz7bHVDhPQt9aA",
        "bafy reiclp",
    ],
    "datetime": [
        "1985-04-12",
        "1985-04-12T23:20Z",
        "1985-04-12T23:20:5Z",
        "1985-04-12T23:20:50.123",
        "1985-04-12t23:20:50.123Z",
        "1985-04-12T23:20:50.123z",
        "1985-04-12 23:20:50.123Z",
        "1985-04-12T23:20:50.123-00:00",
        "1985-04-12T23:20:50.Z",
        "+001985-04-12T23:20:50.123Z",
        "23:20:50.123Z",
        "1985-04-12T23:20:50.123+0000",
        "1985-04-12T23:20:50.123+00",
        " 1985-04-12T23:20:50.123Z",
        "1985-04-12T23:20:50.123Z ",
        "1985-4-12T23:20:50Z",
        "123",
        # parse as syntax but are not real times
        "1985-00-12T23:20:50.123Z",
        "1985-04-00T23:20:50.123Z",
        "1985-13-12T23:20:50.123Z",
        "1985-04-12T25:20:50.123Z",
        "1985-04-12T23:99:50.123Z",
        "1985-04-12T23:20:61.123Z",
        "1985-04-12T23:20:60Z",
        "1985-02-29T00:00:00Z",
        "1985-04-31T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "1985-04-12T23:20:50+24:00",
    ],
    "uri": ["123", "example.com", "https://", "https://exa mple.com", "", "://example.com"],
    "language": [
        "jaja",
        ".",
        "123",
        "JA",
        "j",
        "ja-",
        "a-DE",
        "de-DE-1901-1901",
        "en-rozaj-ROZAJ",
        "en-a-foo-a-bar",
        "en-u-co-phonebk-U-ca-buddhist",
        "",
    ],
    "at-uri": [
        "a://did:plc:asdf123",
        "at//did:plc:asdf123",
        "at:/a/did:plc:asdf123",
        "at:/did:plc:asdf123",
        "AT://did:plc:asdf123",
        "http://did:plc:asdf123",
        "://did:plc:asdf123",
        "at:did:plc:asdf123",
        "at:/did:plc:asdf123",
        "at:///did:plc:asdf123",
        "at://:/did:plc:asdf123",
        "at:/ /did:plc:asdf123",
        "at://did:plc:asdf123 ",
        "at://did:plc:asdf123/ ",
        "at://did:plc:asdf123/",
        "at://did:plc:asdf123/com.atproto.feed.post/",
        "at://did:plc:asdf123/com.atproto.feed.post/record/",
        "at://did:plc:asdf123/com.atproto.feed.post/record/extra",
        "at://did:plc:asdf123/short",
        "at://did:plc:asdf123/com.atproto.feed.post/.",
        "at://did:plc:asdf123#",
        "at://did:plc:asdf123/com.atproto.feed.post/record#text",
        "at://123",
        "at://did:plc:asdf123?q=1",
        "at://user.bsky.social/space/garden.engram.space/memory",
        "at://did:plc:you/space/garden.engram.space",
        "at://did:plc:you/space/nodots/memory",
        "at://did:plc:you/space/garden.engram.space/../did:plc:me/garden.engram.memory/3jui7kd54zh2y",
        "at://did:plc:you/space/garden.engram.space/memory/alice.test/garden.engram.memory/3jui7kd54zh2y",
        "at://did:plc:you/space/garden.engram.space/memory/did:plc:me/garden.engram.memory/3jui7kd54zh2y/extra",
        "at://did:plc:you/space/garden.engram.space/memory/did:plc:me/garden.engram.memory/..",
        "at://did:plc:asdf123/com.atproto.feed.post/" + "o" * 8200,
    ],
}


def _cases(table):
    return [
        pytest.param(fmt, value, id=f"{fmt}:{value[:40]!r}")
        for fmt, values in table.items()
        for value in values
    ]


@pytest.mark.parametrize(("fmt", "value"), _cases(VALID))
def test_valid_values_pass(fmt, value):
    assert FORMATS[fmt](value) is None


@pytest.mark.parametrize(("fmt", "value"), _cases(INVALID))
def test_invalid_values_fail_with_a_reason(fmt, value):
    problem = FORMATS[fmt](value)
    assert isinstance(problem, str) and problem.startswith("must")


def test_every_lexicon_format_is_covered():
    assert set(VALID) == set(INVALID) == set(FORMATS)


def test_parse_space_uri_splits_the_canonical_form():
    ref = parse_space_uri("at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/space/garden.engram.space/default")
    assert ref == SpaceRef("did:plc:ewvi7nxzyoun6zhxrhs64oiz", "garden.engram.space", "default")
    assert str(ref) == "at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/space/garden.engram.space/default"


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("https://did:plc:a/space/garden.engram.space/default", "at://"),
        ("at://did:plc:a/space/garden.engram.space/default/", "at://{authority DID}"),
        ("at://did:plc:a/space/garden.engram.space/default?x=1", "query or fragment"),
        ("at://did:plc:a/space/garden.engram.space/default#frag", "query or fragment"),
        ("at://did:plc:a/space/garden.engram.space", "at://{authority DID}"),
        ("at://did:plc:a/garden.engram.space/default/x", "at://{authority DID}"),
        (
            "at://did:plc:a/space/garden.engram.space/default/did:plc:b/garden.engram.memory/3jui7kd54zh2y",
            "at://{authority DID}",
        ),
        ("at://alice.test/space/garden.engram.space/default", "authority must be a DID"),
        ("at://did:plc:a/space/notnsid/default", "space type must be an NSID"),
        ("at://did:plc:a/space/garden.engram.space/..", "space key must be a record key"),
        ("at://did:plc:a/space/garden.engram.space/has space", "space key must be a record key"),
        ("at://did:plc:a/space/garden.engram.space/" + "k" * 513, "space key must be a record key"),
        ("", "at://"),
    ],
)
def test_parse_space_uri_rejects_non_canonical_forms(uri, reason):
    with pytest.raises(ValueError, match=reason.replace("{", r"\{").replace("?", r"\?")):
        parse_space_uri(uri)
