"""Routes every lexicon method to `/xrpc/{nsid}` and runs one fixed pipeline for each call:

    params → auth → body → input → handler → output validation

Handlers are registered with `XrpcServer.add(nsid, handler, auth=...)`. A procedure's body is read after
its auth hook has accepted the caller, so an unauthenticated client cannot make engram read (up to
ENGRAM_MAX_BODY_BYTES of) a body it will refuse anyway; an auth mode that must see the body first (the
admin signature covers its digest; a reader's procedure names its space in it) declares so with
`@reads_body_first`, and its body is then validated before the hook runs (params → body → input → auth),
so a refused body never reaches checks that claim single-use tokens. Rate limits are the services' business (they know the space and the authority), so
the pipeline has no rate-limit stage. A lexicon method without a handler answers 501
`MethodNotImplemented`, so the list of unbuilt methods is visible (and pinned by a test). An error name the
method's lexicon does not declare (and that is not a generic transport error) is treated as a server bug:
logged and answered 500.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from engram.errors import EngramError, InternalFailure, InvalidInput, NotImplementedYet, TooLarge

from .errors import GENERIC_ERROR_NAMES
from .lexicons import LexiconRegistry, MethodDef
from .validate import NOT_PARSED, ValidationError, decode_params, validate_input, validate_output

if TYPE_CHECKING:
    from ..space_scopes import SpaceScopes

log = logging.getLogger("engram.xrpc")


@dataclass
class XrpcRequest:
    """What a handler sees: validated params and input, the auth hook's verdict, and the raw request."""

    nsid: str
    params: dict[str, Any]
    input: Any
    auth: Any
    request: web.Request
    response_headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RawOutput:
    """A non-JSON answer (e.g. exportSpace's tar): bytes or a ready StreamResponse."""

    body: bytes | web.StreamResponse
    content_type: str = "application/octet-stream"
    headers: Mapping[str, str] = field(default_factory=dict)


Handler = Callable[[XrpcRequest], Awaitable[Any]]
# An auth hook sees the request, the decoded params and, if it `reads_body_first`, the body parsed as JSON
# (else None), so it can find the space a procedure names in its body before the body is validated.
AuthHook = Callable[[web.Request, dict[str, Any], Any], Awaitable[Any]]
# The raw request body as read by the pipeline (streamed, so `request.read()` would return b"" afterwards):
# auth hooks that sign over the exact bytes (admin signatures' Content-Digest) read it from here.
RAW_BODY = web.RequestKey("xrpc_raw_body", bytes)


def reads_body_first(hook: AuthHook) -> AuthHook:
    """Declare that an auth hook needs the request body (raw under RAW_BODY, parsed as its third
    argument): the pipeline then reads the body before the hook runs. Other hooks run first and get None."""
    hook.reads_body = True  # type: ignore[attr-defined]
    return hook


def _reads_body(hook: AuthHook | None) -> bool:
    return bool(getattr(hook, "reads_body", False))


@dataclass
class Route:
    method: MethodDef
    handler: Handler
    auth: AuthHook | None
    # The answer comes from the space's index or acts on it: a cluster serves it on the space's holder
    # (engram/space_scopes.py). The space is the query's `space` parameter or the procedure body's field.
    space_scoped: bool = False


