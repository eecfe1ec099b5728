"""A generic, lexicon-driven XRPC runtime on aiohttp. It knows nothing about memories."""
