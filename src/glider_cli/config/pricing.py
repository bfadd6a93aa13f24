"""Token prices: the `pricing:` config section and the bundled table (`config/prices.yaml`).

    pricing:                       # US dollars per million tokens, per model glob (first match wins)
      "claude-sonnet-4*": {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}
      "qwen2.5-coder*": {input: 0.05, output: 0.05}    # a local model: electricity, a GPU rental

`read_pricing(ck, doc)` validates the section (a mapping of glob -> mapping of `input`, `output`,
`cache_read`, `cache_write`, each a number not below 0; `input` and `output` required; errors name
file, line and key) and returns its `Price`s in file order. `bundled()` reads the bundled table
(cached; its `date` and `source` say where the numbers come from).

`PriceTable(config_prices)` prices a call: `price(model, side)` is the first `pricing:` entry whose
glob matches the model (lower case), for either side; else, for the cloud side only, the first bundled
entry that matches. A local call no `pricing:` entry names costs 0 (`price` is None). `cost(price,
input, output, cache_read, cache_write)` is dollars; cache tokens without a cache price are priced as
input tokens.
"""

from __future__ import annotations

import fnmatch
import functools
from typing import Any

from glider_cli.config.located import Checker, LDict
from glider_cli.config.yaml_read import read_yaml
from glider_cli.values import Frozen, init_fields

PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
PER = 1_000_000


class Price(Frozen):
    """One model glob's prices (dollars per million tokens); `source` is `config` or `bundled`."""

    pattern: str
    input: float
    output: float
    cache_read: float | None
    cache_write: float | None
    source: str

    def __init__(
        self,
        pattern: str,
        input: float,
        output: float,
        cache_read: float | None = None,
        cache_write: float | None = None,
        source: str = "config",
    ) -> None:
        init_fields(self, pattern, input, output, cache_read, cache_write, source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern,
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "source": self.source,
        }


def read_prices(ck: Checker, sec: LDict, *, path: str, source: str) -> tuple[Price, ...]:
    out: list[Price] = []
    for pattern in sec:
        p = f"{path}.{pattern}"
        entry = ck.section(sec, pattern, PRICE_KEYS, path=p)
        if entry is None:
            if sec[pattern] is None:
                ck.error(
                    "must be a mapping of input, output, cache_read, cache_write", sec.where(pattern), key=p
                )
            continue
        values = {k: ck.number(entry, k, path=p) for k in PRICE_KEYS}
        missing = [k for k in ("input", "output") if k not in entry]
        for k in missing:
            ck.error(f"needs `{k}` (dollars per million tokens)", entry.origin, key=f"{p}.{k}")
        if missing or values["input"] is None or values["output"] is None:
            continue
        out.append(
            Price(
                pattern.lower(),
                values["input"],
                values["output"],
                values["cache_read"],
                values["cache_write"],
                source,
            )
        )
    return tuple(out)


def read_pricing(ck: Checker, top: LDict) -> tuple[Price, ...]:
    """The `pricing:` section's prices (see the module contract); () when absent."""
    if "pricing" not in top or top["pricing"] is None:
        return ()
    sec = top["pricing"]
    if not isinstance(sec, LDict):
        ck.error("must be a mapping of model globs to prices", top.where("pricing"), key="pricing")
        return ()
    return read_prices(ck, sec, path="pricing", source="config")


class Bundled(Frozen):
    date: str
    source: str
    prices: tuple[Price, ...]

    def __init__(self, date: str, source: str, prices: tuple[Price, ...]) -> None:
        init_fields(self, date, source, prices)


@functools.cache
def bundled() -> Bundled:
    """The bundled table (`config/prices.yaml`); a broken one is a bug, raised as ConfigError."""
    from importlib import resources  # here, not at import: loading a config does not read the table

    text = resources.files("glider_cli.config").joinpath("prices.yaml").read_text(encoding="utf-8")
    doc = read_yaml(text, "<bundled:prices.yaml>")
    ck = Checker()
    models = doc.get("models")
    prices = read_prices(ck, models, path="models", source="bundled") if isinstance(models, LDict) else ()
    if ck.errors or not prices:
        raise ck.errors[0].to_error() if ck.errors else ValueError("prices.yaml has no models")
    return Bundled(str(doc.get("date")), str(doc.get("source")), prices)


def _first(prices: tuple[Price, ...], model: str) -> Price | None:
    for p in prices:
        if fnmatch.fnmatchcase(model, p.pattern):
            return p
    return None


class PriceTable:
    """See the module contract. Lookups are cached per (model, side)."""

    def __init__(
        self, config_prices: tuple[Price, ...] = (), bundled_prices: tuple[Price, ...] | None = None
    ):
        self.config = config_prices
        self.bundled = bundled().prices if bundled_prices is None else bundled_prices
        self._cache: dict[tuple[str, str], Price | None] = {}

    def price(self, model: str | None, side: str) -> Price | None:
        if not model:
            return None
        key = (model, side)
        if key in self._cache:
            return self._cache[key]
        m = model.lower()
        found = _first(self.config, m)
        if found is None and side != "local":
            found = _first(self.bundled, m)
        self._cache[key] = found
        return found


def cost(price: Price | None, input: int, output: int, cache_read: int = 0, cache_write: int = 0) -> float:
    """Dollars for these tokens (`input` without the cache tokens); 0 without a price."""
    if price is None:
        return 0.0
    read = price.cache_read if price.cache_read is not None else price.input
    write = price.cache_write if price.cache_write is not None else price.input
    return (input * price.input + output * price.output + cache_read * read + cache_write * write) / PER
