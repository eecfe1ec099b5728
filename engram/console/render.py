"""Templates: a Jinja2 environment over the package's `templates/`, and the helpers every page uses."""

from __future__ import annotations

from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web

from .access import viewer_key


def setup_templates(app: web.Application) -> None:
    env = aiohttp_jinja2.setup(
        app,
        loader=jinja2.PackageLoader("engram.console", "templates"),
        autoescape=jinja2.select_autoescape(["html"], default_for_string=True),
        undefined=jinja2.StrictUndefined,  # a typo in a template fails its test instead of rendering blank
    )
    env.filters["day"] = day
    env.filters["similarity"] = lambda permille: f"{permille / 1000:.3f}"


def day(iso: str | None) -> str:
    """The date part of an ISO timestamp (the full value goes in a title/datetime attribute)."""
    return (iso or "")[:10]


def render(
    request: web.Request, template: str, context: dict[str, Any], *, status: int = 200
) -> web.Response:
    # The helpers are added here rather than by aiohttp_jinja2's context processors: those run as a
    # middleware inside the console's guard, which renders error pages too.
    return aiohttp_jinja2.render_template(
        template, request, {**_request_helpers(request), **context}, status=status
    )


def _request_helpers(request: web.Request) -> dict[str, Any]:
    router = request.app.router

    def href(name: str, **query: Any) -> str:
        target = router[name].url_for()
        # a list is a repeated parameter (forms.EXACT_TAG); other values one each
        clean = {
            k: [str(item) for item in v] if isinstance(v, list) else str(v)
            for k, v in query.items()
            if v is not None and v != "" and v != []
        }
        return str(target.with_query(clean)) if clean else str(target)

    def asset(path: str) -> str:
        return str(router["static"].url_for(filename=path))

    return {
        "viewer": request.get(viewer_key),
        "href": href,
        "asset": asset,
    }


def see_other(location: str) -> web.Response:
    """A 303 to `location` (after a POST, the browser GETs it; returned, not raised, so cookies stick)."""
    return web.Response(status=303, headers={"Location": location})
