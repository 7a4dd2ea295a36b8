"""LaneSpec: one decoding strategy as data, with Hugging Face `GenerationConfig` names and semantics.

No hidden defaults: a processor applies only when its parameter is set to something other than its "off" value
(and, like transformers, the sampling warpers only when `do_sample`). Every parameter's type, range, off value
and the lanes it applies to are in `decoding.chain.parameters`. A `config:` lane reads a generation_config.json and
applies what the file means in transformers, its implicit defaults included (`do_sample: true` without `top_k`
means `top_k=50`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import PurePath
from typing import Any

import numpy as np

from decoding.chain.parameters import (
    BY_NAME,
    COMPANIONS,
    GENERATION_CONFIG_DEFAULTS,
    LIST_KINDS,
    ORDER_PRESETS,
    PARAMETERS,
    PROCESSOR_ORDER,
    Parameter,
    active_processors,
    as_json,
    canonical,
    check_companions,
    check_int,
    fail,
    is_active,
)
from decoding.records.trace import LaneTrace, RunTrace


@dataclass(frozen=True)
class Branch:
    """This lane copies lane `parent` before `step`, takes `token_id` at `step`, then follows its own spec."""

    parent: str
    step: int
    token_id: int

    def to_dict(self) -> dict[str, Any]:
        """As run files and LaneTrace.branch hold it."""
        return {"parent": self.parent, "step": self.step, "token_id": self.token_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Branch:
        return cls(parent=data["parent"], step=data["step"], token_id=data["token_id"])


@dataclass(frozen=True)
class FanoutMember:
    """This lane is member `member` (0-based) of the fan-out of lane `group`: the group's spec with seed
    group seed + member (decoding.analysis.fanout)."""

    group: str
    member: int

    def to_dict(self) -> dict[str, Any]:
        """As run files and LaneTrace.fanout hold it."""
        return {"group": self.group, "member": self.member}


@dataclass(frozen=True)
class ReplayOf:
    """This lane re-runs lane `lane` with `token_id` taken at `step` instead of what it chose there: same spec,
    and for a sampled lane the same draws (it draws u at `step` too and discards it), so the two continuations
    differ only by that token (decoding.analysis.branch_not_taken)."""

    lane: str
    step: int
    token_id: int

    def to_dict(self) -> dict[str, Any]:
        """As run files and LaneTrace.replay_of hold it."""
        return {"lane": self.lane, "step": self.step, "token_id": self.token_id}


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
    # transformers' processors beyond the core set
    epsilon_cutoff: float | None = None
    eta_cutoff: float | None = None
    suppress_tokens: tuple[int, ...] = ()
    bad_words_ids: tuple[tuple[int, ...], ...] = ()
    sequence_bias: tuple[tuple[tuple[int, ...], float], ...] = ()
    # llama.cpp's samplers (its names and semantics)
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    penalty_last_n: int | None = None
    dry_multiplier: float | None = None
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = -1
    dry_sequence_breakers: tuple[str, ...] = ("\n", ":", '"', "*")
    top_n_sigma: float | None = None
    xtc_probability: float | None = None
    xtc_threshold: float = 0.1
    mirostat: int | None = None
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    dynatemp_range: float | None = None
    dynatemp_exponent: float = 1.0
    adaptive: bool = False  # entropix-style per-step decision (decoding.chain.adaptive)
    processor_order: tuple[str, ...] | None = None  # None: transformers' order; a preset name becomes its list
    model: str | None = None  # a prepared model's name or folder the lane runs on; None: the run's model
    branch: Branch | None = None
    forced: dict[int, int] = field(default_factory=dict)  # {step: token_id}
    fanout: FanoutMember | None = None
    replay_of: ReplayOf | None = None

    def __post_init__(self) -> None:
        for p in PARAMETERS:  # numpy scalars become Python numbers: the config is written as plain JSON
            value = getattr(self, p.name)
            if isinstance(value, np.generic):
                object.__setattr__(self, p.name, value.item())
            elif p.kind in LIST_KINDS and BY_NAME[p.name].accepts(value):  # lists as tuples, as the CLI makes them
                object.__setattr__(self, p.name, canonical(p, value))
        if isinstance(self.processor_order, str) and self.processor_order in ORDER_PRESETS:
            object.__setattr__(self, "processor_order", ORDER_PRESETS[self.processor_order])
        validate(self)

    @property
    def is_beam(self) -> bool:
        return self.num_beams > 1

    def processors(self) -> list[str]:
        """The processors this lane applies, in the order it applies them (only those that are on)."""
        return active_processors(self.to_config(), self.processor_order)

    def to_config(self) -> dict[str, Any]:
        """The lane's config as plain JSON values: every parameter that is set, strategy parameters always."""
        config: dict[str, Any] = {"do_sample": self.do_sample, "num_beams": self.num_beams}
        if self.is_beam:
            config.update(length_penalty=self.length_penalty, early_stopping=self.early_stopping,
                          num_return_sequences=self.num_return_sequences)
        for name in PROCESSOR_ORDER:
            row, value = BY_NAME[name], getattr(self, name)
            if value is not None and value != ():
                config[name] = as_json(row, value)
            for companion in COMPANIONS[name]:  # all of them when the processor is on: the file says everything
                value = getattr(self, companion.name)
                if companion.is_set(value) or (value is not None and is_active(self.values(), name)):
                    config[companion.name] = as_json(companion, value)
        if self.adaptive:
            config["adaptive"] = True
        for name in ("penalty_last_n", "max_new_tokens", "seed"):
            if getattr(self, name) is not None:
                config[name] = getattr(self, name)
        if self.stop_strings:
            config["stop_strings"] = list(self.stop_strings)
        if self.processor_order is not None:
            config["processor_order"] = list(self.processor_order)
        if self.model is not None:
            config["model"] = self.model
        if self.forced:
            config["forced"] = {str(step): token for step, token in sorted(self.forced.items())}
        return config

    def values(self) -> dict[str, Any]:
        """Every parameter of the table as the lane holds it (validated; unset ones None): what turns its
        processors on and what they are made with (decoding.chain.chain.build_chain)."""
        return {p.name: getattr(self, p.name) for p in PARAMETERS}

    @classmethod
    def from_config(
        cls,
        name: str,
        config: dict[str, Any],
        branch: dict[str, Any] | None = None,
        fanout: dict[str, Any] | None = None,
        replay_of: dict[str, Any] | None = None,
    ) -> LaneSpec:
        """Inverse of to_config plus the lane-level markers (used by JSON import and replay)."""
        kwargs = dict(config)
        for key, value in config.items():
            row = BY_NAME.get(key)
            if row is not None and row.kind in LIST_KINDS and row.accepts(value):
                kwargs[key] = canonical(row, value)
        if "processor_order" in kwargs:
            kwargs["processor_order"] = tuple(kwargs["processor_order"])
        if "forced" in kwargs:
            kwargs["forced"] = {int(step): int(token) for step, token in kwargs["forced"].items()}
        _reject_unknown(kwargs)
        return cls(
            name=name,
            branch=Branch.from_dict(branch) if branch else None,
            fanout=FanoutMember(**fanout) if fanout else None,
            replay_of=ReplayOf(**replay_of) if replay_of else None,
            **kwargs,
        )

    def with_changes(self, **changes: Any) -> LaneSpec:
        return replace(self, **changes)


