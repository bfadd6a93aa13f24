"""Helpers for router tests: build requests and configs from short descriptions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from glider_cli.config.load import load_config
from glider_cli.config.model import Config
from glider_cli.domain import ChatRequest
from glider_cli.protocol.parse import parse_request

BASE = """
backends:
  local1: {type: ollama, base_url: "http://127.0.0.1:11434", model: m-local}
  cloud1: {type: anthropic, base_url: "https://api.anthropic.com", api_key_env: ANTHROPIC_API_KEY}
routing:
  task_classifier: {enabled: false}
"""


def message(
    text: str, *, tools: bool = False, history: list[dict[str, Any]] | None = None, **extra: Any
) -> ChatRequest:
    body: dict[str, Any] = {
        "model": "client-model",
        "messages": [*(history or []), {"role": "user", "content": text}],
    }
    if tools:
        body["tools"] = [{"name": "Bash", "input_schema": {"type": "object"}}]
    body.update(extra)
    return parse_request("anthropic", body)


def write_config(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config_with_rules(tmp_path: Path, rules_yaml: str, *, extra: str = "") -> Config:
    """A config with BASE's backends, the classifier off, and these rules (YAML list items)."""
    indented = "\n".join("    " + line for line in rules_yaml.strip("\n").splitlines())
    text = BASE + "  rules:\n" + indented + "\n" + extra
    return load_config(config=str(write_config(tmp_path, text)))
