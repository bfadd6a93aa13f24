"""RE2, the linear-time engine every routing pattern is compiled with, as the config checks it:
`check_regex` says why a pattern does not compile, so a config holding one stops loading and the
problem names the key."""

from __future__ import annotations


def check_regex(pattern: str) -> str | None:
    """None when RE2 compiles `pattern`, else the reason it does not, as text. RE2's own error log
    (absl's banner, `re2.cc` lines on stderr) is switched off: the reason is reported here, once."""
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        if isinstance(reason, bytes):  # google-re2 raises its reason as bytes: b'missing ): (a'
            reason = reason.decode("utf-8", "replace")
        return str(reason) or "RE2 cannot compile it"
    return None
