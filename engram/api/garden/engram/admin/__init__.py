"""garden.engram.admin.*: the operator's remote admin procedures (DID-signed, see engram.api.admin_auth).
Each handler calls the same engram.service functions as the matching `engram` CLI command."""
