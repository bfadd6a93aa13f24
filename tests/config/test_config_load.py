# ruff: noqa: E501  (YAML fixtures read best on one line each)
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glider_cli.config.load import load_config, resolve_source
from glider_cli.config.profiles import bundled_profiles, profiles_dir
from glider_cli.errors import ConfigError, ProfileError
from glider_cli.router import Router


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_bundled_profiles_listed_and_load() -> None:
    assert {"default", "pure-local"} <= set(bundled_profiles())
    for name in bundled_profiles():
        cfg = load_config(profile=name)
        assert cfg.source == f"<bundled:{name}>"


def test_profiles_dir_is_the_package_data_in_a_wheel_and_the_repo_s_when_editable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import resources

    import glider_cli.config.profiles as config_mod

    packaged = resources.files("glider_cli").joinpath("profiles")
    repo = Path(config_mod.__file__).resolve().parents[3] / "profiles"
    assert profiles_dir() == (Path(str(packaged)) if packaged.is_dir() else repo)
    installed = tmp_path / "site-packages" / "glider_cli"
    (installed / "profiles").mkdir(parents=True)
    monkeypatch.setattr(config_mod, "__file__", str(installed / "config" / "profiles.py"))
    assert profiles_dir() == installed / "profiles"


def test_default_profile_backends_and_settings() -> None:
    cfg = load_config()
    s = cfg.settings
    assert s.backends["ollama"].type == "ollama" and s.backends["ollama"].side == "local"
    assert s.backends["ollama"].base_url == "http://127.0.0.1:11434"
    assert s.backends["ollama"].model == "qwen2.5-coder:14b"
    assert (s.backends["origin"].type, s.backends["origin"].side) == ("origin", "cloud")
    assert s.fan_out_enabled is True
    assert s.context.max_events == 4096 and s.context.background.token_budget == 20000
    assert s.sticky.ttl_seconds == 900 and s.server.port == 8787
    assert s.sticky.title_wait_seconds == 0.3


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("60", "at most 10 seconds, got 60"), ("-1", "must not be negative"), ("soon", "must be a number")],
)
def test_a_bad_title_wait_names_file_line_and_key(tmp_path: Path, value: str, fragment: str) -> None:
    path = write(
        tmp_path, f"extends: default\nrouting:\n  sticky:\n    title_wait_seconds: {value}\n", "c.yaml"
    )
    with pytest.raises(ConfigError) as exc:
        load_config(config=str(path))
    message = str(exc.value)
    assert f"{path}:4" in message and "'routing.sticky.title_wait_seconds'" in message and fragment in message


def test_resolution_order(tmp_path: Path, glider_env: Path) -> None:
    explicit = write(tmp_path, "extends: pure-local\n", "explicit.yaml")
    env_file = write(tmp_path, "extends: default\n", "env.yaml")
    assert resolve_source(environ={"GLIDER_HOME": str(glider_env)}).profile == "default"
    glider_env.mkdir(parents=True, exist_ok=True)
    (glider_env / "config.yaml").write_text("extends: default\n")
    home = {"GLIDER_HOME": str(glider_env)}
    assert resolve_source(environ=home).path == glider_env / "config.yaml"
    both = {**home, "GLIDER_CONFIG": env_file}
    assert str(resolve_source(environ=both).path) == env_file
    assert resolve_source(profile="pure-local", environ=both).profile == "pure-local"
    assert str(resolve_source(config=explicit, profile="pure-local", environ=both).path) == explicit
    assert load_config(environ=both).source == env_file


