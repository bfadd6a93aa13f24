"""Configuration: YAML in, frozen values out.

`load_config(config=, profile=)` resolves, merges (`extends`), validates and freezes a `Config`;
`check_config` returns every Issue instead of raising, for `glider lint`. The modules:

- `load` — resolution (`--config` > `--profile` > `$GLIDER_CONFIG` > `$GLIDER_HOME/config.yaml` >
  the bundled `default`), `extends`, merge by rule name;
- `located` — YAML read with file:line locations, the Checker that collects Issues, did-you-mean;
- `profiles` — the bundled profiles: where they are and their names;
- `rules` — `routing:` (rules, triggers, actions) into `config.model` values;
- `regex` — the RE2 check every routing pattern (rules, classifier) passes;
- `sections` — every other section (`backends`, `server`, `context`, `delegates`, ...) into `settings`;
- `model` / `settings` — the frozen values the rest of Glider reads.

The entry points are imported lazily: reading `config.settings` does not import PyYAML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from glider_cli.config.load import check_config, load_config

__all__ = ["check_config", "load_config"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from glider_cli.config import load

        return getattr(load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
