"""`telemetry:`: off by default, what the section and the standard OpenTelemetry variables say (and
which wins), and a bad value refused by the loader and `glider lint` with the file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from glider_cli.cli import app
from glider_cli.config.load import load_config
from glider_cli.config.telemetry import effective
from glider_cli.errors import ConfigError


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(f"extends: default\ntelemetry:\n{body}", encoding="utf-8")
    return path


def test_off_by_default_and_without_an_endpoint_in_the_environment() -> None:
    settings = load_config(profile="default").settings.telemetry
    assert effective(settings, {}).on is False
    assert effective(settings, {"OTEL_SERVICE_NAME": "x"}).on is False


def test_the_section_turns_it_on_with_its_values(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "  enabled: true\n  endpoint: http://127.0.0.1:6006/\n  service_name: laptops\n"
        "  resource: {team: payments, person: ana}\n  sample_ratio: 0.25\n  capture_content: true\n",
    )
    t = effective(load_config(config=str(path)).settings.telemetry, {})
    assert t.on and t.endpoint == "http://127.0.0.1:6006" and t.protocol == "http/protobuf"
    assert t.service_name == "laptops" and dict(t.resource) == {"team": "payments", "person": "ana"}
    assert t.sample_ratio == 0.25 and t.capture_content is True
    assert t.to_dict()["endpoint"] == "http://127.0.0.1:6006"


def test_the_standard_variables_turn_it_on_and_win_over_the_section(tmp_path: Path) -> None:
    default = load_config(profile="default").settings.telemetry
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
        "OTEL_SERVICE_NAME": "glider-ana",
        "OTEL_RESOURCE_ATTRIBUTES": "team=platform,project=glider%20rollout,broken",
        "OTEL_TRACES_SAMPLER_ARG": "0.5",
    }
    t = effective(default, env)
    assert t.on and t.endpoint == "http://collector:4318" and t.service_name == "glider-ana"
    assert dict(t.resource) == {"team": "platform", "project": "glider rollout"}
    assert t.sample_ratio == 0.5
    path = _write(tmp_path, "  enabled: false\n  resource: {team: payments, person: ana}\n")
    written = load_config(config=str(path)).settings.telemetry
    assert effective(written, env).on is False  # `enabled: false` keeps it off
    assert dict(effective(written, {**env, "OTEL_SDK_DISABLED": "x"}).resource)["person"] == "ana"
    on = _write(tmp_path, "  enabled: true\n")
    assert (
        effective(load_config(config=str(on)).settings.telemetry, {"OTEL_SDK_DISABLED": "true"}).on is False
    )
    grpc = effective(
        default, {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "x"}
    )
    assert grpc.on and grpc.protocol == "grpc" and grpc.endpoint == "http://localhost:4317"


BAD = [
    ("  enabled: yes please\n", "telemetry.enabled", "true or false"),
    ("  endpoint: collector:4318\n", "telemetry.endpoint", "http:// or https://"),
    ("  protocol: thrift\n", "telemetry.protocol", "not one of http/protobuf, grpc"),
    ("  sample_ratio: 2\n", "telemetry.sample_ratio", "between 0 and 1"),
    ("  max_queue_size: 0\n", "telemetry.max_queue_size", "at least 1"),
    ("  capture_contents: true\n", "telemetry.capture_contents", "did you mean 'capture_content'"),
    ("  resource: {team: [a]}\n", "telemetry.resource", "mapping of strings"),
]


@pytest.mark.parametrize(("body", "key", "said"), BAD)
def test_a_bad_value_names_the_file_line_and_key(tmp_path: Path, body: str, key: str, said: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(ConfigError) as caught:
        load_config(config=str(path))
    err = caught.value
    assert err.key == key and said in err.message, (err.key, err.message)
    assert err.file == str(path) and err.line == 3
    result = CliRunner().invoke(app, ["lint", "--config", str(path)])
    assert result.exit_code != 0 and key in result.output
