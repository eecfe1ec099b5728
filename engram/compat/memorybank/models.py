"""The Memory Bank request bodies (the plugin's pydantic models) and their validation errors.

Validation errors are rendered the way the original FastAPI service (pydantic 1) rendered them:
`422 {"detail": [{"loc": ["body", ...], "msg": "field required", "type": "value_error.missing"}]}`.
pydantic 2 does the checking; `v1_errors` translates its error types to the pydantic 1 spellings clients
see upstream. As upstream, extra fields are ignored and a number sent where a string is expected is
taken as its text (docs/memorybank.md).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, StringConstraints, ValidationError

from ...errors import InvalidInput

# Bounds upstream does not have (docs/memorybank.md "Limits"): ids and metadata end up in tags and attrs, and a
# query is embedded whole, so each is capped; beyond a cap the answer is a 422 like any other bad field.
Id = Annotated[str, StringConstraints(max_length=512)]
Short = Annotated[str, StringConstraints(max_length=2000)]
QueryText = Annotated[str, StringConstraints(max_length=10_000)]


class Source(str, Enum):
    email = "email"
    file = "file"
    chat = "chat"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)


class DocumentMetadata(_Model):
    source: Source | None = None
    source_id: Short | None = None
    url: Short | None = None
    created_at: Short | None = None
    author: Short | None = None


class Document(_Model):
    id: Id | None = None
    text: str
    user_id: Id
    metadata: DocumentMetadata | None = None


class MetadataFilter(_Model):
    document_id: Id | None = None
    source: Source | None = None
    source_id: Short | None = None
    author: Short | None = None
    start_date: Short | None = None
    end_date: Short | None = None


def _integral(value: Any) -> Any:
    """An integral float as its int, as pydantic 1 took it (a JSON integer too large for a double's exact
    range arrives as a float: `1e40` is a valid `top_k`, clamped later)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _top_k(value: Any) -> Any:
    """A null `top_k` is the default, as upstream's optional field takes it (docs/memorybank.md)."""
    return 3 if value is None else _integral(value)


class Query(_Model):
    query: QueryText
    user_id: Id
    filter: MetadataFilter | None = None
    top_k: Annotated[int, BeforeValidator(_top_k)] = 3


class UploadFields(_Model):
    """The form fields of /upsert-file besides `file`: the tenancy (docs/memorybank.md#tenancy) needs a user_id, which comes from
    its own field or from the metadata JSON (docs/memorybank.md "Files")."""

    user_id: Id
    metadata: DocumentMetadata | None = None


class UpsertRequest(_Model):
    documents: list[Document]


class QueryRequest(_Model):
    queries: list[Query]


class DeleteRequest(_Model):
    user_id: Id
    ids: list[Id] | None = None
    filter: MetadataFilter | None = None
    delete_all: bool | None = False


class RequestInvalid(InvalidInput):
    """A request body that fails validation; `errors` are already in the pydantic 1 shape (rendered 422)."""

    default_name = "ValidationError"

    def __init__(self, errors: list[dict[str, Any]]):
        super().__init__(errors[0]["msg"] if errors else "invalid request")
        self.errors = errors


_V1 = {  # pydantic 2 error type -> (pydantic 1 type, pydantic 1 message or None to keep pydantic 2's)
    "missing": ("value_error.missing", "field required"),
    "string_type": ("type_error.str", "str type expected"),
    "int_type": ("type_error.integer", "value is not a valid integer"),
    "int_parsing": ("type_error.integer", "value is not a valid integer"),
    "int_from_float": ("type_error.integer", "value is not a valid integer"),
    "bool_type": ("type_error.bool", "value could not be parsed to a boolean"),
    "bool_parsing": ("type_error.bool", "value could not be parsed to a boolean"),
    "list_type": ("type_error.list", "value is not a valid list"),
    "model_type": ("type_error.dict", "value is not a valid dict"),
    "model_attributes_type": ("type_error.dict", "value is not a valid dict"),
    "dict_type": ("type_error.dict", "value is not a valid dict"),
    "enum": (
        "type_error.enum",
        "value is not a valid enumeration member; permitted: 'email', 'file', 'chat'",
    ),
    "string_too_long": (
        "value_error.any_str.max_length",
        "ensure this value has at most {max_length} characters",
    ),
}


def v1_errors(exc: ValidationError) -> list[dict[str, Any]]:
    out = []
    for error in exc.errors(include_url=False, include_input=False):
        kind, message = _V1.get(error["type"], ("value_error", None))
        msg = message.format(**error.get("ctx", {})) if message else error["msg"]
        out.append({"loc": ["body", *error["loc"]], "msg": msg, "type": kind})
    return out


def field_error(loc: list[str | int], msg: str, kind: str) -> RequestInvalid:
    return RequestInvalid([{"loc": ["body", *loc], "msg": msg, "type": kind}])


def parse(model: type[_Model], body: Any) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise RequestInvalid(v1_errors(exc)) from None
