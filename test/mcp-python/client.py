"""An independent MCP client (Python's `mcp` package) against Gatehouse's /mcp endpoint.

Usage: python3 client.py URL TOKEN TOOL ARGUMENTS_JSON
Connects over Streamable HTTP with the pod's token, initializes, lists the tools, calls TOOL with
ARGUMENTS_JSON and prints one JSON line: the negotiated protocol revision, the tool names, and the
call's isError and text. test/e2e/mcp.test.ts runs it when `mcp` is importable.
"""

import asyncio
import json
import sys

from mcp import ClientSession


def transport(url: str, token: str):
    headers = {"Authorization": f"Bearer {token}"}
    try:
        # Newer releases take an httpx client; older ones take the headers.
        import httpx
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(url, http_client=httpx.AsyncClient(headers=headers))
    except ImportError:
        from mcp.client.streamable_http import streamablehttp_client

        return streamablehttp_client(url, headers=headers)


async def main(url: str, token: str, tool: str, arguments: dict) -> None:
    async with transport(url, token) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            listed = await session.list_tools()
            result = await session.call_tool(tool, arguments)
            text = "".join(getattr(block, "text", "") for block in result.content)
            print(
                json.dumps(
                    {
                        "protocolVersion": str(initialized.protocolVersion),
                        "tools": sorted(t.name for t in listed.tools),
                        "isError": bool(result.isError),
                        "text": text,
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))
