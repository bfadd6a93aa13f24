"""`router.prefilter` reads the classifier's patterns with a reader of its own (no private module of
Python's `re`): the bundled patterns and the usual shapes keep the requirements they had when Python's
parser read them, anything outside the reader's subset is always searched, and on random patterns the
pre-check never hides a match RE2 finds."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
import re2

from glider_cli.config.load import load_config
from glider_cli.router import prefilter
from glider_cli.router.prefilter import Prefilter, requirement

# Every bundled classifier pattern and its requirement, as Python's parser gave them before.
BUNDLED = {
    r"\b(architect(ure)?|design (a|the|an)|system design|threat model|security (review|audit))\b": (
        "contains",
        {"architect", "design ", "security ", "system design", "threat model"},
    ),
    r"\b(migrat(e|ion)|port (this|the|it) to|rewrite (the|this) (whole|entire))\b": (
        "contains",
        {"migrat", "port ", "rewrite "},
    ),
    r"\b(across|throughout) the (whole |entire )?(code ?base|repo(sitory)?|project)\b": (
        "contains",
        {"across", "throughout"},
    ),
    r"\b(race condition|deadlock|memory leak|root cause|why does .+ (fail|crash|hang))\b": (
        "contains",
        {"deadlock", "memory leak", "race condition", "root cause", "why does "},
    ),
    r"\b(plan|roadmap|trade-?offs?|compare (the )?approaches)\b": (
        "contains",
        {"approaches", "plan", "roadmap", "trade"},
    ),
    r"^\s*(fix|correct) (a |the |this )?(typo|spelling|indentation|lint|import)": (
        "starts",
        {"correct", "fix"},
    ),
    r"^\s*(rename|remove|delete|add) (a |the |this )?"
    r"(variable|comment|docstring|import|print|log line|blank line)": (
        "starts",
        {"add", "delete", "remove", "rename"},
    ),
    r"^\s*(format|reformat|sort (the )?imports)": ("starts", {"format", "reformat", "sort "}),
    r"^\s*(what does|what is|explain) (this|the) (line|function|error|regex|flag|variable)": (
        "starts",
        {"explain", "what does", "what is"},
    ),
    r"^\s*(write|add) (a )?(unit )?test for\b": ("starts", {"add", "write"}),
    r"^\s*(hi|hello|hey|thanks|thank you|ok|okay)\b": (
        "starts",
        {"hello", "hey", "hi", "ok", "okay", "thank you", "thanks"},
    ),
}


@pytest.mark.parametrize("profile", ["default", "local-first", "pure-local"])
def test_every_bundled_pattern_keeps_its_requirement(profile: str) -> None:
    cls = load_config(profile=profile).routing.classifier
    sources = [*cls.cloud_patterns, *cls.small_patterns]
    assert sources
    for source in sources:
        assert source in BUNDLED, f"a new bundled pattern: add it and its requirement here: {source!r}"
        how, strings = BUNDLED[source]
        assert requirement(source) == (how, frozenset(strings)), source


# Shapes beyond the bundled ones, with the requirement Python's parser gave them before: its tree's
# quirks (a group without flags spliced into its sequence, a head all alternatives share taken out,
# one-character alternatives merged into a class, `[f]` read as `f`) are the reader's too.
SHAPES = [
    (r"a(?:bc)d", ("contains", {"abcd"})),
    (r"(?i:abc)d", ("contains", {"abc"})),
    (r"(?-i:Fix)es", ("contains", {"fix"})),
    (r"(?i)^\s*fix", ("starts", {"fix"})),
    (r"(?s)a.b", ("contains", {"a"})),
    (r"(fix|fox)", ("contains", {"ix", "ox"})),
    (r"(refactor|rename)", ("contains", {"factor", "name"})),
    (r"(a|[bc])x", ("contains", {"x"})),
    (r"(a|a)", ("contains", {"a"})),
    (r"[f]ix", ("contains", {"fix"})),
    (r"[^f]ix", ("contains", {"ix"})),
    (r"x[.]y", ("contains", {"x.y"})),
    (r"x[\s]?y", ("contains", {"x"})),
    (r"^[\s]*fix", ("starts", {"fix"})),
    (r"^(?:\s)*fix", ("starts", {"fix"})),
    (r"^\s{0,}fix", ("starts", {"fix"})),
    (r"^\s*?fix", ("contains", {"fix"})),
    (r"^\s+fix", ("contains", {"fix"})),
    (r"(fix)+ing", ("contains", {"fix"})),
    (r"(fix)*ing", ("contains", {"ing"})),
    (r"(?:ab){2}cd", ("contains", {"ab"})),
    (r"ab{0,3}c", ("contains", {"a"})),
    (r"a+?bc", ("contains", {"bc"})),
    (r"\bfoo\b|\bbar\b", ("contains", {"bar", "foo"})),
    (r"^ab|^ac", ("prefix", {"a"})),
    (r"(^fix)", ("contains", {"fix"})),
    (r"\.\-\}\]", ("contains", {".-}]"})),
    (r"a\tb\nc", ("contains", {"a\tb\nc"})),
    (r"[a-z]+ing", ("contains", {"ing"})),
    (r"[^\d\s]x", ("contains", {"x"})),
    (r"[]a]b", ("contains", {"b"})),
    (r"[a-]bc", ("contains", {"bc"})),
    ("caf\u00e9s", ("contains", {"caf"})),
    ("\u212aey", ("contains", {"ey"})),  # the Kelvin sign folds to k: no literal of the text
    (r"(|a)bc", ("contains", {"bc"})),
    (r"^a|^b", None),
    (r"deadlock|", None),
    (r"(?i)a|b", None),
]


@pytest.mark.parametrize(("source", "expected"), SHAPES)
def test_the_usual_shapes_keep_their_requirement(source: str, expected: tuple[str, set[str]] | None) -> None:
    assert requirement(source) == (expected and (expected[0], frozenset(expected[1])))


@pytest.mark.parametrize(
    "source",
    [
        r"\x41bc",  # hexadecimal, octal and control escapes, escaped letters or non-ASCII
        r"abc\0",
        r"abc\a",
        r"abc\Z",
        r"\Aabc",
        r"abc\ ",
        "abc\\\u00e9",
        "abc\\",
        r"(?P<n>abc)",
        r"(?<n>abc)",
        r"(?#note)abc",
        r"(?>abc)",
        r"(?!x)abc",
        r"(?<=x)abc",
        r"abc*+",  # possessive
        r"abc++",
        r"abc**",
        r"^*abc",
        r"\b+abc",
        r"*abc",
        r"abc{1001}",  # more than RE2 allows
        r"abc{3,2}",
        r"abc{99999999}",
        r"abc{2",
        r"abc{}",
        r"[{]abc",
        r"[a[b]abc",  # `[` inside a class: RE2 reads `[:` there as a POSIX class
        r"[:alpha:]abc",
        r"[a--b]abc",  # what Python warns about as set operations
        r"[a&&b]abc",
        r"[a-\d]abc",
        r"[z-a]abc",
        r"[\b]abc",
        r"[abc",
        r"abc)",
        r"(abc",
        r"a(?i)bc",  # global flags past the start
        r"(?i)x|(?s)abc",
        r"(?U)abc",
        r"(?x)a b c",
        r"(?a)abc",
        r"(?-i)abc",
        r"(?i-i:abc)",
        r"(?-:abc)",
        r"(?)abc",
    ],
)
def test_what_the_reader_does_not_know_is_always_searched(source: str) -> None:
    assert requirement(source) is None
    assert not Prefilter(["design", source]).usable


def test_the_pre_check_uses_no_private_module() -> None:
    tree = ast.parse(Path(prefilter.__file__).read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{alias.name}" for alias in node.names}
    assert imported == {"__future__.annotations", "re", "typing.Any"}
    reached = [
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("re", "typing")
    ]
    assert reached and not [a for a in reached if a.startswith("_")], reached


_WORDS = ["fix", "FIX", "the", "ab", "a", "b", "x", "de", "sign", "12", "0", "k", "s"]
_PUNCT = ["-", " ", ",", "}", "]", "\\.", "\\-", "\\}", "\\]", "\\(", "\\?", "\\*", "\\$", "\\^", "\\|"]
_PUNCT += ["\\\\"]
_ONE = [".", "\\s", "\\S", "\\d", "\\D", "\\w", "\\W", "\\t", "\\n", "\\v", "[abc]", "[^x]", "[a-f]"]
_ONE += ["[^\\s\\d]", "[\\w.-]", "[]x]", "[x-]", "[f]", "[^f]", "[\\.]", "[ \\t]", "[\\s]"]
_ZERO = ["\\b", "\\B", "^", "$"]
_REPS = ["?", "*", "+", "{2}", "{0,2}", "{1,}", "{1,3}", "??", "*?", "+?", "{2}?", "{1,}?"]
_GROUPS = ["(", "(?:", "(?i:", "(?-i:", "(?s:", "(?is:"]


def _piece(rng: random.Random, depth: int) -> str:
    r = rng.random()
    if depth > 2 or r < 0.4:
        atom = rng.choice(_WORDS) if rng.random() < 0.6 else rng.choice(_PUNCT + _ONE)
    elif r < 0.5:
        return rng.choice(_ZERO)
    else:  # alternatives, at times with a shared head
        shared = rng.choice(["", "", rng.choice(_WORDS), rng.choice(_ONE)])
        alts = "|".join(shared + _run(rng, depth + 1) for _ in range(rng.randint(1, 3)))
        atom = rng.choice(_GROUPS) + alts + ")"
    return atom + (rng.choice(_REPS) if rng.random() < 0.3 else "")


def _run(rng: random.Random, depth: int = 0) -> str:
    return "".join(_piece(rng, depth) for _ in range(rng.randint(0 if depth else 1, 4)))


def _text(rng: random.Random) -> str:
    words = [*_WORDS, "Fix", "xx", "the fix", "ab-de", "a.b", "x]", "}", "\\", "(", "?", "*", "$", "^", "|"]
    blanks = ["", " ", "\t\n", "\v", "\f", "\r "]
    joint = rng.choice(["", " "])
    return rng.choice(blanks) + joint.join(rng.choice(words) for _ in range(rng.randint(0, 6)))


def _never_hides_a_match(sources: list[str], rng: random.Random) -> bool:
    compiled = []
    for s in sources:
        try:
            compiled.append(re2.compile("(?i)" + s))
        except re2.error:
            return False
    pre = Prefilter(sources)
    for _ in range(30):
        text = _text(rng)
        if any(p.search(text) for p in compiled):
            assert pre.may_match(text), (sources, text)
    return pre.usable


def test_the_pre_check_never_hides_a_match_of_random_patterns_of_the_whole_subset() -> None:
    # Classes, escapes, flag groups, lazy and counted repeats, anchors anywhere: whenever RE2 finds
    # a match, the pre-check says so; and most of these patterns are read (the test is not empty).
    rng = random.Random(42)
    usable = 0
    for _ in range(800):
        sources = []
        for _ in range(rng.randint(1, 2)):
            head = rng.choice(["", "", "", "^", "^\\s*", "^[\\s]*", "^(?:\\s)*", "^\\S*", "^\\s*?"])
            head = rng.choice(["", "", "(?i)", "(?s)"]) + head
            sources.append(head + _run(rng))
        usable += _never_hides_a_match(sources, rng)
    assert usable > 450


def test_the_pre_check_never_hides_a_match_of_random_strings() -> None:
    # Any string of the syntax's characters, well-formed or not: requirement() gives None or a
    # requirement, never an error, and where RE2 reads the string the pre-check hides no match.
    rng = random.Random(4242)
    alphabet = [*"abfixK ^$.|()[]{}?*+-:,\\0123", "\\s", "\\d", "\\b", "(?:", "(?i)", "(?i:", "{2}", "{1,}"]
    alphabet += ["[^", "[a-z]", "\\.", "\\t", "\u00e9", "\u212a", "fix", "the", "(fix|fox)", "??", "*?"]
    usable = 0
    for _ in range(3000):
        source = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        found = requirement(source)
        assert found is None or (found[0] in ("contains", "starts", "prefix") and all(found[1]))
        usable += _never_hides_a_match([source], rng)
    assert usable > 300
