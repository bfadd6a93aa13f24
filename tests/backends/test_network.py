"""backends.network: which way each origin goes (pure: backends, trust_env and an environ in, routes out)."""

from __future__ import annotations

import pytest

from glider_cli.backends.network import STRAIGHT, Route, no_proxy_matches, origin_of, redact, routes
from glider_cli.backends.registry import ORIGIN_BASE_URL, Backend
from glider_cli.config.backends import is_loopback_host
from glider_cli.errors import ConfigError

CORP = "http://proxy.corp.example:3128"


def _b(
    base_url: str | None,
    *,
    name: str = "b",
    kind: str = "anthropic",
    side: str = "cloud",
    proxy: str | None = None,
    ca: str | None = None,
) -> Backend:
    return Backend(name, kind, side, base_url, "anthropic", proxy=proxy, ca_file=ca)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("api.localhost", True),
        ("128.0.0.1", False),
        ("10.0.0.5", False),
        ("localhost.example.com", False),
        ("api.anthropic.com", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_trust_env_routes_cloud_backends_by_scheme() -> None:
    env = {"HTTPS_PROXY": CORP, "HTTP_PROXY": "http://plain.corp.example:8080"}
    plan = routes([_b("https://api.anthropic.com"), _b("http://gpu.corp.example:8000/v1", name="c")],
                  trust_env=True, environ=env)  # fmt: skip
    assert plan == {
        "https://api.anthropic.com": Route(CORP),
        "http://gpu.corp.example:8000": Route("http://plain.corp.example:8080"),
    }


def test_without_trust_env_or_on_the_local_side_the_environment_is_ignored() -> None:
    env = {"HTTPS_PROXY": CORP, "ALL_PROXY": CORP}
    assert routes([_b("https://api.anthropic.com")], trust_env=False, environ=env) == {
        "https://api.anthropic.com": STRAIGHT
    }
    lan = _b("https://gpu.lan.example:8443", side="local")
    assert routes([lan], trust_env=True, environ=env) == {"https://gpu.lan.example:8443": STRAIGHT}


def test_loopback_backends_never_use_the_environment() -> None:
    env = {"HTTPS_PROXY": CORP, "HTTP_PROXY": CORP, "ALL_PROXY": CORP}
    bases = ["http://127.0.0.1:11434", "http://localhost:4000", "https://[::1]:8443", "http://127.0.0.2"]
    plan = routes([_b(u, name=f"b{i}") for i, u in enumerate(bases)], trust_env=True, environ=env)
    assert set(plan.values()) == {STRAIGHT}


def test_a_proxy_on_a_loopback_backend_is_refused() -> None:
    with pytest.raises(ConfigError, match="loopback") as err:
        routes([_b("http://127.0.0.1:11434", name="ollama", proxy=CORP)], trust_env=False, environ={})
    assert err.value.key == "backends.ollama.proxy"


def test_a_backends_own_proxy_wins_over_the_environment_and_no_proxy() -> None:
    env = {"HTTPS_PROXY": "http://other:1", "NO_PROXY": "api.anthropic.com"}
    plan = routes(
        [_b("https://api.anthropic.com", proxy=CORP, ca="/etc/corp.pem")], trust_env=True, environ=env
    )
    assert plan == {"https://api.anthropic.com": Route(CORP, "/etc/corp.pem")}


def test_lower_case_names_win_and_all_proxy_is_the_fallback() -> None:
    env = {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2", "ALL_PROXY": "http://all:3"}
    plan = routes([_b("https://a.example"), _b("http://b.example", name="c")], trust_env=True, environ=env)
    assert plan == {"https://a.example": Route("http://lower:1"), "http://b.example": Route("http://all:3")}


def test_a_value_without_a_scheme_is_http_and_socks_is_refused() -> None:
    plan = routes([_b("https://a.example")], trust_env=True, environ={"HTTPS_PROXY": "proxy.corp:3128"})
    assert plan == {"https://a.example": Route("http://proxy.corp:3128")}
    with pytest.raises(ConfigError, match=r"ALL_PROXY.*http:// and https://") as err:
        routes([_b("https://a.example")], trust_env=True, environ={"ALL_PROXY": "socks5://u:pw@s:1080"})
    assert "pw" not in str(err.value)


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "matches"),
    [
        ("*", "api.anthropic.com", 443, True),
        ("anthropic.com", "api.anthropic.com", 443, True),
        (".anthropic.com", "api.anthropic.com", 443, True),
        ("*.anthropic.com", "api.anthropic.com", 443, True),
        ("anthropic.com", "anthropic.com", 443, True),
        ("thropic.com", "api.anthropic.com", 443, False),
        ("openai.com, anthropic.com", "api.anthropic.com", 443, True),
        ("openai.com anthropic.com", "api.anthropic.com", 443, True),
        ("api.anthropic.com:443", "api.anthropic.com", 443, True),
        ("api.anthropic.com:8443", "api.anthropic.com", 443, False),
        ("10.0.0.0/8", "10.1.2.3", 80, True),
        ("10.0.0.0/8", "11.1.2.3", 80, False),
        ("10.1.2.3", "10.1.2.3", 80, True),
        ("[fd00::1]:8000", "fd00::1", 8000, True),
        ("fd00::/8", "fd00::1", 8000, True),
        ("", "api.anthropic.com", 443, False),
    ],
)
def test_no_proxy_forms(no_proxy: str, host: str, port: int, matches: bool) -> None:
    assert no_proxy_matches(no_proxy, host, port) is matches


def test_no_proxy_sends_a_matching_backend_straight() -> None:
    env = {"HTTPS_PROXY": CORP, "no_proxy": ".corp.example"}
    plan = routes([_b("https://llm.corp.example"), _b("https://api.anthropic.com", name="c")],
                  trust_env=True, environ=env)  # fmt: skip
    assert plan == {"https://llm.corp.example": STRAIGHT, "https://api.anthropic.com": Route(CORP)}


def test_origin_without_a_base_url_covers_every_default_origin() -> None:
    plan = routes([_b(None, kind="origin", proxy=CORP)], trust_env=False, environ={})
    assert set(plan) == set(ORIGIN_BASE_URL.values()) and set(plan.values()) == {Route(CORP)}


def test_two_backends_on_one_origin_must_agree() -> None:
    same = [_b("https://api.anthropic.com", name="a"), _b("https://api.anthropic.com/", name="c")]
    assert len(routes(same, trust_env=False, environ={})) == 1
    differ = [
        _b("https://api.anthropic.com", name="a"),
        _b("https://api.anthropic.com", name="c", proxy=CORP),
    ]
    with pytest.raises(ConfigError, match=r"'a' and 'c' both reach https://api\.anthropic\.com"):
        routes(differ, trust_env=False, environ={})


def test_origin_of_and_redact() -> None:
    assert origin_of("https://api.anthropic.com/v1/messages?beta=true") == "https://api.anthropic.com"
    assert origin_of("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert redact("http://corp:s3cret@proxy:3128") == "http://corp:***@proxy:3128"
    assert redact(CORP) == CORP