def lane_spec(lane: LaneTrace) -> LaneSpec:
    """The spec a recorded lane was made with, its branch, fan-out and replay markers included."""
    return LaneSpec.from_config(lane.name, lane.config, lane.branch, lane.fanout, lane.replay_of)


def specs_of(trace: RunTrace) -> list[LaneSpec]:
    """The specs a recorded run's lanes were made with, seeds included (file import, replay, restore)."""
    return [lane_spec(lane) for lane in trace.lanes]


def follows_in_run(branch_lane: LaneSpec, specs: Sequence[LaneSpec]) -> bool:
    """Whether a run of `specs` follows this branch lane inside the run (copying its parent's records, then
    forking its parent's KV row at the branch step): its parent is a lane of the run with one row that is not
    itself a branch. Any other branch runs after the run from its parent's tokens (a Prefix)."""
    parent = next((spec for spec in specs if spec.name == branch_lane.branch.parent), None)
    return parent is not None and not parent.is_beam and parent.branch is None


# ------------------------------------------------------------------------------------------------ validation


def validate(spec: LaneSpec) -> None:
    """Each parameter against its row of the parameter table, then the rules between parameters."""
    if not isinstance(spec.name, str) or not spec.name.strip():
        fail("name", spec.name, "a non-empty string")
    if spec.model is not None and (not isinstance(spec.model, str) or not spec.model.strip()):
        fail("model", spec.model, "a prepared model's name (unset: the run's model)")
    for p in PARAMETERS:
        value = getattr(spec, p.name)
        if value is not None or p.default is not None:  # None is "unset" where the default is unset
            p.check(value)
    _check_strategy(spec)
    config = spec.values()
    check_companions(config)
    _check_combinations(spec, active_processors(config, spec.processor_order))  # an order names every active one
    _check_branch_and_forced(spec)


