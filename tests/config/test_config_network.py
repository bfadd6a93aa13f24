"""The network keys: `server.trust_env`, a backend's `proxy` and `ca_file` (config.sections)."""

from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.config.load import check_config, load_config
from glider_cli.errors import ConfigError


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def _ca(path: Path) -> Path:
    import trustme

    trustme.CA().cert_pem.write_to_path(str(path))
    return path


def test_defaults_are_off_and_empty() -> None:
    cfg = load_config(profile="default")
    assert cfg.settings.server.trust_env is False
    assert all(b.proxy is None and b.ca_file is None for b in cfg.settings.backends.values())


def test_trust_env_proxy_and_ca_file_load(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    ca = _ca(tmp_path / "certs" / "corp.pem")
    path = write(
        tmp_path,
        "server: {trust_env: true}\n"
        "backends:\n"
        "  a: {type: anthropic, proxy: 'http://proxy.corp.example:3128', ca_file: certs/corp.pem}\n"
        "  b: {type: openai, base_url: 'https://llm.corp.example/v1', proxy: 'https://user@proxy.corp.example'}\n",
    )
    s = load_config(config=path).settings
    assert s.server.trust_env is True
    assert s.backends["a"].proxy == "http://proxy.corp.example:3128"
    assert s.backends["a"].ca_file == str(ca)  # relative to the config file's folder
    assert s.backends["b"].proxy == "https://user@proxy.corp.example"


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            "backends:\n  a: {type: anthropic, prxy: 'http://p:1'}\n",
            ["unknown key 'prxy'", "did you mean 'proxy'", "backends.a.prxy"],
        ),
        ("backends:\n  a: {type: anthropic, ca_fil: x.pem}\n", ["did you mean 'ca_file'"]),
        ("server: {trust_envv: true}\n", ["did you mean 'trust_env'"]),
        ("server: {trust_env: yes please}\n", ["server.trust_env", "true or false"]),
        (
            "backends:\n  a: {type: anthropic, ca_file: missing-ca.pem}\n",
            ["missing-ca.pem", "does not exist", "backends.a.ca_file"],
        ),
        (
            "backends:\n  a: {type: anthropic, proxy: 'socks5://p:1080'}\n",
            ["backends.a.proxy", "http:// or https://"],
        ),
        ("backends:\n  a: {type: anthropic, proxy: 'http://'}\n", ["with a host"]),
        ("backends:\n  a: {type: anthropic, proxy: 'http://p:port'}\n", ["is not a URL"]),
        (
            "backends:\n  a: {type: anthropic, proxy: 'http://corp:hunter2@p:3128'}\n",
            ["password does not belong", "HTTPS_PROXY"],
        ),
        (
            "backends:\n  a: {type: openai, base_url: 'http://127.0.0.1:8000/v1', proxy: 'http://p:1'}\n",
            ["loopback", "backends.a.proxy"],
        ),
        (
            "backends:\n  a: {type: openai, base_url: 'http://localhost:8000/v1', proxy: 'http://p:1'}\n",
            ["loopback"],
        ),
        ("backends:\n  a: {type: ollama, proxy: 'http://p:1'}\n", ["loopback"]),
    ],
)
def test_errors_name_the_key_and_file(tmp_path: Path, text: str, fragments: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_config(config=path)
    message = f"{exc.value} {exc.value.key} {exc.value.hint}"
    assert path in message
    for fragment in fragments:
        assert fragment in message
    assert "hunter2" not in message


def test_a_ca_file_that_is_not_pem_is_refused(tmp_path: Path) -> None:
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    path = write(tmp_path, "backends:\n  a: {type: anthropic, ca_file: junk.pem}\n")
    with pytest.raises(ConfigError, match="not a PEM file of CA certificates") as exc:
        load_config(config=path)
    assert exc.value.key == "backends.a.ca_file" and str(tmp_path / "junk.pem") in str(exc.value)


def test_a_ca_file_on_a_plain_http_backend_is_a_lint_warning(tmp_path: Path) -> None:
    _ca(tmp_path / "ca.pem")
    path = write(
        tmp_path, "backends:\n  a: {type: openai, base_url: 'http://gpu.lan:8000/v1', ca_file: ca.pem}\n"
    )
    _, issues = check_config(config=path)
    warnings = [i for i in issues if i.key == "backends.a.ca_file"]
    assert [i.severity for i in warnings] == ["warning"] and "has no effect" in warnings[0].message
    load_config(config=path)  # a warning does not stop the config from loading
