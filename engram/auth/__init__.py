"""Identity and authentication: did:key/Multikey, JWS, DID resolution, space credentials, the atproto-space
RFC 9421 profile, service-auth JWTs, admin request signatures and engram's own signing key.

Everything that can reject a request raises ``engram.xrpc.errors.AuthRequiredError`` (401) with the error
name of DESIGN §4, or ``ForbiddenError`` (403) for a signed admin request from a DID not on the allow-list.
"""