# the truncations mirostat's own cut replaces (llama.cpp's mirostat mode applies temperature and mirostat only;
# a Branchpoint chain may keep penalties, DRY and XTC before it: they reshape, mirostat then cuts by its mu)
_NOT_WITH_MIROSTAT = ("top_k", "top_p", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "top_n_sigma",
                      "dynatemp_range")


def _check_combinations(spec: LaneSpec, chain: list[str]) -> None:
    """Parameters that make no sense together: a ParameterError naming one, its rule naming the other."""
    if "mirostat" in chain and spec.adaptive:
        fail("adaptive", True, f"false with mirostat={spec.mirostat} (both decide each step's truncation)")
    if "mirostat" in chain:
        for name in _NOT_WITH_MIROSTAT:
            if name in chain:
                fail(name, getattr(spec, name), f"unset with mirostat={spec.mirostat} (mirostat chooses its own "
                     "truncation, as llama.cpp's mirostat replaces its other samplers)")
    windowed = ("repetition_penalty", "frequency_penalty")
    if spec.penalty_last_n is not None and not any(name in chain for name in windowed):
        fail("penalty_last_n", spec.penalty_last_n, "unset unless repetition_penalty, frequency_penalty or "
             "presence_penalty is set (it is their window)")


def _check_strategy(spec: LaneSpec) -> None:
    if spec.is_beam and spec.do_sample:
        fail("do_sample", True, "false when num_beams > 1 (beam sampling is not supported)")
    check_int("num_return_sequences", spec.num_return_sequences, 1, spec.num_beams, "num_beams")
    for p in PARAMETERS:
        value = getattr(spec, p.name)
        refused = p.applies_to.requirement is not None and not p.applies_to.include(spec.do_sample, spec.num_beams)
        if refused and p.is_set(value):
            fail(p.name, list(value) if p.kind == "text" else value, p.applies_to.requirement)


def _check_branch_and_forced(spec: LaneSpec) -> None:
    for step, token in spec.forced.items():
        if not isinstance(step, int) or step < 0 or not isinstance(token, int) or token < 0:
            fail("forced", {step: token}, "{step >= 0: token_id >= 0}")
    if spec.branch is not None and (spec.branch.step < 0 or spec.branch.token_id < 0):
        fail("branch", spec.branch, "step >= 0 and token_id >= 0")
    _check_markers(spec)


def _check_markers(spec: LaneSpec) -> None:
    member = spec.fanout
    if member is not None:
        if not spec.do_sample:
            fail("fanout", member, "only on sampled lanes (do_sample=true)")
        if not isinstance(member.group, str) or not member.group.strip():
            fail("fanout", member, "a non-empty group name")
        if isinstance(member.member, bool) or not isinstance(member.member, int) or member.member < 0:
            fail("fanout", member, "member an integer >= 0")
    replay = spec.replay_of
    if replay is not None:
        if not isinstance(replay.lane, str) or not replay.lane.strip():
            fail("replay_of", replay, "a non-empty lane name")
        if replay.step < 0 or replay.token_id < 0:
            fail("replay_of", replay, "step >= 0 and token_id >= 0")
        if spec.branch is not None and replay.step <= spec.branch.step:
            fail("replay_of", replay, f"a step after the lane's branch step {spec.branch.step}")


def _reject_unknown(kwargs: dict[str, Any]) -> None:
    known = {f.name for f in fields(LaneSpec)} - {"name", "branch", "fanout", "replay_of"}
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
# The same settings in transformers' order (temperature first) and in llama.cpp's (temperature last), one seed: a
# pair of lanes whose texts part only because of the order (for a preset pair and a tour stop in the window).
ORDER_PAIR: tuple[LaneSpec, LaneSpec] = (
    LaneSpec(name="transformers order", do_sample=True, temperature=1.5, top_k=40, top_p=0.9, min_p=0.05, seed=1),
    LaneSpec(name="llama.cpp order", do_sample=True, temperature=1.5, top_k=40, top_p=0.9, min_p=0.05, seed=1,
             processor_order=ORDER_PRESETS["llama.cpp"]),
)
LANE_KINDS = ("greedy", "beam", "sample", "config")