def test_extends_overrides_disables_and_adds_rules(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
extends: default
routing:
  rules:
    - name: refactor_local
      enabled: false
    - name: large_context_cloud
      trigger: {type: context_size, operator: ">", value: 4000}
    - name: my_rule
      priority: 60
      trigger: {type: regex, pattern: "deploy"}
      action: {target: cloud}
server:
  port: 9999
""",
    )
    cfg = load_config(config=path)
    rules = {r.name: r for r in cfg.rules}
    assert rules["refactor_local"].enabled is False
    assert rules["refactor_local"].trigger.type == "script"  # the rest comes from the profile
    assert rules["large_context_cloud"].trigger.value == 4000
    assert rules["large_context_cloud"].priority == 10
    assert rules["my_rule"].priority == 60 and rules["my_rule"].file == path
    assert cfg.settings.server.port == 9999 and cfg.settings.server.host == "127.0.0.1"
    assert "ollama" in cfg.settings.backends


def test_script_paths_relative_to_naming_file(tmp_path: Path) -> None:
    sub = tmp_path / "conf"
    sub.mkdir()
    (sub / "s.star").write_text("def evaluate(request):\n    return None\n")
    path = write(
        sub,
        "routing:\n  rules:\n    - name: s\n      priority: 1\n      trigger: {type: script, file: s.star}\n"
        "      action: {target: cloud}\n",
    )
    cfg = load_config(config=path)
    assert cfg.rules[0].trigger.file == str(sub / "s.star")
    # The profile's own scripts resolve next to the profile, wherever the user file is.
    ext = load_config(config=write(tmp_path, "extends: default\n"))
    script = next(r for r in ext.rules if r.name == "swarm_fanout").trigger.file
    assert script is not None and script.endswith("profiles/scripts/swarm_fanout.star")


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("routng: {}\n", ["unknown section 'routng'", "did you mean 'routing'", ":1"]),
        (
            "routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: regexp, pattern: x}\n"
            "      action: {target: cloud}\n",
            ["rule 'r'", "unknown trigger type 'regexp'", "did you mean 'regex'", ":5"],
        ),
        (
            "routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: always}\n"
            "      action: {target: cloud, modle: x}\n",
            ["unknown key 'modle'", "did you mean 'model'", "key 'action.modle'"],
        ),
        (
            "routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: regex, pattern: '(?<=a)b'}\n"
            "      action: {target: cloud}\n",
            ["rule 'r'", "does not compile (RE2)"],
        ),
        (
            "routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: always}\n"
            "      action: {target: moon}\n",
            ["'moon' is not one of local, cloud"],
        ),
        (
            "routing:\n  rules:\n    - name: r\n      trigger: {type: always}\n      action: {target: cloud}\n",
            ["needs a priority"],
        ),
        (
            "routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: context_size, value: 3}\n"
            "      action: {target: cloud}\n",
            ["needs 'operator'"],
        ),
        (
            "routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: always}\n"
            "      action: {target: cloud, backend: nowhere}\n",
            ["backend 'nowhere' is not defined"],
        ),
        (
            "routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: always}\n"
            "      action: {target: local, strategy: fan_out}\n",
            ["fan_out needs orchestration.fan_out.enabled"],
        ),
        (
            "routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: script, file: missing.star}\n"
            "      action: {target: local}\n",
            ["missing.star", "cannot be read"],
        ),
        ("backends:\n  b: {type: openai, api_key_env: sk-abcdefghijklmnopqrstu}\n", ["not a literal key"]),
        (
            "backends:\n  b: {type: openai, headers: {Authorization: Bearer abcdefghijklmnop}}\n",
            ["literal API key"],
        ),
        ("context: {summary: {sources: [origin, moon]}}\n", ["'moon' is not one of"]),
        ("server: {port: 70000}\n", ["TCP port"]),
        ("extends: defualt\n", ["no bundled profile 'defualt'", "did you mean 'default'"]),
        ("routing: [1, 2]\n", ["must be a mapping"]),
        ("routing:\n  rules: [\n", ["not valid YAML"]),
    ],
)
def test_errors_name_file_rule_key(tmp_path: Path, text: str, fragments: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_config(config=path)
    message = str(exc.value)
    assert path in message
    for fragment in fragments:
        assert fragment in message
    assert "abcdefghijklmnop" not in message  # secrets are never echoed


def test_broken_config_never_half_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "routing:\n  rules:\n    - name: good\n      priority: 1\n      trigger: {type: always}\n"
        "      action: {target: cloud}\n    - name: bad\n      priority: 2\n      trigger: {type: nope}\n"
        "      action: {target: cloud}\nserver: {port: -1}\n",
    )
    with pytest.raises(ConfigError) as exc:
        load_config(config=path)
    assert exc.value.hint is not None and "1 more problem" in exc.value.hint


def test_missing_config_file_and_unknown_profile(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="does not exist"):
        load_config(config=str(tmp_path / "nope.yaml"))
    with pytest.raises(ProfileError, match=r"no bundled profile 'pure_local'.*did you mean 'pure-local'"):
        load_config(profile="pure_local")


def test_timeouts_and_fallbacks(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
backends:
  a: {type: openai, base_url: "http://x", timeout: 30, fallback: b}
  b: {type: anthropic, timeout: {connect: 2, read: 100}, fallback: none}
""",
    )
    cfg = load_config(config=path)
    assert cfg.settings.backends["a"].timeout.read == 30 and cfg.settings.backends["a"].timeout.connect == 30
    assert cfg.settings.backends["a"].fallback == "b"
    assert cfg.settings.backends["b"].timeout.connect == 2 and cfg.settings.backends["b"].timeout.read == 100
    assert cfg.settings.backends["b"].timeout.write == 60  # phases not given keep their defaults
    assert cfg.default_backend("cloud") == "a" and cfg.default_backend("local") is None


