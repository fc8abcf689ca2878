"""An MCP server that breaks after the handshake, on the SDK's low-level `Server` (so what it
sends is exactly as written here). Run: `python broken.py MODE`, MODE one of:

- `error`: answers tools/list with a JSON-RPC error;
- `schema`: lists a tool whose inputSchema is not an object (the SDK's client refuses it;
  sent raw past the server's own check, as a server on another SDK could send it);
- `name`: lists a tool whose name is not a string (refused too);
- `exit`: exits when it is asked for its tools, right after the handshake;
- `dies`: lists `die`, which ends the process while it is called, and `echo`;
- `relist`: lists `grow` and `echo`; `grow` says the list changed, and every later
  tools/list is a JSON-RPC error;
- `big`: lists `big`, which returns `chars` characters (default 40,000,000) of numbered lines,
  and `echo`."""

from __future__ import annotations

import asyncio
import os
import sys

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError

MODE = sys.argv[1] if len(sys.argv) > 1 else "error"
ANY_WORD = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
NOTHING = {"type": "object", "properties": {}}
SECRET_CAUSE = "the catalogue database is locked"
BUS = InMemorySubscriptionBus()
listed = 0


#: The tool lists the SDK's client refuses, as sent on the wire.
RAW = {
    "schema": [{"name": "bad_schema", "inputSchema": "not an object"}],
    "name": [{"name": 12345, "inputSchema": NOTHING}],
}


def tool(name: str, schema: dict = NOTHING) -> types.Tool:
    """A tool marked read-only, so that `serve --mcp` offers it by default."""
    read_only = types.ToolAnnotations(read_only_hint=True)
    return types.Tool(
        name=name, description=f"The {name} tool.", input_schema=schema, annotations=read_only
    )


def lines(chars: int) -> str:
    """About `chars` characters of numbered lines."""
    line = "line {:>9} of a very long result, padded to be long enough\n"
    count = max(1, chars // len(line.format(0)))
    return "".join(line.format(i) for i in range(count))


async def list_tools(ctx, params):
    global listed
    listed += 1
    if MODE == "exit":
        os._exit(0)
    if MODE == "error" or (MODE == "relist" and listed > 1):
        raise MCPError(-32603, SECRET_CAUSE)
    tools = {
        "dies": [tool("die"), tool("echo", ANY_WORD)],
        "relist": [tool("grow"), tool("echo", ANY_WORD)],
        "big": [
            tool("big", {"type": "object", "properties": {"chars": {"type": "integer"}}}),
            tool("echo", ANY_WORD),
        ],
    }.get(MODE, [tool("echo", ANY_WORD)])
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx, params):
    name, args = params.name, params.arguments or {}
    if name == "die":
        os._exit(1)
    if name == "grow":
        await BUS.publish(ToolsListChanged())
        return types.CallToolResult(content=[types.TextContent(text="grown")])
    if name == "big":
        text = lines(int(args.get("chars", 40_000_000)))
        return types.CallToolResult(content=[types.TextContent(text=text)])
    return types.CallToolResult(content=[types.TextContent(text=f"echo: {args.get('word')}")])


async def raw_listing(ctx, call_next):
    """A tools/list answered past the server's own check of what it sends (a middleware that
    answers without `call_next` owns its result)."""
    if ctx.method == "tools/list" and MODE in RAW:
        tools = [{"description": "refused", **t} for t in RAW[MODE]]
        return {"tools": tools, "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
    return await call_next(ctx)


server = Server(
    "broken",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(BUS),
)

server.middleware.append(raw_listing)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
