"""Does fan_out pay for itself? `single` vs `fan_out` (width 3, judge longest_agreement) on the real local
model (issue 16). Prints answer accuracy and wall time of each; a measurement, not a target.

20 small prompts with answers checked by program: 10 arithmetic questions (the right number must be the
first number of the reply, or the first after its `=`), 5 regexes (the reply's pattern must match the
positives and none of the negatives) and 5 one-line Python fixes (the reply's first code line must
compile and evaluate to the right value).
Every prompt goes through a real Glider (in process, uvicorn on 127.0.0.1) to the real llama.cpp server
(`.ci/llama-venv`, SmolLM2-135M: see tests/llama_server.py), once as `/local` (one call) and once as
`/swarm` (three calls sampled at 0.2, 0.7, 1.0; the answer the others agree with most); `/local` runs
twice: at the server's default temperature (the client sends none) and at 0.2.

Usage: .venv/bin/python bench/bench_strategies.py [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "server")]

Check = Callable[[str], bool]


def _first_number(reply: str) -> int | None:
    """The answer's number: the first after an `=` when the reply writes the sum out, else the first."""
    text = reply.replace(",", "")
    text = text.split("=", 1)[1] if "=" in text else text
    m = re.search(r"-?\d+", text)
    return int(m.group()) if m else None


def _number(expected: int) -> Check:
    return lambda reply: _first_number(reply) == expected


def _code(reply: str) -> str:
    fenced = re.search(r"```(?:\w+)?\n?(.*?)```", reply, re.S)
    text = fenced.group(1) if fenced else reply
    tick = re.search(r"`([^`]+)`", text)
    text = tick.group(1) if tick and not fenced else text
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


def _regex(positives: list[str], negatives: list[str]) -> Check:
    def check(reply: str) -> bool:
        pattern = _code(reply).removeprefix("r'").removeprefix('r"').strip("'\"/")
        try:
            rx = re.compile(pattern)
        except re.error:
            return False
        return all(rx.fullmatch(p) for p in positives) and not any(rx.fullmatch(n) for n in negatives)

    return check


def _fix(expected: object) -> Check:
    def check(reply: str) -> bool:
        line = _code(reply)
        try:
            return bool(
                eval(compile(line, "<fix>", "eval"), {"__builtins__": {"len": len, "sum": sum}}) == expected
            )
        except Exception:  # a wrong fix fails in any way it likes
            return False

    return check


N = "Answer with the number only."
PROMPTS: list[tuple[str, Check]] = [
    (f"What is 7 + 5? {N}", _number(12)),
    (f"What is 9 * 3? {N}", _number(27)),
    (f"What is 100 - 37? {N}", _number(63)),
    (f"What is 48 / 6? {N}", _number(8)),
    (f"What is 15 + 27? {N}", _number(42)),
    (f"What is 6 * 7? {N}", _number(42)),
    (f"What is 81 - 19? {N}", _number(62)),
    (f"What is 12 * 12? {N}", _number(144)),
    (f"What is 3 + 4 + 5? {N}", _number(12)),
    (f"What is 2 to the power of 5? {N}", _number(32)),
    (
        "Write a regular expression that matches exactly three digits, like 123. Reply with the regex only.",
        _regex(["123", "907"], ["12", "1234", "abc"]),
    ),
    (
        "Write a regular expression that matches one or more lowercase letters. Reply with the regex only.",
        _regex(["abc", "z"], ["", "ABC", "a1"]),
    ),
    (
        "Write a regular expression that matches the word cat or the word dog. Reply with the regex only.",
        _regex(["cat", "dog"], ["cow", "catdog"]),
    ),
    (
        "Write a regular expression that matches a string that starts with a and ends with b, like axxb. "
        "Reply with the regex only.",
        _regex(["ab", "axxb"], ["ba", "axx"]),
    ),
    (
        "Write a regular expression that matches a US zip code of five digits. Reply with the regex only.",
        _regex(["12345"], ["1234", "123456", "abcde"]),
    ),
    ("Fix this Python expression so it is valid: `(1 + 2` Reply with the fixed expression only.", _fix(3)),
    (
        "Fix this Python expression so it is valid: `[1, 2, 3` Reply with the fixed expression only.",
        _fix([1, 2, 3]),
    ),
    ("Fix this Python expression so it is valid: `len('abc'` Reply with the fixed expression only.", _fix(3)),
    (
        "Fix this Python expression so it is valid: `sum([1, 2]` Reply with the fixed expression only.",
        _fix(3),
    ),
    (
        "Fix this Python expression so it is valid: `{'a': 1` Reply with the fixed expression only.",
        _fix({"a": 1}),
    ),
]


def _config(url: str) -> str:
    from fake_upstream import closed_port_url

    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: openai, side: local, base_url: '{url}/v1', model: smol, max_tokens: 48}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{closed_port_url()}'}}\n"
        "orchestration:\n  fan_out: {enabled: true, width: 3, judge: longest_agreement}\n"
    )


def run(url: str, prefix: str, temperature: float | None) -> tuple[int, float, list[str]]:
    from glider_harness import GliderServer

    with tempfile.TemporaryDirectory() as tmp, GliderServer(_config(url), Path(tmp)) as g:
        right, replies = 0, []
        t0 = time.perf_counter()
        for prompt, check in PROMPTS:
            body = {
                "model": "m",
                "max_tokens": 48,
                "messages": [{"role": "user", "content": f"{prefix} {prompt}"}],
            }
            r = httpx.post(g.url + "/v1/chat/completions", json=body, timeout=600)
            reply = (
                r.json()["choices"][0]["message"]["content"] if r.status_code == 200 else f"<{r.status_code}>"
            )
            replies.append(reply)
            right += bool(check(reply))
        return right, time.perf_counter() - t0, replies


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import llama_server

    install, why = llama_server.find()
    if install is None:
        sys.exit(f"no llama.cpp server: {why}")
    results = {}
    with llama_server.LlamaServer(install) as llama:
        # single: the server's default temperature (the client sends none, as most do); single_t0.2: the
        # coldest of fan_out's samples alone, so that fan_out's gain is not only its cold sample.
        for name, prefix, temperature in (
            ("single", "/local", None),
            ("single_t0.2", "/local", 0.2),
            ("fan_out", "/swarm", None),
        ):
            right, wall, replies = run(llama.url, prefix, temperature)
            results[name] = {"right": right, "of": len(PROMPTS), "wall_s": round(wall, 2), "replies": replies}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, r in results.items():
        print(f"{name:<12} accuracy {r['right']}/{r['of']}  wall {r['wall_s']:.1f} s")


if __name__ == "__main__":
    main()