# Keys a generation_config.json may hold that Branchpoint does not implement: refused unless at their default.
_UNSUPPORTED_CONFIG_KEYS: dict[str, Any] = {
    "encoder_repetition_penalty": 1.0, "num_beam_groups": 1, "diversity_penalty": 0.0, "penalty_alpha": None,
    "begin_suppress_tokens": None, "forced_bos_token_id": None, "forced_eos_token_id": None,
    "guidance_scale": None, "exponential_decay_length_penalty": None,
    "constraints": None, "force_words_ids": None, "min_length": 0, "renormalize_logits": False,
    "dola_layers": None,
}


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
    """Parse a CLI lane spec: `greedy`, `beam:num_beams=4,length_penalty=1.0`, `sample:top_p=0.9,seed=7`, or a
    preset name. Raises ValueError with one clear line. (`config:PATH` reads a file: runfiles.lane_from_text.)"""
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip().lower()
    if kind == "config":
        raise ValueError(f"{text!r} names a generation config file: read it with runfiles.lane_from_text")
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
        fail("num_beams", values["num_beams"], "an integer >= 2 for a beam lane")
    name = values.pop("name", None) or _auto_name(kind, values)
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
    """One CLI value as its parameter's type says; the range is checked by LaneSpec."""
    if key in ("name", "model"):
        return raw
    if key == "processor_order":
        return ORDER_PRESETS.get(raw) or tuple(item for item in raw.split("|") if item)
    p = BY_NAME.get(key)
    if p is None:
        settable = ", ".join(["name", *BY_NAME, "processor_order", "model"])
        raise ValueError(f"unknown lane parameter {key!r}: allowed {settable}")
    if p.kind == "text":
        return parse_stop_strings(raw)
    if p.kind in ("ids", "id_lists", "biases"):
        return parse_id_list(p, raw)
    if p.kind in ("bool", "choice"):
        words = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
        words.update({choice: choice for choice in p.choices if isinstance(choice, str)})
        if raw.lower() not in words:
            fail(key, raw, p.allowed_values())
        return words[raw.lower()]
    try:
        return int(raw) if p.kind == "int" else float(raw)
    except ValueError:
        fail(key, raw, p.allowed_values())


def parse_id_list(p: Parameter, raw: str) -> tuple:
    """Token ids on the command line: `ids` as `5|7`, `id_lists` as `5 6|7` (ids of one sequence by spaces,
    sequences by |), `biases` as `5 6:-2.5|7:1` (a sequence, a colon, its bias)."""
    try:
        items = [item.strip() for item in raw.split("|") if item.strip()]
        if p.kind == "ids":
            return tuple(int(item) for item in items)
        if p.kind == "id_lists":
            return tuple(tuple(int(token) for token in item.split()) for item in items)
        pairs = [item.rpartition(":") for item in items]
        return tuple((tuple(int(token) for token in ids.split()), float(bias)) for ids, _, bias in pairs)
    except ValueError:
        fail(p.name, raw, p.allowed_values())


_ESCAPES = {"n": "\n", "t": "\t", "|": "|", "\\": "\\"}


def parse_stop_strings(text: str) -> tuple[str, ...]:
    r"""Stop strings typed on one line, as the command line's `stop_strings=` and the window's lane editor both
    take them: `|` separates them, `\n` is a newline, `\t` a tab, `\|` a `|` and `\\` a backslash; a
    backslash before any other character stays as typed; empty strings are dropped.

    >>> from decoding.chain.spec import parse_stop_strings
    >>> parse_stop_strings(r"\n\n|END")
    ('\n\n', 'END')
    >>> parse_stop_strings(r"a\|b|C:\x")
    ('a|b', 'C:\\x')
    """
    strings, current = [], []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            current.append(_ESCAPES.get(following, char + following))
        elif char == "|":
            strings.append("".join(current))
            current = []
        else:
            current.append(char)
    strings.append("".join(current))
    return tuple(string for string in strings if string)


def format_stop_strings(strings: Sequence[str]) -> str:
    r"""Stop strings as one line that parse_stop_strings reads back.

    >>> from decoding.chain.spec import format_stop_strings
    >>> print(format_stop_strings(("\n\n", "a|b", "C:\\x")))
    \n\n|a\|b|C:\\x
    """
    escaped = (s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "\\n").replace("\t", "\\t") for s in strings)
    return "|".join(escaped)


def _auto_name(kind: str, values: dict[str, Any]) -> str:
    """The strategy's name, and the lane's own model's folder name after it ("greedy · SmolLM2-135M-Instruct-int4")."""
    model = f" · {PurePath(values['model']).name}" if values.get("model") else ""
    if kind == "beam":
        return f"beam-{values['num_beams']}{model}"
    parts = [f"{key.replace('_', '-')} {short_value(value)}" for key, value in values.items()
             if key in PROCESSOR_ORDER and key != "temperature"]
    if "temperature" in values:
        parts.insert(0, f"T {values['temperature']}")
    return (" ".join(parts) or kind) + model


