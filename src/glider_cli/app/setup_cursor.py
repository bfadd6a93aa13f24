"""`glider setup cursor` and `glider setup cursor-agent`: send Cursor's agent traffic through Glider's
Cursor proxy (`glider serve --cursor-port`), which routes it on whichever transport Cursor picks
(HTTP/2 `Run`, or HTTP/1.1 `RunSSE` + `BidiAppend`).

- cursor (the IDE): in the IDE's user `settings.json` (Linux `~/.config/Cursor/User`, macOS
  `~/Library/Application Support/Cursor/User`, Windows `%APPDATA%/Cursor/User`) the VS Code keys
  `http.proxy` (the proxy's URL) and `http.proxySupport: "override"`. The CA is not the IDE's
  setting: the notes say how to start Cursor with `NODE_EXTRA_CA_CERTS=<GLIDER_HOME>/cursor/ca.pem`
  and print this OS's trust step (not performed).
- cursor-agent (the CLI): the environment it needs printed as a shell snippet: `HTTPS_PROXY`,
  `NODE_USE_ENV_PROXY=1` (Node honours proxy variables only then) and `NODE_EXTRA_CA_CERTS`.
- `--http1` (`Options.cursor_http1`), an option only (a build whose HTTP/2 does not get through a
  network): also Cursor's `cursor.general.disableHttp2: true` (the IDE) or `network.useHttp1ForAgent:
  true` in `~/.cursor/cli-config.json` (cursor-agent; `$CURSOR_CONFIG_DIR` moves it).
Same conventions as every `glider setup` target: a key set to another value is never overwritten,
`--undo` removes exactly what was written. No key, token or certificate is written anywhere.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from glider_cli.app.setup_plan import Manifest, Options, Plan, plan_set


def ide_settings(o: Options) -> Path:
    if o.platform == "darwin":
        return o.home / "Library" / "Application Support" / "Cursor" / "User" / "settings.json"
    if o.platform.startswith("win"):
        return o.home / "AppData" / "Roaming" / "Cursor" / "User" / "settings.json"
    return o.home / ".config" / "Cursor" / "User" / "settings.json"


def ca_path(o: Options) -> Path:
    return (o.glider_home or o.home / ".glider") / "cursor" / "ca.pem"


def trust_step(o: Options, ca: Path) -> str:
    q = shlex.quote(str(ca))
    if o.platform == "darwin":
        return f"security add-trusted-cert -r trustRoot -k ~/Library/Keychains/login.keychain-db {q}"
    if o.platform.startswith("win"):
        return f'certutil -user -addstore Root "{ca}"'
    return f"sudo cp {q} /usr/local/share/ca-certificates/glider-cursor.crt && sudo update-ca-certificates"


def plan_cursor(p: Plan, o: Options, manifest: Manifest) -> None:
    ca = ca_path(o)
    port = o.cursor_proxy.rsplit(":", 1)[-1].rstrip("/")
    # True whether or not it runs already (setup does not ask): what must listen there, and how to start it.
    start = (
        f"Cursor's traffic goes to Glider's Cursor proxy at {o.cursor_proxy}: `glider serve --cursor-port "
        f"{port}` runs it, if it is not running yet (its CA is made at its first start)."
    )
    env = [
        f"export HTTPS_PROXY={shlex.quote(o.cursor_proxy)}",
        "export NODE_USE_ENV_PROXY=1",
        f"export NODE_EXTRA_CA_CERTS={shlex.quote(str(ca))}",
    ]
    if p.client == "cursor":
        path = ide_settings(o)
        plan_set(p, path, "http.proxy", o.cursor_proxy, manifest, flat=True)
        plan_set(p, path, "http.proxySupport", "override", manifest, flat=True)
        if o.cursor_http1:
            plan_set(p, path, "cursor.general.disableHttp2", True, manifest, flat=True)
        p.notes.extend(
            [
                start,
                "Quit Cursor fully, then start it with the CA in its environment (read only at launch):",
                f"  NODE_EXTRA_CA_CERTS={shlex.quote(str(ca))} cursor",
                "To trust the CA system-wide instead (optional, not done by Glider):",
                f"  {trust_step(o, ca)}",
            ]
        )
        return
    if o.cursor_http1:
        config_dir = o.cursor_config_dir or o.home / ".cursor"
        plan_set(p, config_dir / "cli-config.json", "network.useHttp1ForAgent", True, manifest)
    p.notes.extend([start, "Run cursor-agent with this environment:", *(f"  {line}" for line in env)])
