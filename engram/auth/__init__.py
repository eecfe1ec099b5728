"""Identity and authentication: did:key/Multikey, JWS, DID resolution, space credentials, the atproto-space
RFC 9421 profile, service-auth JWTs, admin request signatures and engram's own signing key.

Everything that can reject a request raises ``engram.errors.NotAuthenticated`` with the error name of
docs/protocol.md (``InvalidToken``, ``BadSpaceSignature``, ``BadJwt``...), or ``NotAllowed`` for a signed
admin request from a DID not on the allow-list.
"""