def short_value(value: Any) -> str:
    """A value in a lane's name: token ids as the command line writes them (28|30, 5 6|7, 5 6:-2.0), else as is."""
    if not isinstance(value, tuple):
        return str(value)
    if value and isinstance(value[0], tuple) and value[0] and isinstance(value[0][0], tuple):  # sequence_bias
        return "|".join(f"{' '.join(map(str, ids))}:{bias}" for ids, bias in value)
    return "|".join(" ".join(map(str, item)) if isinstance(item, tuple) else str(item) for item in value)


def spec_from_generation_config(data: Any, source: str, name: str) -> LaneSpec:
    """A lane applying what a transformers generation_config.json's contents `data` mean, transformers' defaults
    included (`source`: the file, for messages; the file is read by runfiles.read_generation_config)."""
    if not isinstance(data, dict):
        raise ValueError(f"generation config {source!r} is not a JSON object")
    for key, default in _UNSUPPORTED_CONFIG_KEYS.items():
        if data.get(key, default) != default:
            raise ValueError(f"generation config {source!r} sets {key}={data[key]!r}, which Branchpoint "
                             "does not implement")
    defaults = GENERATION_CONFIG_DEFAULTS
    effective = {**defaults, **{k: v for k, v in data.items() if k in defaults}}
    return LaneSpec(name=name, **_effective_kwargs(effective))


def generation_config_of(spec: LaneSpec) -> dict[str, Any]:
    """The generation_config.json contents that make transformers decode as this lane (read back by
    spec_from_generation_config, the same lane). A sampled lane writes every warper, those it leaves off at
    their off value, so transformers' implicit defaults (top_k=50 when sampling) add nothing; a greedy lane
    writes no warper and a single-row lane no beam parameter (transformers warns about those). Raises
    ValueError for what a generation config cannot say: a processor order of the lane's own. The seed, forced
    tokens and branch point are not generation-config keys and are left out."""
    if spec.processor_order is not None and spec.processors() != active_processors(spec.to_config()):
        fail("processor_order", list(spec.processor_order),
             "transformers' order in a generation_config.json (it has no key for another order)")
    for name in spec.processors():
        if not BY_NAME[name].in_generation_config:
            fail(name, getattr(spec, name), "unset in a generation_config.json (a llama.cpp sampler transformers "
                 "does not have)")
    config: dict[str, Any] = {"do_sample": spec.do_sample, "num_beams": spec.num_beams}
    for name in PROCESSOR_ORDER:
        row, value = BY_NAME[name], getattr(spec, name)
        if not row.in_generation_config or not row.applies_to.include(spec.do_sample, spec.num_beams):
            continue
        if value is None and row.hf_default is not None:
            value = row.off  # transformers would otherwise apply its default (top_k=50)
        if value is not None and value != ():
            config[name] = as_json(row, value)
    if spec.is_beam:
        config.update(length_penalty=spec.length_penalty, early_stopping=spec.early_stopping,
                      num_return_sequences=spec.num_return_sequences)
    if spec.max_new_tokens is not None:
        config["max_new_tokens"] = spec.max_new_tokens
    if spec.stop_strings:
        config["stop_strings"] = list(spec.stop_strings)
    return config


def _effective_kwargs(cfg: dict[str, Any]) -> dict[str, Any]:
    do_sample = bool(cfg["do_sample"])
    kwargs: dict[str, Any] = {"do_sample": do_sample, "num_beams": int(cfg["num_beams"])}
    for key in PROCESSOR_ORDER:
        row = BY_NAME[key]
        if cfg.get(key) is not None and row.in_generation_config and row.applies_to.include(do_sample,
                                                                                            kwargs["num_beams"]):
            kwargs[key] = canonical(row, cfg[key])
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


def unique_name(wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted (2)`, `(3)`... if a lane already has that name ("#k" names a fan-out's members: a
    second "top-k 50" named "top-k 50 #2" met the first one's member #2 when that one fanned out)."""
    if wanted not in taken:
        return wanted
    number = 2
    while f"{wanted} ({number})" in taken:
        number += 1
    return f"{wanted} ({number})"


def unique_names(specs: list[LaneSpec]) -> list[LaneSpec]:
    """Lane names identify lanes (branch parents, analysis pairs): suffix duplicates with (2), (3)..."""
    taken: set[str] = set()
    out = []
    for spec in specs:
        name = unique_name(spec.name, taken)
        taken.add(name)
        out.append(spec if name == spec.name else replace(spec, name=name))
    return out
