"""LexiconRegistry: loading from a directory or inline documents, refs, methods, loud failures."""

import json

import pytest

from engram.xrpc.lexicons import LexiconError, LexiconRegistry, full_ref

QUERY = {
    "lexicon": 1,
    "id": "io.example.getThing",
    "defs": {
        "main": {
            "type": "query",
            "description": "Get a thing.",
            "parameters": {"type": "params", "required": ["id"], "properties": {"id": {"type": "string"}}},
            "output": {
                "encoding": "application/json",
                "schema": {"type": "ref", "ref": "io.example.defs#thing"},
            },
            "errors": [{"name": "ThingNotFound"}, {"name": "Gone", "description": "It went."}],
        },
        "local": {"type": "object", "properties": {}},
    },
}
DEFS = {
    "lexicon": 1,
    "id": "io.example.defs",
    "defs": {
        "thing": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        "main": {"type": "token", "description": "The main def."},
    },
}
PROCEDURE = {
    "lexicon": 1,
    "id": "io.example.doThing",
    "defs": {"main": {"type": "procedure", "input": {"encoding": "*/*"}}},
}


def _write(root, doc, rel=None):
    path = root.joinpath(*(rel or doc["id"]).split(".")).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_load_reads_every_json_file_and_lists_methods(tmp_path):
    for doc in (QUERY, DEFS, PROCEDURE):
        _write(tmp_path, doc)
    (tmp_path / "README.txt").write_text("not a lexicon")
    registry = LexiconRegistry.load(tmp_path)
    methods = registry.methods()
    assert sorted(methods) == ["io.example.doThing", "io.example.getThing"]
    get = methods["io.example.getThing"]
    assert get.kind == "query"
    assert get.errors == frozenset({"ThingNotFound", "Gone"})
    assert get.description == "Get a thing."
    assert get.parameters["required"] == ["id"]
    assert get.output["encoding"] == "application/json"
    assert get.input is None
    do = methods["io.example.doThing"]
    assert (do.kind, do.input, do.output, do.parameters, do.errors) == (
        "procedure",
        {"encoding": "*/*"},
        None,
        None,
        frozenset(),
    )
    assert registry.get("io.example.defs")["id"] == "io.example.defs"
    assert "io.example.defs" in registry and "io.example.nope" not in registry


def test_resolve_ref_handles_full_local_and_bare_refs():
    registry = LexiconRegistry.from_docs([QUERY, DEFS])
    assert registry.resolve_ref("io.example.defs#thing", "io.example.getThing")["required"] == ["name"]
    assert registry.resolve_ref("#local", "io.example.getThing") == {"type": "object", "properties": {}}
    assert registry.resolve_ref("io.example.defs", "io.example.getThing")["type"] == "token"
    assert registry.resolve_ref("#thing", "io.example.defs")["type"] == "object"
    with pytest.raises(LexiconError, match="unresolvable ref"):
        registry.resolve_ref("#nope", "io.example.getThing")
    with pytest.raises(LexiconError, match="unresolvable ref"):
        registry.resolve_ref("io.example.nope#thing", "io.example.getThing")
    assert full_ref("#local", "io.example.getThing") == "io.example.getThing#local"
    assert full_ref("io.example.defs#main", "x.y.z") == "io.example.defs"


def test_id_must_match_the_file_path(tmp_path):
    path = _write(tmp_path, QUERY, rel="io.example.other")
    with pytest.raises(LexiconError, match="does not match its path") as info:
        LexiconRegistry.load(tmp_path)
    assert str(path) in str(info.value)


def test_bad_json_names_the_file(tmp_path):
    path = tmp_path / "io" / "example" / "broken.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"lexicon": 1,')
    with pytest.raises(LexiconError, match="not a readable JSON file") as info:
        LexiconRegistry.load(tmp_path)
    assert str(path) in str(info.value)


def _doc(**main):
    return {"lexicon": 1, "id": "io.example.bad", "defs": {"main": main}}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({**QUERY, "lexicon": 2}, "lexicon: must be 1"),
        ({**QUERY, "id": "not-an-nsid"}, "id: must be an NSID"),
        ({**QUERY, "defs": {}}, "defs: must be a non-empty object"),
        ({**QUERY, "extra": 1}, "unexpected key"),
        (["not", "an", "object"], "must be a JSON object"),
        (
            _doc(type="query", output={"schema": {"type": "object", "properties": {}}}),
            "encoding: must be a string",
        ),
        (
            _doc(
                type="query",
                parameters={"type": "params", "properties": {"o": {"type": "object", "properties": {}}}},
            ),
            "parameters may only be",
        ),
        (
            _doc(type="query", parameters={"type": "params", "required": ["x"], "properties": {}}),
            "undeclared properties: x",
        ),
        (
            _doc(type="object", properties={"s": {"type": "string", "format": "colour"}}),
            "unknown string format",
        ),
        (
            _doc(type="object", properties={"s": {"type": "string", "maxLength": "5"}}),
            "maxLength: must be an integer",
        ),
        (_doc(type="object", properties={"s": {"type": "strang"}}), "known type"),
        (_doc(type="object", properties={"s": {"type": "string", "items": {}}}), "unexpected key"),
        (_doc(type="object", properties={"a": {"type": "array"}}), "items: must be a definition"),
        (_doc(type="object", properties={"r": {"type": "ref", "ref": "#missing"}}), "unresolvable ref"),
        (
            _doc(type="object", properties={"u": {"type": "union", "refs": ["io.example.nope"]}}),
            "unresolvable ref",
        ),
        (_doc(type="record", key="tid", record={"type": "string"}), "must be of type object"),
        (
            _doc(type="record", key="random", record={"type": "object", "properties": {}}),
            "key: must be tid, nsid, any",
        ),
        (_doc(type="procedure", errors=[{"description": "no name"}]), "must be an object with a name"),
        (_doc(type="space", collections=["nodots"]), "must be an array of NSIDs"),
        ({"lexicon": 1, "id": "io.example.bad", "defs": {"other": {"type": "query"}}}, "must be named main"),
    ],
)
def test_structural_errors_fail_loudly(doc, message):
    with pytest.raises(LexiconError, match=message):
        LexiconRegistry.from_docs([doc])


def test_duplicate_ids_are_refused():
    with pytest.raises(LexiconError, match="duplicate lexicon id"):
        LexiconRegistry.from_docs([DEFS, DEFS])


def test_precompile_rejects_a_schema_that_refers_to_a_method():
    from engram.xrpc.validate import precompile

    doc = {
        "lexicon": 1,
        "id": "io.example.loop",
        "defs": {
            "main": {
                "type": "query",
                "output": {
                    "encoding": "application/json",
                    "schema": {
                        "type": "object",
                        "properties": {"x": {"type": "ref", "ref": "io.example.loop"}},
                    },
                },
            }
        },
    }
    registry = LexiconRegistry.from_docs([doc])
    with pytest.raises(LexiconError, match="cannot validate values of type 'query'"):
        precompile(registry)
    assert registry.compiled_defs == {}  # no half-built placeholder left behind


def test_params_must_be_a_params_definition():
    doc = {
        "lexicon": 1,
        "id": "io.example.bad",
        "defs": {"main": {"type": "query", "parameters": {"type": "object", "properties": {}}}},
    }
    with pytest.raises(LexiconError, match="must be a params definition"):
        LexiconRegistry.from_docs([doc])
