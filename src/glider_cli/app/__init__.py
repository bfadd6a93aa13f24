"""The use cases the CLI and the HTTP API share: `explain`, `lint`, `replay`.

They read files and stdin, load the config and call the pure core (`router`, `turns`, `protocol`);
`commands/` and `server/` only turn their results into terminal output or HTTP replies.
"""