class XrpcServer:
    def __init__(self, registry: LexiconRegistry, *, max_body_bytes: int, validate_every_output: bool = True):
        self.registry = registry
        self.max_body_bytes = max_body_bytes
        # Outputs are built by the presenters (engram/views.py), so a method whose first answer fits its
        # lexicon keeps fitting it; validating every answer cost ~12% of a search's Python time
        # (docs/benchmarks.md). Tests and ENGRAM_VALIDATE_OUTPUT=1 check every answer.
        self.validate_every_output = validate_every_output
        self.validated_methods: set[str] = set()
        self.routes: dict[str, Route] = {}

    def add(
        self,
        nsid: str,
        handler: Handler,
        *,
        auth: AuthHook | None = None,
        space_scoped: bool = False,
    ) -> None:
        method = self.registry.methods().get(nsid)
        if method is None:
            raise KeyError(f"no query or procedure lexicon for {nsid}")
        if nsid in self.routes:
            raise KeyError(f"{nsid} registered twice")
        self.routes[nsid] = Route(method, handler, auth, space_scoped)

    def unbuilt(self) -> set[str]:
        return {nsid for nsid, m in self.registry.methods().items() if m.kind != "subscription"} - set(
            self.routes
        )

    def install(self, app: web.Application, scopes: SpaceScopes) -> None:
        """Serve /xrpc/{nsid}, and declare the space-scoped methods' paths with where their space is."""
        app.router.add_route("*", "/xrpc/{nsid}", self.dispatch)
        for nsid, route in sorted(self.routes.items()):
            if route.space_scoped:
                query = route.method.kind == "query"
                scopes.declare(f"/xrpc/{nsid}", _space_param if query else _space_in_body, label=nsid)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        nsid = request.match_info["nsid"]
        method = self.registry.find_method(nsid)
        if method is None or method.kind == "subscription":
            raise NotImplementedYet(f"Method not implemented: {nsid}", "MethodNotImplemented")
        expected = "GET" if method.kind == "query" else "POST"
        allowed = ("GET", "HEAD") if expected == "GET" else ("POST",)
        if request.method not in allowed:
            raise InvalidInput(f"Incorrect HTTP method ({request.method}): {nsid} expects {expected}")
        route = self.routes.get(nsid)
        if route is None:
            raise NotImplementedYet(f"{nsid} is not implemented by this service yet")
        return await self._run(route, request)

    async def _run(self, route: Route, request: web.Request) -> web.StreamResponse:
        method = route.method
        params = decode_params(method, request.query, self.registry)
        procedure = method.kind == "procedure"
        body_first = procedure and _reads_body(route.auth)
        auth = None
        if route.auth and not body_first:
            auth = await route.auth(request, params, None)
        body = await self._read_body(request) if procedure else b""
        request[RAW_BODY] = body
        body_json = _peek_json(body, request.content_type)
        input_value = None
        if route.auth and body_first:
            # the body is validated before the hook reads it: the validator's own error says what is wrong
            # with a body (where the hook would only miss the space it names), and a refused body never
            # reaches the hook's checks, which may claim a single-use token (engram/auth/replay.py)
            input_value = self._input(method, request, body, body_json)
            auth = await route.auth(request, params, None if body_json is NOT_PARSED else body_json)
        elif procedure:
            input_value = self._input(method, request, body, body_json)
        call = XrpcRequest(method.nsid, params, input_value, auth, request)
        try:
            output = await route.handler(call)
        except EngramError as err:
            if err.name not in method.errors and err.name not in GENERIC_ERROR_NAMES:
                log.error("handler for %s raised undeclared error %s: %s", method.nsid, err.name, err.message)
                raise InternalFailure("Internal Server Error") from err
            err.headers = {**call.response_headers, **err.headers}
            raise
        return self._respond(method, call, output)

    def _input(self, method: MethodDef, request: web.Request, body: bytes, body_json: Any) -> Any:
        return validate_input(
            method, request.content_type if body else None, body, self.registry, parsed=body_json
        )

    async def _read_body(self, request: web.Request) -> bytes:
        if RAW_BODY in request:  # read already to find the request's space (`_space_in_body` below)
            return request[RAW_BODY]
        if request.content_length is not None and request.content_length > self.max_body_bytes:
            raise TooLarge(f"Request body is larger than {self.max_body_bytes} bytes")
        chunks, size = [], 0
        async for chunk in request.content.iter_chunked(65536):
            size += len(chunk)
            if size > self.max_body_bytes:
                raise TooLarge(f"Request body is larger than {self.max_body_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _respond(self, method: MethodDef, call: XrpcRequest, output: Any) -> web.StreamResponse:
        if isinstance(output, web.StreamResponse):
            return output
        if isinstance(output, RawOutput):
            if isinstance(output.body, web.StreamResponse):
                return output.body
            return web.Response(
                body=output.body,
                content_type=output.content_type,
                headers={**call.response_headers, **output.headers},
            )
        if output is None and method.output is None:
            return web.Response(status=200, headers=call.response_headers)
        if self.validate_every_output or method.nsid not in self.validated_methods:
            try:
                validate_output(method, output, self.registry)
            except ValidationError as err:
                log.error("output of %s violates its lexicon: %s", method.nsid, err)
                raise InternalFailure("Internal Server Error") from err
            self.validated_methods.add(method.nsid)
        return web.Response(
            body=orjson.dumps(output), content_type="application/json", headers=call.response_headers
        )


def _peek_json(body: bytes, content_type: str) -> Any:
    """The JSON body decoded once (for the auth hook and then the input validator), or NOT_PARSED."""
    if not body or content_type != "application/json":
        return NOT_PARSED
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return NOT_PARSED  # the input validator reports malformed JSON with a proper message


MAX_ROUTED_BODY = 64 * 1024  # the space-scoped procedures' bodies are a few hundred bytes


async def _space_param(request: web.Request) -> str | None:
    return request.query.get("space") or None


async def _space_in_body(request: web.Request) -> str | None:
    """The `space` field of a procedure's JSON body, read before authentication (the body is kept under
    RAW_BODY for the pipeline); None for a request the pipeline refuses anyway (method, size) or no space."""
    if request.method != "POST" or (request.content_length or 0) > MAX_ROUTED_BODY:
        return None
    body = await request.read()
    request[RAW_BODY] = body
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    space = parsed.get("space") if isinstance(parsed, dict) else None
    return space if isinstance(space, str) and space else None
