"""Small aiohttp apps and servers that stand in for the network edge."""
