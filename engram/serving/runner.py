"""Running the app: `EngramAppRunner` serves it with engram's connection handler, `run_server` is what
`engram serve` calls (aiohttp's `web.run_app` always builds a plain `AppRunner`).

aiohttp has no public way to choose the connection handler class: an `AppRunner` builds a `web.Server`
whose `__call__` makes a `RequestHandler`. So the runner lets aiohttp build its server as usual (startup
signals, handler_args from the app), then wraps the same handler, request factory and arguments in an
`EngramServer`, whose `__call__` makes an `EngramRequestHandler` (checked against aiohttp 3.12-3.14).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from ..app_keys import context_key
from ..config import ServingConfig, Settings
from ..xrpc.lexicons import LexiconRegistry
from .event_loop import run_on
from .gc_tuning import tune_collector
from .log_throttle import Throttle, install_accept_throttle
from .protocol import ConnectionLimits, EngramRequestHandler
from .request_limits import MAX_FIELD_BYTES, MAX_HEADERS, max_request_line

log = logging.getLogger("engram.http")


def handler_args(config: ServingConfig, registry: LexiconRegistry) -> Mapping[str, Any]:
    """aiohttp's own per-connection limits (`web.Application(handler_args=...)`): line and field sizes
    from the lexicons, and the keep-alive timeout."""
    return {
        "max_line_size": max_request_line(registry),
        "max_field_size": MAX_FIELD_BYTES,
        "max_headers": MAX_HEADERS,
        "keepalive_timeout": config.keepalive_timeout_ms / 1000,
    }


def connection_limits(config: ServingConfig) -> ConnectionLimits:
    return ConnectionLimits(config.header_timeout_ms / 1000, config.max_connections)


class EngramServer(web.Server):
    def __init__(self, handler: Any, *, request_factory: Any, limits: ConnectionLimits, **kwargs: Any):
        def factory(message, payload, protocol, writer, task):
            if isinstance(protocol, EngramRequestHandler):
                protocol.request_head_complete()
            return request_factory(message, payload, protocol, writer, task)

        super().__init__(handler, request_factory=factory, **kwargs)
        self.limits = limits

    def __call__(self) -> EngramRequestHandler:
        return EngramRequestHandler(self, loop=self._loop, limits=self.limits, **self._kwargs)


class EngramAppRunner(web.AppRunner):
    """An AppRunner whose connections are `EngramRequestHandler`s, limited by the app's settings."""

    def __init__(self, app: web.Application, **kwargs: Any):
        super().__init__(app, **kwargs)
        self._restore_exception_handler: Callable[[], None] | None = None

    async def setup(self) -> None:
        loop = asyncio.get_running_loop()
        self._restore_exception_handler = install_accept_throttle(loop, log, Throttle())
        await super().setup()

    async def cleanup(self) -> None:
        try:
            await super().cleanup()
        finally:
            if self._restore_exception_handler is not None:
                self._restore_exception_handler()
                self._restore_exception_handler = None

    async def _make_server(self) -> web.Server:
        base = await super()._make_server()  # startup signals, frozen app, handler_args merged in
        config = self.app[context_key].settings.serving
        return EngramServer(
            base.request_handler,
            request_factory=base.request_factory,
            limits=connection_limits(config),
            handler_cancellation=base.handler_cancellation,
            loop=asyncio.get_running_loop(),
            **base._kwargs,
        )


def _warn_if_descriptors_short(config: ServingConfig) -> None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = config.max_connections + 64  # the database, index files, the metrics port, the resolver
    if soft != resource.RLIM_INFINITY and soft < needed:
        log.warning(
            "ENGRAM_MAX_CONNECTIONS=%d but only %d file descriptors are allowed (ulimit -n); "
            "raise the limit to at least %d or lower ENGRAM_MAX_CONNECTIONS",
            config.max_connections,
            soft,
            needed,
        )


async def _serve(
    make_app: Callable[[], Awaitable[web.Application]],
    config: ServingConfig,
    access_log_class: Any,
    reuse_port: bool,
) -> None:
    app = await make_app()  # the parts open on the loop that serves them, before the port is bound
    runner = EngramAppRunner(app, handle_signals=True, access_log_class=access_log_class)
    await runner.setup()
    tune_collector()  # start-up is done; before the port is bound, so no request waits for it
    try:
        # reuse_port: several engram processes share the port (ENGRAM_PROCESSES, engram/serving/processes.py)
        await web.TCPSite(runner, config.host, config.port, reuse_port=reuse_port or None).start()
        await asyncio.Event().wait()  # until SIGINT/SIGTERM (the runner turns them into GracefulExit)
    finally:
        await runner.cleanup()


def run_server(
    make_app: Callable[[], Awaitable[web.Application]],
    settings: Settings,
    *,
    access_log_class: Any,
    reuse_port: bool = False,
) -> None:
    """Serve the app `make_app` (an async factory, `engram.app.create_app`) builds on the chosen loop."""
    config = settings.serving
    _warn_if_descriptors_short(config)
    with contextlib.suppress(web.GracefulExit, KeyboardInterrupt):
        run_on(config.event_loop, _serve(make_app, config, access_log_class, reuse_port))
