"""The ways in: the `kenning` command (entry -> client of a warm server, or cli with cli_*), the MCP
server (mcp_server), and `kenning serve` (http_app: JSON API, web page, MCP over HTTP), all thin shells
over kenning.api sharing one warm Service (service) and one way of showing results (render)."""
