"""Backend registry: defaults, keys from env-var names, fallback rules, and nothing secret in describe()."""

from __future__ import annotations

import json

import pytest

from glider_cli.backends.registry import BackendRegistry, model_for
from glider_cli.config.settings import BackendSettings
from glider_cli.errors import ConfigError


def _reg(*bs: BackendSettings, environ: dict[str, str] | None = None, **kw: object) -> BackendRegistry:
    return BackendRegistry({b.name: b for b in bs}, environ or {}, **kw)  # type: ignore[arg-type]


LOCAL = BackendSettings(name="ollama", type="ollama", side="local", model="qwen")
CLOUD = BackendSettings(name="claude", type="anthropic", side="cloud", api_key_env="MY_ANTHROPIC_KEY")
ORIGIN = BackendSettings(name="origin", type="origin", side="cloud", api_key_env="MY_ANTHROPIC_KEY")


def test_defaults_per_kind_and_side() -> None:
    reg = _reg(LOCAL, CLOUD)
    assert reg.get("ollama").base_url == "http://127.0.0.1:11434"
    assert reg.get("ollama").wire == "ollama"
    assert reg.get("claude").base_url == "https://api.anthropic.com"
    assert reg.default_for("local") is reg.get("ollama")
    assert reg.default_for("cloud") is reg.get("claude")
    assert reg.choose("cloud", None).name == "claude"
    assert reg.choose("local", "claude").name == "claude"


def test_explicit_default_wins_over_config_order() -> None:
    reg = _reg(LOCAL, ORIGIN, CLOUD, defaults={"cloud": "claude", "local": None})
    assert reg.default_for("cloud").name == "claude"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="not configured"):
        _reg(LOCAL, defaults={"cloud": "nope"})


def test_key_comes_from_the_named_variable_and_is_never_described() -> None:
    reg = _reg(CLOUD, ORIGIN, environ={"MY_ANTHROPIC_KEY": "sk-ant-secret-value"})
    claude = reg.get("claude")
    assert claude.auth_headers() == {"x-api-key": "sk-ant-secret-value"}
    assert "sk-ant-secret-value" not in json.dumps(reg.describe())
    assert "sk-ant-secret-value" not in repr(claude)
    # origin forwards the client's own credentials and never gets a key of its own.
    assert reg.get("origin").auth_headers() == {}


def test_openai_kind_uses_bearer() -> None:
    b = BackendSettings(
        name="vllm", type="openai", side="local", base_url="http://h:8000/v1", api_key_env="K"
    )
    reg = _reg(b, environ={"K": "tok"})
    assert reg.get("vllm").auth_headers() == {"authorization": "Bearer tok"}
    assert reg.get("vllm").url("anthropic", "/v1/chat/completions") == "http://h:8000/v1/chat/completions"


def test_origin_url_follows_the_client_protocol() -> None:
    reg = _reg(ORIGIN)
    o = reg.get("origin")
    assert o.url("anthropic", "/v1/messages") == "https://api.anthropic.com/v1/messages"
    assert o.url("openai_responses", "/v1/responses") == "https://api.openai.com/v1/responses"


def test_fallback_rules() -> None:
    reg = _reg(LOCAL, CLOUD)
    assert reg.fallback_for(reg.get("ollama")).name == "claude"  # type: ignore[union-attr]
    assert reg.fallback_for(reg.get("claude")) is None
    assert reg.fallback_for(reg.get("ollama"), "none") is None
    no_fb = BackendSettings(name="ollama", type="ollama", side="local", fallback="none")
    reg2 = _reg(no_fb, CLOUD)
    assert reg2.fallback_for(reg2.get("ollama")) is None
    # the rule's fallback wins over the backend's
    assert reg2.fallback_for(reg2.get("ollama"), "claude").name == "claude"  # type: ignore[union-attr]


def test_bad_config_is_reported() -> None:
    with pytest.raises(ConfigError, match="unknown backend type"):
        _reg(BackendSettings(name="x", type="gemini", side="cloud"))
    with pytest.raises(ConfigError, match="fallback names unknown backend"):
        _reg(BackendSettings(name="x", type="ollama", side="local", fallback="ghost"))
    with pytest.raises(ConfigError, match="unknown backend 'ghost'"):
        _reg(LOCAL).get("ghost")


def test_model_for_the_decided_backend_takes_the_decision_then_its_own_then_the_clients() -> None:
    reg = _reg(LOCAL, CLOUD, ORIGIN, BackendSettings(name="vllm", type="openai", side="local"))
    ollama, vllm = reg.get("ollama"), reg.get("vllm")
    assert model_for(ollama, "ollama", "qwen-big", None, "claude-x") == "qwen-big"
    # A vLLM LoRA adapter is addressed by its name, and wins over the decided model.
    assert model_for(ollama, "ollama", "qwen-big", "my-lora", "claude-x") == "my-lora"
    assert model_for(ollama, "ollama", None, None, "claude-x") == "qwen"
    assert model_for(vllm, "vllm", None, None, "claude-x") == "claude-x"


def test_model_for_a_fallback_ignores_the_decision() -> None:
    claude_own = BackendSettings(name="claude2", type="anthropic", side="cloud", model="claude-fallback")
    reg = _reg(LOCAL, CLOUD, ORIGIN, claude_own)
    # The local decision's model never reaches the cloud (the real API answers it with a 404).
    for cloud in ("origin", "claude"):
        assert model_for(reg.get(cloud), "ollama", "qwen2.5-coder:14b", "lora", "claude-x") == "claude-x"
    assert model_for(reg.get("claude2"), "ollama", "qwen2.5-coder:14b", None, "claude-x") == "claude-fallback"
    # local -> local: the second local backend serves its own model.
    assert model_for(reg.get("ollama"), "vllm", "coder", "lora", "claude-x") == "qwen"
    # A decision that names no backend gives its model to none.
    assert model_for(reg.get("ollama"), None, "coder", None, "claude-x") == "qwen"
