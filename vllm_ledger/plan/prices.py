"""What ``cost`` is given: prices and the power source, from a config file and flags.

The file, JSON or TOML (YAML is still read, deprecated), holds the same settings as the flags
(``electricity_price = 1.0``); a flag that is given overrides the file. The result is
checked once here, so ``plan.cost`` stays pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument, ConfigError, LedgerError, MissingExtra
from vllm_ledger.plan.cost import CloudPrices, Prices

# setting (a key of the file, and the flag's dest) -> its type
SETTINGS: dict[str, type] = {
    "power_watts": float,
    "prometheus": str,
    "electricity_price": float,
    "hardware_price": float,
    "lifetime_years": float,
    "ops_per_hour": float,
    "cloud_input_price": float,
    "cloud_output_price": float,
    "cloud_cached_price": float,
    "currency": str,
}
REQUIRED = ("electricity_price", "hardware_price", "lifetime_years", "ops_per_hour")


@dataclass(frozen=True)
class PriceSettings:
    """The money model's inputs, and where the machine's power comes from (one of the two)."""

    prices: Prices
    cloud: CloudPrices | None  # None: no break-even asked for
    power_watts: float | None
    prometheus_url: str | None


CONFIG_FORMATS = (".json", ".toml")  # and, deprecated, .yaml / .yml
MAX_CONFIG_BYTES = 1024 * 1024


def config_format(path: Path) -> str:
    """``json``, ``toml`` or ``yaml`` (deprecated), from the file's suffix."""
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix in CONFIG_FORMATS:
        return suffix[1:]
    raise ConfigError(
        f"{path}: name the file .json or .toml (the same keys in either, e.g. prices.toml)"
    )


def read_document(path: Path) -> Any:
    """A JSON or TOML config file (YAML: deprecated) as its document; one-line errors."""
    kind = config_format(path)
    if kind == "json":
        from vllm_ledger import strictjson

        try:
            return strictjson.load_file(path, max_bytes=MAX_CONFIG_BYTES, what=str(path))
        except OSError as exc:
            raise BadArgument(
                f"cannot read {path}: {exc.strerror}", argument="config", value=path
            ) from exc
    try:
        text = path.read_text()
    except OSError as exc:
        raise BadArgument(
            f"cannot read {path}: {exc.strerror}", argument="config", value=path
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text: fix it or pass the prices as flags") from exc
    if kind == "toml":
        try:
            import tomllib
        except ImportError as exc:  # Python 3.10
            raise ConfigError(
                f"{path}: reading TOML needs Python 3.11 or later: give the prices as JSON "
                "(prices.json) or as flags"
            ) from exc
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML ({exc}): fix it") from exc
    try:
        import yaml
    except ImportError as exc:
        raise MissingExtra("PyYAML", "observability") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: fix it or pass the prices as flags") from exc


def load_config(path: Path) -> dict[str, Any]:
    """The settings in a JSON or TOML file (YAML: still read, deprecated), each converted to its
    type; a one-line error otherwise."""
    doc = read_document(path)
    doc = {} if doc is None else doc
    if not isinstance(doc, dict):
        raise ConfigError(f"{path} must be a mapping of setting: value")
    out: dict[str, Any] = {}
    for key, value in doc.items():
        kind = SETTINGS.get(str(key))
        if kind is None:
            raise ConfigError(
                f"{path}: unknown setting {key!r}: use one of {', '.join(SETTINGS)}", str(key)
            )
        if isinstance(value, (bool, dict, list)) or value is None:
            raise ConfigError(f"{path}: {key} must be a {kind.__name__}, not {value!r}", str(key))
        try:
            out[str(key)] = kind(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{path}: {key} must be a {kind.__name__}, not {value!r}", str(key)
            ) from exc
    return out


def _merged(config: Path | None, given: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = load_config(config) if config else {}
    for key in SETTINGS:
        value = given.get(key)
        if value is not None:
            merged[key] = value
    if "power_watts" in merged and "prometheus" in merged:
        if given.get("power_watts") is not None:
            merged.pop("prometheus")
        elif given.get("prometheus") is not None:
            merged.pop("power_watts")
    missing = [k for k in REQUIRED if k not in merged]
    if missing:
        raise BadArgument(
            f"missing {', '.join(missing)}",
            hint="give them, or set them in the config file",
            argument="given",
            value=tuple(missing),
        )
    for key in ("electricity_price", "hardware_price", "ops_per_hour", "power_watts"):
        if key in merged and merged[key] < 0:
            raise _refused(key, merged[key], "must not be negative", config, given)
    if merged["lifetime_years"] <= 0:
        raise _refused("lifetime_years", merged["lifetime_years"], "must be above 0", config, given)
    return merged


def _refused(
    key: str, value: float, problem: str, config: Path | None, given: Mapping[str, Any]
) -> LedgerError:
    """A setting's value refused: the file's field (a ConfigError naming the file), or the
    given setting (a BadArgument naming it)."""
    if given.get(key) is None and config is not None:
        return ConfigError(f"{config}: {key} {problem}", key)
    return BadArgument(f"{key} {problem}", argument=key, value=value)


def _cloud(s: Mapping[str, Any]) -> CloudPrices | None:
    given = [k for k in ("cloud_input_price", "cloud_output_price", "cloud_cached_price") if k in s]
    if not given:
        return None
    if "cloud_input_price" not in s or "cloud_output_price" not in s:
        absent = "cloud_input_price" if "cloud_input_price" not in s else "cloud_output_price"
        raise BadArgument(
            "the break-even needs both cloud_input_price and cloud_output_price "
            "(per million tokens; cloud_cached_price defaults to the input price)",
            argument=absent,
        )
    return CloudPrices(
        s["cloud_input_price"],
        s["cloud_output_price"],
        s.get("cloud_cached_price", s["cloud_input_price"]),
    )


def load_prices(config: Path | None, given: Mapping[str, Any]) -> PriceSettings:
    """The file's settings (if any) overridden by ``given`` (setting -> value, None: not given).

    A refusal names settings by their keys: ``BadArgument`` with ``.argument`` ``given`` (and
    ``.value`` the settings missing), ``config`` (the file cannot be read) or a setting's key; a
    value from the file that is refused is a ``ConfigError`` naming the file and the key."""
    s = _merged(config, given)
    prices = Prices(
        s["electricity_price"],
        s["hardware_price"],
        s["lifetime_years"],
        s["ops_per_hour"],
        s.get("currency", Prices.currency),
    )
    return PriceSettings(prices, _cloud(s), s.get("power_watts"), s.get("prometheus"))


__all__ = [
    "CONFIG_FORMATS",
    "REQUIRED",
    "SETTINGS",
    "PriceSettings",
    "config_format",
    "load_config",
    "load_prices",
]
