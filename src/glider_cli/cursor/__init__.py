"""Glider's intercepting proxy for Cursor (`glider serve --cursor-port`): the certificate authority
(`ca`), the CONNECT front door (`front`), the HTTP/1.1 exchange on an intercepted host (`exchange`),
the relay to Cursor's servers (`upstream`) and the adapter onto the request engine
(`adapter`). Nothing here is imported unless `cursor.port` is set."""
