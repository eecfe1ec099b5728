"""engram's memories as MCP tools (docs/mcp.md).

`operations.py` does the work over the service layer, `access.py` says what a credential may touch,
`server.py` declares the tools, resource and prompt on the SDK's MCPServer (`schemas.py`: the tools'
answer types); transports: `engram mcp` (engram/cli/mcp.py, stdio; `remote.py` when it forwards to a
server) and `http.py` (/mcp on the running server, through `asgi_bridge.py`, with its OAuth endpoints,
`origins.py`'s Host/Origin checks and `sessions.py`'s sessions in the store).
"""