def _yaml_values() -> st.SearchStrategy[object]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-5, 70000)
        | st.text(max_size=8)
        | st.sampled_from(
            [
                "always",
                "regex",
                "explicit",
                "script",
                "context_size",
                "local",
                "cloud",
                ">",
                "fan_out",
                "origin",
            ]
        )
    )
    return st.recursive(
        scalars,
        lambda kids: (
            st.lists(kids, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "name",
                        "priority",
                        "trigger",
                        "type",
                        "action",
                        "target",
                        "rules",
                        "enabled",
                        "pattern",
                        "commands",
                        "operator",
                        "value",
                        "file",
                        "backend",
                        "strategy",
                        "fallback",
                        "timeout",
                        "x",
                    ]
                ),
                kids,
                max_size=4,
            )
        ),
        max_leaves=15,
    )


sections = st.dictionaries(
    st.sampled_from(
        [
            "extends",
            "routing",
            "orchestration",
            "backends",
            "transform",
            "context",
            "server",
            "delegate",
            "bogus",
        ]
    ),
    _yaml_values(),
    max_size=4,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=sections)
def test_any_document_loads_or_gives_a_config_error(tmp_path: Path, doc: dict[str, object]) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump(doc))
    try:
        cfg = load_config(config=str(path))
    except ConfigError as exc:
        assert str(path) in str(exc) or "bundled profile" in str(exc)
        return
    Router(cfg)


def test_a_literal_key_is_rejected_under_any_key(tmp_path: Path) -> None:
    path = write(tmp_path, "delegate:\n  codex: {args: [--token, 'sk-ant-abcdefghijklmnopqrstuvwxyz']}\n")
    with pytest.raises(ConfigError) as exc:
        load_config(config=path)
    assert "delegate.codex.args[1]" in str(exc.value) and "abcdefghijklmnop" not in str(exc.value)


def test_non_utf8_files_are_config_errors(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("server: {host: caf\xe9}\n".encode("latin-1"))
    with pytest.raises(ProfileError, match="not UTF-8"):
        load_config(config=str(bad))
    (tmp_path / "s.star").write_bytes(b"# caf\xe9\ndef evaluate(r):\n    return None\n")
    path = write(
        tmp_path,
        "routing:\n  rules:\n    - {name: s, priority: 1, trigger: {type: script, file: s.star}, action: {target: cloud}}\n",
    )
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(config=path)


def test_alias_bombs_are_stopped(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 10)]
    with pytest.raises(ConfigError, match="aliases"):
        load_config(config=write(tmp_path, "\n".join(lines) + "\n"))


def test_tool_followup_names_a_tool_or_a_tool_and_its_subagent_type(tmp_path: Path) -> None:
    from glider_cli.config.load import check_config

    path = tmp_path / "c.yaml"
    path.write_text(
        "extends: default\nrouting:\n  tool_followup:\n"
        "    allowlist: [Agent:Explore, Bash]\n    denylist: ['Agent:', 'Task:a:b', 'two words']\n"
    )
    loaded, issues = check_config(config=str(path))
    bad = [i for i in issues if i.key == "routing.tool_followup.denylist"]
    assert len(bad) == 3 and all("Agent:Explore" in i.message for i in bad)
    assert loaded.settings.tool_followup.allowlist == ("Agent:Explore", "Bash")
