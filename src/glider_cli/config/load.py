"""Load a Glider configuration: resolve which file, merge it over its profile, validate, freeze.

Resolution (first that applies): `config=` (`--config FILE`) > `profile=` (`--profile NAME`, a
bundled profile) > `$GLIDER_CONFIG` > `$GLIDER_HOME/config.yaml` > the bundled `default` profile.

`extends: NAME` starts a file from a bundled profile. Sections merge key by key (the file wins;
lists are replaced), except `routing.rules`, which merge by `name`: a rule with a known name
replaces only the keys it gives (so `{name: default, enabled: false}` switches a profile rule off,
`{name: default, action: {target: local}}` changes its action), a rule with a new name is added.

Validation is strict and complete before anything is returned: unknown keys (with a did-you-mean),
wrong types, unknown trigger types, uncompilable RE2 patterns, unreadable script files, unknown
backends, fan_out without `orchestration.fan_out.enabled`, literal secrets. A broken config never
half-loads: `load_config` raises the first error (a ConfigError naming file:line, rule and key)
and says how many more there are. `check_config` returns every Issue instead, for `glider lint`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from glider_cli import paths as paths_mod
from glider_cli.config import profiles
from glider_cli.config.backends import read_backends
from glider_cli.config.cursor import read_cursor
from glider_cli.config.located import Checker, Issue, LDict, LList, read_text, read_yaml, scan_secrets
from glider_cli.config.model import Config
from glider_cli.config.pricing import read_pricing
from glider_cli.config.rules import ROUTING_KEYS, read_routing, read_rules
from glider_cli.config.sections import (
    read_context,
    read_delegates,
    read_orchestration,
    read_server,
    read_sticky,
    read_tool_followup,
    read_transform,
)
from glider_cli.config.settings import Settings
from glider_cli.config.telemetry import read_telemetry
from glider_cli.errors import ProfileError
from glider_cli.values import Frozen, init_fields, replace

__all__ = [
    "Config",
    "ConfigSource",
    "check_config",
    "load_config",
    "resolve_source",
]

TOP_KEYS = (
    "extends",
    "routing",
    "orchestration",
    "backends",
    "transform",
    "context",
    "server",
    "delegate",
    "pricing",
    "cursor",
    "telemetry",
)
_MAX_EXTENDS = 8


class ConfigSource(Frozen):
    """Which configuration applies: a file path, or a bundled profile name."""

    path: Path | None
    profile: str | None

    def __init__(self, path: Path | None = None, profile: str | None = None) -> None:
        init_fields(self, path, profile)

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else f"<bundled:{self.profile}>"


def resolve_source(
    *, config: str | None = None, profile: str | None = None, environ: Mapping[str, str] | None = None
) -> ConfigSource:
    env = os.environ if environ is None else environ
    if config:
        return ConfigSource(path=Path(config).expanduser().absolute())
    if profile:
        return ConfigSource(profile=profile)
    if env.get("GLIDER_CONFIG"):
        return ConfigSource(path=Path(env["GLIDER_CONFIG"]).expanduser().absolute())
    home_config = paths_mod.resolve(env).config
    if home_config.is_file():
        return ConfigSource(path=home_config)
    return ConfigSource(profile="default")


def _read_text(path: Path) -> str:
    return read_text(path)


def _profile_path(name: str) -> Path:
    path = profiles.profiles_dir() / f"{name}.yaml"
    if not path.is_file() or "/" in name or name.startswith("."):
        from glider_cli.config.located import did_you_mean

        known = profiles.bundled_profiles()
        guess = did_you_mean(name, known)
        raise ProfileError(
            f"no bundled profile {name!r}" + (f"; did you mean {guess!r}?" if guess else ""),
            hint=f"bundled profiles: {', '.join(known)}",
        )
    return path


def _read_doc(path: Path, *, label: str | None = None) -> LDict:
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise ProfileError(f"config file {path} does not exist") from None
    except OSError as exc:
        raise ProfileError(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"config file {path} is not UTF-8 text") from None
    return read_yaml(text, label or str(path))


def _merge(base: Any, over: Any, *, rules: bool = False) -> Any:
    if rules and isinstance(base, LList) and isinstance(over, LList):
        return _merge_rules(base, over)
    if not (isinstance(base, LDict) and isinstance(over, LDict)):
        return over
    out = LDict(over.origin)
    for key, value in base.items():
        out.put(key, value, base.where(key))
    for key, value in over.items():
        merged = _merge(base[key], value, rules=key == "rules") if key in base else value
        out.put(key, merged, over.where(key))
    return out


def _merge_rules(base: LList, over: LList) -> LList:
    out = LList(over.origin)
    index: dict[str, int] = {}
    for i, rule in enumerate(base):
        if isinstance(rule, LDict) and isinstance(rule.get("name"), str):
            index[rule["name"]] = len(out)
        out.add(rule, base.where(i))
    for i, rule in enumerate(over):
        name = rule.get("name") if isinstance(rule, LDict) else None
        if isinstance(name, str) and name in index:
            pos = index.pop(name)
            old = out[pos]
            merged = LDict(rule.origin)
            for key, value in old.items():
                merged.put(key, value, old.where(key))
            for key, value in rule.items():
                merged.put(key, value, rule.where(key))
            out[pos] = merged
            out.item_where[pos] = over.where(i)
        else:
            out.add(rule, over.where(i))
    return out


def _rule_names(doc: LDict) -> list[str]:
    routing = doc.get("routing")
    rules = routing.get("rules") if isinstance(routing, LDict) else None
    if not isinstance(rules, LList):
        return []
    return [r["name"] for r in rules if isinstance(r, LDict) and isinstance(r.get("name"), str)]


def _load_chain(doc: LDict, ck: Checker, depth: int = 0, profile_rules: list[str] | None = None) -> LDict:
    """`doc` merged over the profiles it extends; the names of their rules go to `profile_rules`."""
    name = doc.get("extends")
    if name is None:
        return doc
    if not isinstance(name, str):
        ck.error("must be the name of a bundled profile", doc.where("extends"), key="extends")
        return doc
    if depth >= _MAX_EXTENDS:
        ck.error(
            f"profiles extend each other more than {_MAX_EXTENDS} deep (a cycle?)",
            doc.where("extends"),
            key="extends",
        )
        return doc
    try:
        path = _profile_path(name)
    except ProfileError as exc:
        ck.error(exc.detail, doc.where("extends"), key="extends", hint=exc.hint)
        return doc
    base = _load_chain(_read_doc(path, label=str(path)), ck, depth + 1, profile_rules)
    if profile_rules is not None:
        profile_rules.extend(_rule_names(base))
    merged = _merge(base, doc)
    assert isinstance(merged, LDict)
    merged.pop("extends", None)
    return merged


def _build(doc: LDict, ck: Checker, source: ConfigSource, profile_rules: tuple[str, ...] = ()) -> Config:
    ck.keys(doc, TOP_KEYS, path="", what="section")
    scan_secrets(doc, ck, doc.where(), "")
    orchestration = read_orchestration(ck, doc)
    fan_out = orchestration.fan_out.enabled
    raw_backends = doc.get("backends")
    names = tuple(raw_backends) if isinstance(raw_backends, LDict) else ()
    backends_sec = ck.section(doc, "backends", names, path="backends")
    backends = read_backends(ck, backends_sec)
    routing = ck.section(doc, "routing", ROUTING_KEYS, path="routing")
    rules: list[Any] = []
    if routing is not None:
        rules = read_rules(
            ck,
            routing,
            backends=backends,
            fan_out_enabled=fan_out,
            read_file=_read_text,
            profile_rules=profile_rules,
        )
    settings = Settings(
        source=source.label,
        backends=MappingProxyType(backends),
        context=read_context(ck, doc),
        transform=read_transform(ck, doc),
        sticky=read_sticky(ck, routing) if routing is not None else Settings().sticky,
        tool_followup=read_tool_followup(ck, routing) if routing is not None else Settings().tool_followup,
        fan_out_enabled=fan_out,
        orchestration=orchestration,
        server=read_server(ck, doc),
        delegate=MappingProxyType(read_delegates(ck, doc)),
        pricing=read_pricing(ck, doc),
        cursor=read_cursor(ck, doc),
        telemetry=read_telemetry(ck, doc),
    )
    files = sorted({r.file for r in rules if r.file} | {source.label})
    return Config(
        settings=settings,
        rules=tuple(rules),
        routing=read_routing(ck, routing, backends=backends),
        source=source.label,
        profile=source.profile,
        files=tuple(files),
    )


def check_config(
    *, config: str | None = None, profile: str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Config, list[Issue]]:
    """Load and validate, collecting every Issue (for `glider lint`).

    When there are errors the Config is partial (wrong rules and values left out or defaulted): it is
    only for further checks, never for routing. A file that cannot be read or parsed at all raises
    ConfigError (there is nothing to check).
    """
    source = resolve_source(config=config, profile=profile, environ=environ)
    path = source.path if source.path is not None else _profile_path(source.profile or "default")
    doc = _read_doc(path, label=str(path))
    ck = Checker()
    profile_rules: list[str] = []
    merged = _load_chain(doc, ck, profile_rules=profile_rules)
    built = _build(merged, ck, source, tuple(dict.fromkeys(profile_rules)))
    return built, ck.issues


def load_config(
    *, config: str | None = None, profile: str | None = None, environ: Mapping[str, str] | None = None
) -> Config:
    """The validated Config, or ConfigError naming the first problem (file:line, rule, key)."""
    loaded, issues = check_config(config=config, profile=profile, environ=environ)
    errors = [i for i in issues if i.severity == "error"]
    if errors:
        first = errors[0]
        if len(errors) > 1:
            more = f"{len(errors) - 1} more problem{'s' if len(errors) > 2 else ''}; run `glider lint`"
            first = replace(first, hint=f"{first.hint}; {more}" if first.hint else more)
        raise first.to_error()
    return loaded
