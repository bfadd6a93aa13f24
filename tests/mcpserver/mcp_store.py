"""A real store for the MCP tests: two workspaces' turns recorded by a real `glider serve` session (in
front of the fake upstream), and both workspaces indexed by `glider context index-tree` (`build`).

alpha: two turns (`/cloud` with an API key in it, `/local`), files lexer.py and parser.py;
beta: one `/cloud` turn, file zebra.py. conftest.py builds it once per module (`recorded`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from fake_upstream import FakeUpstream
from serve_process import ServeProcess

SECRET = "sk-ant-api03-" + "Q7xv" * 20
ASKS = {
    "alpha": (
        "/cloud fix the tokenizer in lexer.py, my key is " + SECRET,
        "/local explain the parser module",
    ),
    "beta": ("/cloud paint the zebra stripes",),
}


class Recorded:
    def __init__(self, root: Path, home: Path, cfg: Path, env: dict[str, str]) -> None:
        self.root = root
        self.home = home
        self.cfg = cfg
        self.env = env
        self.alpha = root / "alpha"
        self.beta = root / "beta"
        self.turns: dict[str, list[str]] = {"alpha": [], "beta": []}

    def glider(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "glider_cli", *args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )


def config_for(fake: FakeUpstream, path: Path) -> Path:
    path.write_text(
        "extends: default\nbackends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n",
        encoding="utf-8",
    )
    return path


def send(url: str, ws: Path, text: str) -> None:
    body = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": text}]}
    r = httpx.post(url + "/v1/messages", json=body, headers={"x-glider-workspace": str(ws)}, timeout=60)
    assert r.status_code == 200, r.text


def build(root: Path) -> Recorded:
    home = root / "glider-home"
    with FakeUpstream(models=("claude-x",), ollama_models=("qwen-local",)) as fake:
        cfg = config_for(fake, root / "glider.yaml")
        env = {**os.environ, "GLIDER_HOME": str(home)}
        env.pop("GLIDER_TOKEN", None)
        # The servers run in the workspaces: a relative PYTHONPATH (`src`) must still find this checkout.
        if env.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.pathsep.join(
                str(Path(p).absolute()) for p in env["PYTHONPATH"].split(os.pathsep)
            )
        rec = Recorded(root, home, cfg, env)
        for name, files in (("alpha", ("lexer.py", "parser.py")), ("beta", ("zebra.py",))):
            ws = root / name
            (ws / ".git").mkdir(parents=True)
            for f in files:
                stem = f.removesuffix(".py")
                (ws / f).write_text(f"def {stem}_main(text):\n    return text.split()\n", encoding="utf-8")
        with ServeProcess("-c", str(cfg), env=env) as served:
            for name, asks in ASKS.items():
                for text in asks:
                    send(served.url, root / name, text)
        for name in ("alpha", "beta"):
            rec.glider("context", "index-tree", str(root / name))
        from glider_cli.paths import Paths
        from glider_cli.store.context_store import ContextStore

        folds = ContextStore(Paths(home)).folds()
        for f in sorted(folds.values(), key=lambda f: f.first_id):
            rec.turns[Path(f.key("clone_path") or "?").name].append(f.turn)
        assert [len(rec.turns["alpha"]), len(rec.turns["beta"])] == [2, 1], rec.turns
        return rec
