"""com.atproto.simplespace.createSpace, updateSpace and getSpace mapped onto engram's hosted spaces
(docs/space-host.md#managing-members).

engram implements one configuration of the reference's simplespace: the member-list read and write
policies (its members, `engram space grant`) and open app access (every client is admitted; an
attestation is checked when sent). Anything else is refused with the reference's error rather than stored
and not enforced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..identifiers import SPACE_TYPE
from ..store import Space
from ..store.tid import new_tid
from ..store.uris import space_uri

if TYPE_CHECKING:
    from ..auth.keyring import LocalKeyring
    from ..service.spaces import SpaceService

DEFS = "com.atproto.simplespace.defs"
MEMBER_LIST = f"{DEFS}#memberListPolicy"
OPEN = f"{DEFS}#open"


def _variant(value: dict[str, Any] | None, default: str) -> str:
    return default if value is None else str(value.get("$type", "")).removesuffix("#main")


async def create_space(
    keyring: LocalKeyring,
    spaces: SpaceService,
    authority: str,
    space_type: str | None,
    *,
    skey: str | None = None,
    read_policy: dict[str, Any] | None = None,
    write_policy: dict[str, Any] | None = None,
    app_access: dict[str, Any] | None = None,
) -> Space:
    """A hosted space under ``authority`` (the verified caller), configured with the default model."""
    if keyring.private_key(authority) is None:
        raise InvalidInput(
            f"engram holds no key for {authority}: it could not sign the space's credentials or commits",
            "UnsupportedAuthority",
        )
    if space_type is None:
        raise InvalidInput('Missing required property "spaceType"')
    if space_type != SPACE_TYPE:
        raise InvalidInput(f"engram hosts spaces of type {SPACE_TYPE}, not {space_type}", "InvalidType")
    _check_configuration(read_policy, write_policy, app_access)
    skey = skey or new_tid()
    existing = await spaces.find(space_uri(authority, skey))
    if existing is not None:
        raise InvalidInput(f"the space {existing.uri} already exists", "SpaceAlreadyExists")
    return await spaces.create_hosted(skey, authority=authority)


def _check_configuration(read_policy, write_policy, app_access) -> None:
    for name, policy in (("readPolicy", read_policy), ("writePolicy", write_policy)):
        if _variant(policy, MEMBER_LIST) != MEMBER_LIST:
            raise InvalidInput(f"{name}: engram implements only {MEMBER_LIST}", "UnsupportedPolicy")
    if _variant(app_access, OPEN) != OPEN:
        raise InvalidInput(f"appAccess: engram implements only {OPEN}", "UnsupportedAppAccess")


def check_update(body: dict[str, Any]) -> None:
    """updateSpace: engram's one configuration is the only one it accepts, in either alpha's spelling
    (readPolicy/writePolicy/appAccess, or mintPolicy/managingApp/appAccessMode/appExceptions); an omitted
    field is left as it is. Nothing is stored: there is nothing else it could be."""
    _check_configuration(body.get("readPolicy"), body.get("writePolicy"), body.get("appAccess"))
    if body.get("mintPolicy", "member-list") != "member-list" or body.get("managingApp", "") != "":
        raise InvalidInput(
            "mintPolicy: engram implements only member-list, with no managing app", "UnsupportedPolicy"
        )
    if body.get("appAccessMode", "allow") != "allow" or body.get("appExceptions", []) != []:
        raise InvalidInput(
            "appAccessMode: engram admits every app (allow, no exceptions)", "UnsupportedAppAccess"
        )


def describe(space: Space) -> dict[str, Any]:
    """getSpace: the space and the one configuration engram implements."""
    member_list = {"$type": MEMBER_LIST}
    return {"uri": space.uri, "policy": member_list, "readPolicy": member_list, "writePolicy": member_list,
            "appAccess": {"$type": OPEN}}  # fmt: skip
