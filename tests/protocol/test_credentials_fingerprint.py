"""The credentials fingerprint (`turns.request_kinds.credentials_fingerprint`, issue 29): keyed
BLAKE2b, one call per request, no HMAC: 32 hex digits that only the index's key gives, the same for
the same credential, another for another key or credential."""

from __future__ import annotations

import hashlib
import hmac

from glider_cli.turns.request_kinds import credentials_fingerprint

KEY = bytes(range(32))


def test_the_fingerprint_is_keyed_blake2b_of_the_first_auth_header() -> None:
    value = "sk-ant-api03-" + "x" * 40
    fp = credentials_fingerprint({"x-api-key": value}, KEY)
    assert fp == hashlib.blake2b(value.encode(), key=KEY, digest_size=16).hexdigest()
    assert fp is not None and len(fp) == 32 and value not in fp
    # Not the unkeyed hash, not the former HMAC: without the key nothing gives it.
    assert fp != hashlib.blake2b(value.encode(), digest_size=16).hexdigest()
    assert fp != hmac.digest(KEY, value.encode(), "sha256").hex()[:32]
    assert credentials_fingerprint({"x-api-key": value}, bytes(32)) != fp
    assert credentials_fingerprint({"x-api-key": value + "y"}, KEY) != fp
    assert credentials_fingerprint({"x-api-key": value}, KEY) == fp
    # The first auth header the request carries (x-api-key, authorization, x-goog-api-key).
    both = {"authorization": "Bearer other", "x-api-key": value}
    assert credentials_fingerprint(both, KEY) == fp
    assert credentials_fingerprint({"authorization": "Bearer other"}, KEY) not in (None, fp)
    assert credentials_fingerprint({"x-goog-api-key": ""}, KEY) is None
    assert credentials_fingerprint({}, KEY) is None


def test_a_key_longer_than_blake2b_takes_is_hashed_down_not_refused() -> None:
    long1, long2 = b"k" * 64 + b"1", b"k" * 64 + b"2"
    fp1 = credentials_fingerprint({"x-api-key": "sk-one"}, long1)
    fp2 = credentials_fingerprint({"x-api-key": "sk-one"}, long2)
    assert fp1 is not None and fp2 is not None and fp1 != fp2 and len(fp1) == 32
    assert fp1 == credentials_fingerprint({"x-api-key": "sk-one"}, long1)
    # Non-UTF-8-clean header values hash too (a lone surrogate is replaced, not raised).
    assert credentials_fingerprint({"x-api-key": "sk-\udc80"}, KEY) is not None


def test_a_fingerprinter_set_up_once_gives_the_same_fingerprints_call_after_call() -> None:
    from glider_cli.turns.request_kinds import Fingerprinter

    for key in (KEY, b"k" * 65):
        fingerprint = Fingerprinter(key)
        # The same value twice in a row (its fingerprint kept), then another, then the first again.
        for value in ("sk-one", "sk-one", "sk-two", "sk-one", "Bearer \udc80", "Bearer \udc80", "sk-two"):
            headers = {"x-api-key": value}
            assert fingerprint(headers) == credentials_fingerprint(headers, key)
        assert fingerprint({}) is None
