"""garden.engram.exportSpace: the space as an engram-export/1 tar (importable with `engram import`)."""

from __future__ import annotations

import hashlib
import tempfile

from aiohttp import web

from ....context import AppContext
from ....service.export import write_export
from ....service.export_gate import ExportGate
from ....xrpc.server import RawOutput, XrpcRequest, XrpcServer
from ...auth_modes import space_reader

NSID = "garden.engram.exportSpace"
CHUNK = 1 << 20


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    gate = ExportGate()

    async def handle(call: XrpcRequest) -> RawOutput:
        space = call.auth.space
        async with gate.admit(space.uri, ctx.services.search.limiter):
            return await _export(call, space)

    async def _export(call: XrpcRequest, space) -> RawOutput:
        # Build the tar in a temp file first: an error then still answers as an XRPC error, and the
        # response carries a Content-Length instead of a tar cut short mid-stream.
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the finally below, after streaming
        try:
            await write_export(ctx.store, ctx.services.spaces, ctx.pool, space.uri, spool)
            size = spool.tell()
            spool.seek(0)
            name = hashlib.sha256(space.uri.encode()).hexdigest()[:16]
            response = web.StreamResponse(
                headers={
                    "Content-Type": "application/x-tar",
                    "Content-Length": str(size),
                    "Content-Disposition": f'attachment; filename="engram-{space.skey}-{name}.tar"',
                }
            )
            await response.prepare(call.request)
            while chunk := await ctx.pool.run(spool.read, CHUNK):
                await response.write(chunk)
            await response.write_eof()
            return RawOutput(response)
        finally:
            spool.close()

    xrpc.add(NSID, handle, auth=space_reader(ctx), space_scoped=True)
