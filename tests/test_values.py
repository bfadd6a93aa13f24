from __future__ import annotations

import copy
import importlib
import inspect
import pickle
import pkgutil
import re
import sys
from pathlib import Path
from typing import ClassVar

import pytest

import glider_cli
from glider_cli.config.model import Action, Rule, Trigger
from glider_cli.config.settings import BackendSettings, Settings, Timeout
from glider_cli.domain import ChatRequest, RequestSummary, RouteDecision
from glider_cli.values import Frozen, init_fields, lazy_pattern, replace


def _all_value_classes() -> list[type[Frozen]]:
    for mod in pkgutil.walk_packages(glider_cli.__path__, "glider_cli."):
        if not mod.name.endswith(".__main__"):  # that one runs the CLI
            importlib.import_module(mod.name)
    found: list[type[Frozen]] = []
    todo = list(Frozen.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("glider_cli."):
            found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


VALUE_CLASSES = _all_value_classes()


def test_the_value_classes_are_found() -> None:
    names = {c.__name__ for c in VALUE_CLASSES}
    assert {"Settings", "BackendSettings", "Config", "Rule", "ChatRequest", "RouteDecision"} <= names


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_init_takes_and_sets_exactly_the_fields_in_order(cls: type[Frozen]) -> None:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
    assert tuple(p.name for p in params) == cls._fields
    given = {name: object() for name in cls._fields}
    positional = cls(*given.values())
    by_keyword = cls(**given)
    for name, value in given.items():
        assert getattr(positional, name) is value, name
        assert getattr(by_keyword, name) is value, name
    assert sorted(vars(positional)) == sorted(cls._fields)
    for p in params:
        if p.default is not p.empty:
            assert getattr(cls, p.name) is p.default, p.name


def test_a_field_is_read_only_to_the_type_checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Immutability is static (see `values`): `mypy --strict`, which CI runs on all of src, rejects
    assigning a field of a value, and accepts the `__init__` idiom that sets them."""
    from mypy import api

    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from typing import Any\n"
        "from glider_cli.values import Frozen\n"
        "class Point(Frozen):\n"
        "    x: int\n"
        "    def __init__(self, x: int) -> None:\n"
        "        s: Any = self\n"
        "        s.x = x\n"
        "p = Point(1)\n"
        "p.x = 2\n"  # line 9
        "reveal_type(p.x)\n"
    )
    monkeypatch.setenv("MYPYPATH", str(Path(glider_cli.__file__).parent.parent))
    limit = sys.getrecursionlimit()
    try:
        out, err, status = api.run(
            ["--strict", "--no-site-packages", "--cache-dir", str(tmp_path / "cache"), str(snippet)]
        )
    finally:  # mypy raises the interpreter's recursion limit for its own run: not for the tests after it
        sys.setrecursionlimit(limit)
    errors = sorted(line.split(":")[1] for line in out.splitlines() if ": error:" in line)
    assert status == 1, out + err
    assert errors == ["9"], out
    assert 'Revealed type is "int"' in out


def test_a_value_keeps_its_fields_as_plain_attributes() -> None:
    """No `__setattr__` of its own: its `__init__` stores each field as an ordinary attribute (what
    keeps building one cheap), and reading one is an ordinary attribute read."""
    assert Frozen.__setattr__ is object.__setattr__
    t = Timeout()
    assert vars(t) == {name: getattr(t, name) for name in Timeout._fields}
    assert t.read == 600.0


def test_no_value_is_filled_through_its_dict() -> None:
    """Every value's `__init__` stores its fields one by one (or `init_fields` does): a write through
    `__dict__` would cost the instance its inline attributes (see `values`)."""
    src = Path(glider_cli.__file__).parent
    found = [
        f"{path.relative_to(src)}:{n}"
        for path in sorted(src.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bself\.__dict__(\.update\(|\[)", line)
    ]
    assert found == []


def test_equality_and_hash_by_fields_within_one_class() -> None:
    assert Timeout() == Timeout(5.0, 600.0, 60.0, 10.0)
    assert Timeout(read=1.0) != Timeout()
    assert hash(Timeout()) == hash(Timeout())
    assert {Timeout(), Timeout()} == {Timeout()}

    class Other(Frozen):
        connect: float
        read: float
        write: float
        pool: float

        def __init__(self, connect: float, read: float, write: float, pool: float) -> None:
            init_fields(self, connect, read, write, pool)

    assert Other(5.0, 600.0, 60.0, 10.0) != Timeout()
    assert Timeout() != (5.0, 600.0, 60.0, 10.0)
    with pytest.raises(TypeError, match="unhashable"):
        hash(Settings())  # a mapping field, as with a frozen dataclass


def test_repr_names_every_field() -> None:
    assert repr(Timeout()) == "Timeout(connect=5.0, read=600.0, write=60.0, pool=10.0)"
    b = BackendSettings("local1", "ollama", "local")
    assert repr(b).startswith("BackendSettings(name='local1', type='ollama', side='local', base_url=None")
    assert str(b) == repr(b)


def test_copy_and_pickle() -> None:
    b = BackendSettings("local1", "ollama", "local", timeout=Timeout(read=3.0))
    assert copy.copy(b) == b
    r = Rule("r", 5, Trigger("regex", pattern="x"), Action("local"), line=3)
    assert copy.deepcopy(r) == r
    assert pickle.loads(pickle.dumps(r)) == r


def test_replace() -> None:
    t = Timeout()
    changed = replace(t, read=1.0)
    assert changed == Timeout(read=1.0)
    assert t.read == 600.0
    with pytest.raises(TypeError, match="Timeout has no field 'reed'"):
        replace(t, reed=1.0)


def test_mutable_defaults_are_fresh_and_immutable_ones_shared() -> None:
    a = ChatRequest("anthropic", "m", False, ())
    b = ChatRequest("anthropic", "m", False, ())
    assert a.headers == {} and a.headers is not b.headers
    summary = RequestSummary(0, False, 0, "heuristic")
    d = RouteDecision("local", "r", None, None, None, None, "single", None, summary, ())
    e = RouteDecision("local", "r", None, None, None, None, "single", None, summary, ())
    assert d.extra == {} and d.extra is not e.extra
    assert Settings().backends == {}
    with pytest.raises(TypeError):
        Settings().backends["x"] = BackendSettings("x", "ollama", "local")  # type: ignore[index]


def test_fields_of_a_base_class_come_first_and_classvars_are_none() -> None:
    class Base(Frozen):
        a: int
        kind: ClassVar[str] = "base"

        def __init__(self, a: int) -> None:
            init_fields(self, a)

    class Child(Base):
        b: str

        def __init__(self, a: int, b: str) -> None:
            init_fields(self, a, b)

    assert Base._fields == ("a",)
    assert Child._fields == ("a", "b")
    assert (
        repr(Child(1, "x"))
        == "test_fields_of_a_base_class_come_first_and_classvars_are_none.<locals>.Child(a=1, b='x')"
    )


def test_init_fields_wants_every_field() -> None:
    with pytest.raises(ValueError):
        init_fields(Timeout(), 1.0)


def test_a_lazy_pattern_compiles_on_first_use_and_answers_as_the_pattern() -> None:
    source = r"(?P<word>[a-z]+)-(\d+)"
    ref = re.compile(source, re.IGNORECASE)
    lazy = lazy_pattern(source, re.IGNORECASE)
    with pytest.raises(AttributeError):  # nothing compiled yet: its methods are not set
        object.__getattribute__(lazy, "search")
    text = "Ab-12 cd-3 x-"
    assert lazy.search(text).group("word") == ref.search(text).group("word")  # type: ignore[union-attr]
    assert lazy.match(text).span() == ref.match(text).span()  # type: ignore[union-attr]
    assert lazy.fullmatch("ab-1") is not None and lazy.fullmatch(text) is None
    assert lazy.sub(r"<\1>", text) == ref.sub(r"<\1>", text)
    assert lazy.subn("_", text) == ref.subn("_", text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in ref.finditer(text)]
    assert lazy.findall(text) == ref.findall(text)
    assert lazy.split(text) == ref.split(text)
    for pos, end in ((1, 8), (1, 3), (6, 13)):
        got, want = lazy.search(text, pos, end), ref.search(text, pos, end)
        assert (got and got.span()) == (want and want.span())
    assert (lazy.pattern, lazy.flags, lazy.groups) == (ref.pattern, ref.flags, ref.groups)
    # Once compiled, the methods are the compiled pattern's own.
    compiled = lazy.search.__self__  # type: ignore[attr-defined]
    assert isinstance(compiled, re.Pattern) and compiled == ref
    assert lazy.findall.__self__ is compiled  # type: ignore[attr-defined]
    binary = lazy_pattern(rb'"n"\s*:\s*(\d+)')
    assert binary.search(b'{"n": 42}').group(1) == b"42"  # type: ignore[union-attr]
