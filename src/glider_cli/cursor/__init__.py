"""Glider's intercepting proxy for Cursor (`glider serve --cursor-port`): the certificate authority
(`ca`), the CONNECT front door (`front`), the HTTP/1.1 exchange on an intercepted host (`exchange`),
the relay to Cursor's servers (`upstream`) and the routing adapter onto the request pipeline
(`routing`). Nothing here is imported unless `cursor.port` is set."""
