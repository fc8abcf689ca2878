"""A one-tool MCP server on the SDK's high-level `MCPServer`, over the older HTTP+SSE transport:
`python shout_sse.py PORT` serves http://127.0.0.1:PORT/sse."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("shout")


@server.tool()
def shout(word: str) -> str:
    """Use to shout a word: it comes back in capitals."""
    return word.upper()


if __name__ == "__main__":
    server.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
