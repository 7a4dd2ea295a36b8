"""LaneSpec: one decoding strategy as data, with Hugging Face `GenerationConfig` names and semantics.

No hidden defaults: a processor applies only when its parameter is set (and, like transformers, the sampling
warpers only when `do_sample`). `top_k=0`, `top_p=1.0`, `min_p=0`, `typical_p=1.0`, `repetition_penalty=1.0`,
`no_repeat_ngram_size=0` mean off. A `config:` lane reads a generation_config.json and applies what the file
means in transformers, its implicit defaults included (`do_sample: true` without `top_k` means `top_k=50`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from decoding.processors import DEFAULT_ORDER, SAMPLING_WARPERS

# transformers' order (penalties first, then the sampling warpers) lives with the processors themselves.
PROCESSOR_ORDER = DEFAULT_ORDER

# What transformers' GenerationConfig assumes for keys a generation_config.json leaves out.
TRANSFORMERS_DEFAULTS: dict[str, Any] = {
    "do_sample": False,
    "temperature": 1.0,
    "top_k": 50,
    "top_p": 1.0,
    "min_p": None,
    "typical_p": 1.0,
    "repetition_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "min_new_tokens": None,
    "num_beams": 1,
    "length_penalty": 1.0,
    "early_stopping": False,
    "num_return_sequences": 1,
    "max_new_tokens": None,
    "stop_strings": None,
}


@dataclass(frozen=True)
class Branch:
    """This lane copies lane `parent` before `step`, takes `token_id` at `step`, then follows its own spec."""

    parent: str
    step: int
    token_id: int


@dataclass(frozen=True)
class LaneSpec:
    name: str
    do_sample: bool = False
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    typical_p: float | None = None
    repetition_penalty: float | None = None
    no_repeat_ngram_size: int | None = None
    min_new_tokens: int | None = None
    num_beams: int = 1
    length_penalty: float = 1.0
    early_stopping: bool | str = False
    num_return_sequences: int = 1
    max_new_tokens: int | None = None
    seed: int | None = None
    stop_strings: tuple[str, ...] = ()
    processor_order: tuple[str, ...] | None = None  # None: transformers' order
    branch: Branch | None = None
    forced: dict[int, int] = field(default_factory=dict)  # {step: token_id}

    def __post_init__(self) -> None:
        validate(self)

    @property
    def is_beam(self) -> bool:
        return self.num_beams > 1

    def processors(self) -> list[str]:
        """The processors this lane applies, in the order it applies them (only those that are on)."""
        active = [name for name in PROCESSOR_ORDER if self._is_on(name)]
        if self.processor_order is None:
            return active
        return [name for name in self.processor_order if name in active]

    def _is_on(self, name: str) -> bool:
        if name in SAMPLING_WARPERS and not self.do_sample:
            return False
        return _is_set(self, name)

    def to_config(self) -> dict[str, Any]:
        """The lane's config as plain JSON values: every parameter that is set, strategy parameters always."""
        config: dict[str, Any] = {"do_sample": self.do_sample, "num_beams": self.num_beams}
        if self.is_beam:
            config.update(length_penalty=self.length_penalty, early_stopping=self.early_stopping,
                          num_return_sequences=self.num_return_sequences)
        for name in (*PROCESSOR_ORDER, "max_new_tokens", "seed"):
            if getattr(self, name) is not None:
                config[name] = getattr(self, name)
        if self.stop_strings:
            config["stop_strings"] = list(self.stop_strings)
        if self.processor_order is not None:
            config["processor_order"] = list(self.processor_order)
        if self.forced:
            config["forced"] = {str(step): token for step, token in sorted(self.forced.items())}
        return config

    @classmethod
    def from_config(cls, name: str, config: dict[str, Any], branch: dict[str, Any] | None = None) -> LaneSpec:
        """Inverse of to_config (used by JSON import and replay)."""
        kwargs = dict(config)
        if "stop_strings" in kwargs:
            kwargs["stop_strings"] = tuple(kwargs["stop_strings"])
        if "processor_order" in kwargs:
            kwargs["processor_order"] = tuple(kwargs["processor_order"])
        if "forced" in kwargs:
            kwargs["forced"] = {int(step): int(token) for step, token in kwargs["forced"].items()}
        _reject_unknown(kwargs)
        return cls(name=name, branch=Branch(**branch) if branch else None, **kwargs)

    def with_changes(self, **changes: Any) -> LaneSpec:
        return replace(self, **changes)


