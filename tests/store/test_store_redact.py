"""The one table of secret shapes (`redact.SHAPES`): every shape has examples here, each is redacted
in text, found by both fast paths, and kept off disk by the event writer, the continuity record and
`context export`; near misses stay as they are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from glider_cli.delegate import continuity
from glider_cli.delegate.entry import Entry
from glider_cli.paths import Paths
from glider_cli.store.eventlog.redact import (
    REDACTED,
    SHAPES,
    may_need_redaction,
    redact,
    redact_text,
    sensitive_name,
    text_may_need_redaction,
)
from glider_cli.store.eventlog.writer import EventWriter

# Well-known documentation examples and made-up values in each provider's shape; none is a live key.
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
# shape name -> [(text, secret that must be gone, text that must stay)]
EXAMPLES: dict[str, list[tuple[str, str, str]]] = {
    "pem-private-key": [
        (f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----", PEM_BODY, ""),
        (f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----", PEM_BODY, ""),
        (f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PEM_BODY}\n", PEM_BODY, ""),
        (  # a GCP service-account key file pasted as text
            '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
            f'{PEM_BODY}\\n-----END PRIVATE KEY-----\\n", "client_email": "x@p.iam.gserviceaccount.com"}}',
            PEM_BODY,
            '"client_email": "x@p.iam.gserviceaccount.com"',
        ),
    ],
    "gcp-private-key-id": [
        (
            '"private_key_id": "8f14e45fceea167a5a36dedd4bea2543c8f1a2b3"',
            "8f14e45fceea167a5a36dedd4bea2543c8f1a2b3",
            '"private_key_id": "',
        )
    ],
    "anthropic-openai-key": [
        ("key sk-ant-api03-AbCdEfGhIjKlMnOp then", "sk-ant-api03-AbCdEfGhIjKlMnOp", "key "),
        ("OPENAI_API_KEY=sk-proj-abcdefgh12345678", "sk-proj-abcdefgh12345678", "OPENAI_API_KEY="),
    ],
    "stripe-key": [
        ("stripe sk_live_51Habcdefghijklmnop", "sk_live_51Habcdefghijklmnop", "stripe "),
        ("rk_test_4eC39HqLyjWDarjtT1zdp7dc", "rk_test_4eC39HqLyjWDarjtT1zdp7dc", ""),
    ],
    "stripe-webhook-secret": [("whsec_abcdefghijklmnop0123456789", "whsec_abcdefghijklmnop0123456789", "")],
    "github-token": [("token ghp_abcdefghijklmnop0123", "ghp_abcdefghijklmnop0123", "token ")],
    "github-fine-grained-token": [
        ("github_pat_11ABCDEFG0_abcdefghijk", "github_pat_11ABCDEFG0_abcdefghijk", "")
    ],
    "gitlab-token": [("glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789", "")],
    "slack-token": [("xoxb-123456789012-abcdefghij", "xoxb-123456789012-abcdefghij", "")],
    "slack-app-token": [("xapp-1-A0123456789-abcdef", "xapp-1-A0123456789-abcdef", "")],
    "slack-webhook": [
        (
            "post to https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX now",
            "T000/B000/XXXXXXXXXXXX",
            "post to ",
        )
    ],
    "google-api-key": [
        ("AIzaSyA-abcdefghijklmnopqrstuvwxyz012", "AIzaSyA-abcdefghijklmnopqrstuvwxyz012", "")
    ],
    "aws-access-key-id": [
        ("id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "id "),
        (f"AKIAIOSFODNN7EXAMPLE,{AWS_SECRET}\n", AWS_SECRET, ""),  # a credentials CSV row
        (f'"ASIAIOSFODNN7EXAMPLE": "{AWS_SECRET}"', AWS_SECRET, ""),
    ],
    "aws-secret-access-key": [
        (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret_access_key = "),
        (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET, "export AWS_SECRET_ACCESS_KEY="),
        (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', AWS_SECRET, '{"SecretAccessKey": "'),
        (f'{{\\"secretAccessKey\\": \\"{AWS_SECRET}\\"}}', AWS_SECRET, "secretAccessKey"),
    ],
    "aws-session-token": [
        ("aws_session_token = " + "FwoGZXIvYXdzE" * 10, "FwoGZXIvYXdzE" * 10, "aws_session_token")
    ],
    "azure-account-key": [
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
            + "Eby8vdM02xNOcqFl" * 5
            + "==;EndpointSuffix=core.windows.net",
            "Eby8vdM02xNOcqFl" * 5,
            "AccountName=acct;AccountKey=",
        ),
        (
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=abcDEF0123456789abcdEF0123=",
            "abcDEF0123456789abcdEF0123=",
            "SharedAccessKeyName=root;",
        ),
    ],
    "azure-sas-signature": [
        (
            "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=AbCdEf0123456789%2Bxyz%3D&se=2030",
            "AbCdEf0123456789%2Bxyz%3D",
            "?sv=2022-11-02&sig=",
        )
    ],
    "azure-client-secret": [
        (
            "secret abc8Q~ABCDEFGHIJKLMNOPQRSTUVWXYZabcde12",
            "abc8Q~ABCDEFGHIJKLMNOPQRSTUVWXYZabcde12",
            "secret ",
        )
    ],
    "jwt": [
        (
            "id_token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "id_token ",
        )
    ],
    "authorization-value": [
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "Authorization: Basic "),
        ("curl -H 'authorization: token abcdef0123456789' url", "abcdef0123456789", "' url"),
        ("Proxy-Authorization: Digest username42", "username42", "Proxy-Authorization: Digest "),
    ],
    "bearer-value": [("Bearer abc.def-ghi", "abc.def-ghi", "")],
}
NEAR_MISSES = [
    "the session cache handles expiry when two workers write at the same moment",
    "secret_key = os.environ['SECRET_KEY']",
    "authorization failed for the user",
    "headers['Authorization'] = f'Bearer {token}'",
    "def f(x, sig=None): return x",
    "AKIA is a prefix; AKIAshort is not a key",
    "max_tokens: 4096, session token counts in the table",
    "a bearer of news",
    "eyJ is how base64 JSON starts",
]


def test_every_shape_in_the_table_has_examples() -> None:
    assert {s.name for s in SHAPES} == set(EXAMPLES)
    assert len({s.name for s in SHAPES}) == len(SHAPES)


@pytest.mark.parametrize(
    ("shape", "text", "secret", "kept"), [(n, *e) for n, es in EXAMPLES.items() for e in es]
)
def test_each_shape_is_redacted_and_found_by_both_fast_paths(
    shape: str, text: str, secret: str, kept: str
) -> None:
    out = redact_text(text)
    assert secret not in out and REDACTED in out, (shape, out)
    assert kept in out, (shape, out)
    assert text_may_need_redaction(text)
    assert may_need_redaction(orjson.dumps({"text": text}))
    assert may_need_redaction(orjson.dumps([1, {"a": [text]}]))


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_stay_as_they_are(text: str) -> None:
    assert redact_text(text) == text


def test_names_of_cloud_credentials_are_sensitive() -> None:
    for name in ("SecretAccessKey", "secretAccessKey", "aws_secret_access_key", "SessionToken", "AccountKey"):
        assert sensitive_name(name), name
        assert may_need_redaction(orjson.dumps({name: "v"})), name
    for name in ("AccessKeyId", "AccountName", "private_key_id_hint", "monkey"):
        assert not sensitive_name(name), name
    assert redact({"SecretAccessKey": "opaque", "AccessKeyId": "AKIAIOSFODNN7EXAMPLE"}) == {
        "SecretAccessKey": REDACTED,
        "AccessKeyId": REDACTED,
    }


ALL = [(text, secret) for es in EXAMPLES.values() for text, secret, _ in es]


def test_no_shape_reaches_the_event_log_the_continuity_record_or_export(tmp_path: Path) -> None:
    home = tmp_path / "home"
    paths = Paths(home=home)
    with EventWriter(paths) as w:
        for i, (text, _) in enumerate(ALL):
            w.emit("Note", {"text": text, "nested": {"deep": [{"again": text}]}}, turn_id=f"t{i}")
    ws = tmp_path / "ws"
    ws.mkdir()
    for text, _ in ALL:
        continuity.append(paths, ws, Entry(kind="turn", text=text, source_cli="codex"))
    export = subprocess.run(
        [sys.executable, "-m", "glider_cli", "context", "export"],
        capture_output=True,
        timeout=60,
        env={**os.environ, "GLIDER_HOME": str(home)},
    )
    assert export.returncode == 0
    on_disk = b"".join(f.read_bytes() for f in home.rglob("*") if f.is_file())
    assert export.stdout.count(b"[REDACTED]") >= len(ALL)
    for _, secret in ALL:
        for blob in (on_disk, export.stdout):
            assert secret.encode() not in blob, secret
            assert orjson.dumps(secret)[1:-1] not in blob, secret
