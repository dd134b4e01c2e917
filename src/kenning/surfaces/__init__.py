"""The ways in: the `kenning` command (cli, cli_glossary). Each is a thin shell over kenning.api; the
MCP and HTTP surfaces join them here."""