# ------------------------------------------------------------------------------------------------ validation

_OFF_VALUES = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0,
               "repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "min_new_tokens": 0}


def _is_set(spec: LaneSpec, name: str) -> bool:
    """Set to a value that changes anything (the transformers 'off' values count as unset)."""
    value = getattr(spec, name)
    return value is not None and value != _OFF_VALUES[name]


def _fail(parameter: str, value: Any, allowed: str) -> None:
    raise ValueError(f"invalid {parameter}={value!r}: allowed {allowed}")


def _check_int(spec: LaneSpec, name: str, minimum: int) -> None:
    value = getattr(spec, name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(name, value, f"an integer >= {minimum}")


def _check_float(spec: LaneSpec, name: str, low: float, high: float, low_open: bool, allowed: str) -> None:
    value = getattr(spec, name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        _fail(name, value, allowed)
    if value > high or value < low or (low_open and value == low):
        _fail(name, value, allowed)


def validate(spec: LaneSpec) -> None:
    if not isinstance(spec.name, str) or not spec.name.strip():
        _fail("name", spec.name, "a non-empty string")
    if not isinstance(spec.do_sample, bool):
        _fail("do_sample", spec.do_sample, "true or false")
    _check_float(spec, "temperature", 0.0, math.inf, True, "a float > 0")
    _check_int(spec, "top_k", 0)
    _check_float(spec, "top_p", 0.0, 1.0, False, "a float in [0, 1]")
    _check_float(spec, "min_p", 0.0, 1.0, False, "a float in [0, 1]")
    _check_float(spec, "typical_p", 0.0, 1.0, True, "a float in (0, 1]")
    _check_float(spec, "repetition_penalty", 0.0, math.inf, True, "a float > 0")
    _check_int(spec, "no_repeat_ngram_size", 0)
    _check_int(spec, "min_new_tokens", 0)
    _check_int(spec, "num_beams", 1)
    _check_float(spec, "length_penalty", -math.inf, math.inf, False, "a finite float")
    _check_int(spec, "max_new_tokens", 1)
    _check_int(spec, "seed", 0)
    if spec.early_stopping not in (True, False, "never"):
        _fail("early_stopping", spec.early_stopping, 'true, false or "never"')
    _check_strategy(spec)
    _check_order(spec)
    _check_branch_and_forced(spec)


def _check_strategy(spec: LaneSpec) -> None:
    if spec.is_beam and spec.do_sample:
        _fail("do_sample", True, "false when num_beams > 1 (beam sampling is not supported)")
    limit = spec.num_beams
    value = spec.num_return_sequences
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        _fail("num_return_sequences", value, f"an integer in [1, num_beams={limit}]")
    if not spec.do_sample:
        for name in sorted(SAMPLING_WARPERS):
            if _is_set(spec, name):
                _fail(name, getattr(spec, name), "unset unless do_sample=true (use a sample: lane)")
    if spec.seed is not None and not spec.do_sample:
        _fail("seed", spec.seed, "unset unless do_sample=true (greedy and beam lanes draw nothing)")
    if not all(isinstance(s, str) and s for s in spec.stop_strings):
        _fail("stop_strings", list(spec.stop_strings), "non-empty strings")
    if spec.stop_strings and spec.is_beam:
        _fail("stop_strings", list(spec.stop_strings), "none on a beam lane (beams stop on eos and length)")


def _check_order(spec: LaneSpec) -> None:
    order = spec.processor_order
    if order is None:
        return
    unknown = [name for name in order if name not in PROCESSOR_ORDER]
    if unknown or len(set(order)) != len(order):
        _fail("processor_order", list(order), f"distinct names among {', '.join(PROCESSOR_ORDER)}")
    missing = [name for name in PROCESSOR_ORDER if spec._is_on(name) and name not in order]
    if missing:
        _fail("processor_order", list(order), f"an order naming every active processor (missing {missing})")


def _check_branch_and_forced(spec: LaneSpec) -> None:
    for step, token in spec.forced.items():
        if not isinstance(step, int) or step < 0 or not isinstance(token, int) or token < 0:
            _fail("forced", {step: token}, "{step >= 0: token_id >= 0}")
    if spec.branch is not None and (spec.branch.step < 0 or spec.branch.token_id < 0):
        _fail("branch", spec.branch, "step >= 0 and token_id >= 0")


def _reject_unknown(kwargs: dict[str, Any]) -> None:
    known = {f.name for f in fields(LaneSpec)} - {"name", "branch"}
    for key in kwargs:
        if key not in known:
            raise ValueError(f"unknown lane parameter {key!r}: allowed {', '.join(sorted(known))}")


# --------------------------------------------------------------------------------------- presets and parsing

PRESETS: dict[str, LaneSpec] = {
    "Greedy": LaneSpec(name="greedy"),
    "Beam 4": LaneSpec(name="beam-4", num_beams=4),
    "Top-k 50": LaneSpec(name="top-k 50", do_sample=True, top_k=50),
    "Top-p 0.9": LaneSpec(name="top-p 0.9", do_sample=True, top_p=0.9),
    "Temperature 1.3": LaneSpec(name="T 1.3", do_sample=True, temperature=1.3),
    "Min-p 0.05": LaneSpec(name="min-p 0.05", do_sample=True, min_p=0.05),
    "creative": LaneSpec(name="creative", do_sample=True, temperature=1.2, min_p=0.05),
    "precise": LaneSpec(name="precise", do_sample=True, temperature=0.5, top_k=20, top_p=0.8,
                        repetition_penalty=1.1),
}
DEFAULT_LANES = ("Greedy", "Beam 4", "Top-k 50", "Top-p 0.9", "Temperature 1.3")
LANE_KINDS = ("greedy", "beam", "sample", "config")

# Keys a generation_config.json may hold that Branchpoint does not implement: refused unless at their default.
_UNSUPPORTED_CONFIG_KEYS: dict[str, Any] = {
    "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "encoder_repetition_penalty": 1.0, "bad_words_ids": None,
    "num_beam_groups": 1, "diversity_penalty": 0.0, "penalty_alpha": None, "suppress_tokens": None,
    "begin_suppress_tokens": None, "forced_bos_token_id": None, "forced_eos_token_id": None,
    "sequence_bias": None, "guidance_scale": None, "exponential_decay_length_penalty": None,
    "constraints": None, "force_words_ids": None, "min_length": 0, "renormalize_logits": False,
    "dola_layers": None,
}
_INT_KEYS = {"top_k", "no_repeat_ngram_size", "min_new_tokens", "num_beams", "num_return_sequences",
             "max_new_tokens", "seed"}
_FLOAT_KEYS = {"temperature", "top_p", "min_p", "typical_p", "repetition_penalty", "length_penalty"}
_LIST_KEYS = {"stop_strings", "processor_order"}


def default_lanes() -> list[LaneSpec]:
    return [PRESETS[name] for name in DEFAULT_LANES]


def preset_by_key(key: str) -> LaneSpec | None:
    """A preset by its display name or its lane name ("Top-p 0.9", "top-p 0.9", "top-p-0.9")."""
    wanted = key.strip().lower().replace("-", " ")
    for title, spec in PRESETS.items():
        if wanted in (title.lower().replace("-", " "), spec.name.lower().replace("-", " ")):
            return spec
    return None


def parse_lane(text: str) -> LaneSpec:
    """Parse a CLI lane spec: `greedy`, `beam:num_beams=4,length_penalty=1.0`, `sample:top_p=0.9,seed=7`,
    `config:path/to/generation_config.json`, or a preset name. Raises ValueError with one clear line."""
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip().lower()
    if kind == "config":
        return spec_from_generation_config(Path(rest.strip()))
    if kind not in LANE_KINDS:
        preset = preset_by_key(text)
        if preset is not None:
            return preset
        presets = ", ".join(p.name for p in PRESETS.values())
        raise ValueError(f"unknown lane kind {kind!r} in {text!r}: use one of {', '.join(LANE_KINDS)} "
                         f"or a preset ({presets})")
    values = _parse_pairs(rest, text)
    values.setdefault("do_sample", kind == "sample")
    if kind == "beam" and "num_beams" not in values:
        raise ValueError(f"beam lane {text!r} needs num_beams (an integer >= 2)")
    if kind == "beam" and values["num_beams"] < 2:
        _fail("num_beams", values["num_beams"], "an integer >= 2 for a beam lane")
    name = values.pop("name", None) or _auto_name(kind, values)
    _reject_unknown(values)
    return LaneSpec(name=name, **values)


def _parse_pairs(rest: str, text: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"expected key=value in lane spec {text!r}, got {pair!r}")
        values[key] = _parse_value(key, raw.strip())
    return values


def _parse_value(key: str, raw: str) -> Any:
    if key == "name":
        return raw
    if key in _LIST_KEYS:
        return tuple(item for item in raw.split("|") if item)
    if key in ("do_sample", "early_stopping"):
        lowered = raw.lower()
        if key == "early_stopping" and lowered == "never":
            return "never"
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        _fail(key, raw, "true or false" + (' or "never"' if key == "early_stopping" else ""))
    if key in _INT_KEYS:
        try:
            return int(raw)
        except ValueError:
            _fail(key, raw, "an integer")
    if key in _FLOAT_KEYS:
        try:
            return float(raw)
        except ValueError:
            _fail(key, raw, "a number")
    _reject_unknown({key: raw})
    raise AssertionError("unreachable")


def _auto_name(kind: str, values: dict[str, Any]) -> str:
    if kind == "beam":
        return f"beam-{values['num_beams']}"
    parts = [f"{key.replace('_', '-')} {value}" for key, value in values.items()
             if key in PROCESSOR_ORDER and key != "temperature"]
    if "temperature" in values:
        parts.insert(0, f"T {values['temperature']}")
    return " ".join(parts) or kind


def spec_from_generation_config(path: Path, name: str | None = None) -> LaneSpec:
    """A lane applying what a transformers generation_config.json means, transformers' defaults included."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read generation config {str(path)!r}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"generation config {str(path)!r} is not a JSON object")
    for key, default in _UNSUPPORTED_CONFIG_KEYS.items():
        if data.get(key, default) != default:
            raise ValueError(f"generation config {str(path)!r} sets {key}={data[key]!r}, which Branchpoint "
                             "does not implement")
    effective = {**TRANSFORMERS_DEFAULTS, **{k: v for k, v in data.items() if k in TRANSFORMERS_DEFAULTS}}
    return LaneSpec(name=name or f"config {path.parent.name or path.stem}", **_effective_kwargs(effective))


def _effective_kwargs(cfg: dict[str, Any]) -> dict[str, Any]:
    do_sample = bool(cfg["do_sample"])
    kwargs: dict[str, Any] = {"do_sample": do_sample, "num_beams": int(cfg["num_beams"])}
    for key in PROCESSOR_ORDER:
        if cfg.get(key) is not None and (do_sample or key not in SAMPLING_WARPERS):
            kwargs[key] = cfg[key]
    if kwargs["num_beams"] > 1:
        kwargs.update(length_penalty=float(cfg["length_penalty"]), early_stopping=cfg["early_stopping"],
                      num_return_sequences=int(cfg["num_return_sequences"]))
    if cfg["max_new_tokens"] is not None:
        kwargs["max_new_tokens"] = cfg["max_new_tokens"]
    stops = cfg["stop_strings"]
    if stops:
        kwargs["stop_strings"] = (stops,) if isinstance(stops, str) else tuple(stops)
    return kwargs


def assign_seeds(specs: list[LaneSpec], base_seed: int | None) -> list[LaneSpec]:
    """Give every sampled lane without a seed one, so the run can be replayed. With a base seed the lane's
    seed depends only on the base seed and the lane's name (not on the other lanes); without, random."""
    out = []
    for spec in specs:
        if spec.do_sample and spec.seed is None:
            spec = replace(spec, seed=_derived_seed(base_seed, spec.name))
        out.append(spec)
    return out


def _derived_seed(base_seed: int | None, name: str) -> int:
    import hashlib
    import secrets

    if base_seed is None:
        return secrets.randbits(31)
    digest = hashlib.sha256(f"{base_seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def unique_names(specs: list[LaneSpec]) -> list[LaneSpec]:
    """Lane names identify lanes (branch parents, analysis pairs): suffix duplicates with #2, #3..."""
    seen: dict[str, int] = {}
    out = []
    for spec in specs:
        count = seen.get(spec.name, 0) + 1
        seen[spec.name] = count
        out.append(spec if count == 1 else replace(spec, name=f"{spec.name} #{count}"))
    return out
