"""The parameter table drives validation: every range is enforced, with a message naming the parameter, the
value and the allowed range, through LaneSpec, the CLI lane parser and a config of its own (build_processors);
a lane's chain carries the validated value as is; the window's lane editor and docs/json-format.md agree with it."""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from decoding.analysis.fanout import check_fanout
from decoding.chain import llama_samplers as L
from decoding.chain import processors as P
from decoding.chain.chain import build_chain, build_processors
from decoding.chain.parameters import (
    BY_NAME,
    LLAMA_CPP_ORDER,
    ORDER_PRESETS,
    PARAMETERS,
    PROCESSOR_ORDER,
    Allowed,
    Parameter,
    ParameterError,
    Range,
    Strategies,
    parameter,
)
from decoding.chain.spec import LaneSpec, parse_lane, unique_name, unique_names
from gui.present.lane_fields import FIELDS_BY_NAME

DOC = Path(__file__).resolve().parents[2] / "docs" / "json-format.md"


def outside(allowed: Range) -> list[Any]:
    """Values just outside `allowed`, at its open ends, and of the wrong type."""
    step = 1 if allowed.integer else 0.5
    values: list[Any] = ["many", True, None]
    if allowed.low > -math.inf:
        values += [allowed.low - step] + ([allowed.low] if allowed.low_open else [])
    if allowed.high < math.inf:
        values += [allowed.high + step] + ([allowed.high] if allowed.high_open else [])
    values += [2.5] if allowed.integer else [math.nan, math.inf, -math.inf]
    return values


def inside(allowed: Range) -> list[Any]:
    """The closed ends, and a value in between."""
    values = [end for end, is_open in ((allowed.low, allowed.low_open), (allowed.high, allowed.high_open))
              if math.isfinite(end) and not is_open]
    return values + [next(v for v in (2, 0.5, 1, 3) if allowed.contains(v))]


def invalid_values(p: Parameter) -> list[Any]:
    if p.range is not None:
        return [v for v in outside(p.range) if v is not None or p.default is not None]
    if p.kind == "bool":
        return [1, "yes", None]
    if p.kind == "choice":
        return ["sometimes", 1, None]
    return {"text": [("",), ("ok", 3), "END"], "ids": [(-1,), ("a",), 5], "id_lists": [((),), ((-1,),), (1, 2)],
            "biases": [(((1,), "a"),), (((), 1.0),), (((1,), math.inf),)]}[p.kind]


def strategy(p: Parameter) -> dict[str, Any]:
    """A lane the parameter applies to (a companion's processor on)."""
    lane: dict[str, Any] = {}
    if p.applies_to is Strategies.SAMPLING:
        lane = {"do_sample": True}
    if p.applies_to is Strategies.BEAM:
        lane = {"num_beams": 4}
    if p.stage is not None:
        lane[p.stage] = 1 if BY_NAME[p.stage].kind == "int" else 0.5
    if p.name == "penalty_last_n":
        lane["frequency_penalty"] = 0.5
    return lane


def message(p: Parameter, value: Any, allowed: str | None = None) -> str:
    return re.escape(f"invalid {p.name}={value!r}: allowed {allowed or p.allowed()}")


@pytest.mark.parametrize("p", PARAMETERS, ids=lambda p: p.name)
def test_lane_spec_enforces_every_range_of_the_table(p):
    for value in invalid_values(p):
        kwargs = {**strategy(p), p.name: value}
        with pytest.raises(ValueError, match=message(p, value)):
            LaneSpec("x", **kwargs)
    for value in inside(p.range) if p.range is not None else []:
        assert getattr(LaneSpec("x", **{**strategy(p), p.name: value}), p.name) == value
    if p.default is None:
        assert getattr(LaneSpec("x", **strategy(p)), p.name) is None  # unset is allowed


@pytest.mark.parametrize("p", PARAMETERS, ids=lambda p: p.name)
def test_a_refusal_carries_the_parameter_the_value_and_the_bound(p):
    for value in invalid_values(p):
        with pytest.raises(ParameterError) as refused:
            LaneSpec("x", **{**strategy(p), p.name: value})
        error = refused.value
        assert (error.parameter, error.allowed) == (p.name, p.allowed_values())
        assert error.value is value or error.value == value
        assert str(error) == f"invalid {p.name}={value!r}: allowed {error.allowed.describe()}"


def test_the_kind_of_bound_of_ranges_lists_and_rules():
    with pytest.raises(ParameterError) as refused:
        LaneSpec("x", do_sample=True, top_p=1.5)
    bound = refused.value.allowed
    assert (bound.kind, bound.range.low, bound.range.high, bound.range.brackets) == ("float", 0.0, 1.0, ("[", "]"))
    with pytest.raises(ParameterError) as refused:
        LaneSpec("x", num_beams=2, num_return_sequences=3)
    bound = refused.value.allowed
    assert (bound.kind, bound.range.low_text, bound.range.high_text) == ("integer", "1", "num_beams=2")
    with pytest.raises(ParameterError) as refused:
        LaneSpec("x", num_beams=4, do_sample=True)
    assert refused.value.allowed == Allowed("rule", rule="false when num_beams > 1 (beam sampling is not supported)")
    with pytest.raises(ParameterError, match=r"^invalid fanout=65: allowed an integer in \[1, 64\]$") as refused:
        check_fanout(65)
    assert (refused.value.parameter, refused.value.allowed.range.high) == ("fanout", 64)


def test_the_combination_refusals_are_rules_naming_both_parameters():
    """issue-24's refusals of parameters that make no sense together are ParameterErrors of kind "rule" (the
    window translates them from their fields), their English sentence naming both parameters."""
    cases = [
        ({"do_sample": True, "mirostat": 2, "top_k": 4}, "top_k", 4,
         "unset with mirostat=2 (mirostat chooses its own truncation, as llama.cpp's mirostat replaces its other "
         "samplers)"),
        ({"do_sample": True, "mirostat": 1, "adaptive": True}, "adaptive", True,
         "false with mirostat=1 (both decide each step's truncation)"),
        ({"penalty_last_n": 8}, "penalty_last_n", 8,
         "unset unless repetition_penalty, frequency_penalty or presence_penalty is set (it is their window)"),
        ({"dry_base": 2.0}, "dry_base", 2.0, "its default (1.75) unless dry_multiplier is set: it configures that "
         "processor"),
        ({"do_sample": True, "mirostat": 2, "top_k": 4, "processor_order": ("mirostat", "top_k")},
         "processor_order", ["mirostat", "top_k"], None),
    ]
    for kwargs, name, value, rule in cases:
        with pytest.raises(ParameterError) as refused:
            LaneSpec("x", **kwargs)
        error = refused.value
        assert (error.parameter, error.value, error.allowed.kind) == (name, value, "rule")
        if rule is not None:
            assert error.allowed.rule == rule
            assert str(error) == f"invalid {name}={value!r}: allowed {rule}"
    with pytest.raises(ParameterError) as refused:
        parse_lane("sample:suppress_tokens=a|b")
    assert refused.value.allowed == Allowed("rule", rule="a list of token ids (integers >= 0)")


def test_a_refusal_survives_pickling_with_its_fields():
    import pickle

    with pytest.raises(ParameterError) as refused:
        LaneSpec("x", num_beams=2, early_stopping="x")
    copy = pickle.loads(pickle.dumps(refused.value))
    assert (str(copy), copy.parameter, copy.value, copy.allowed) == (
        str(refused.value), "early_stopping", "x", refused.value.allowed)
    assert copy.allowed.kind == "choice" and str(copy) == 'invalid early_stopping=\'x\': allowed false, true or "never"'


def cli_text(p: Parameter, raw: str) -> str:
    prefix = {Strategies.SAMPLING: "sample:", Strategies.BEAM: "beam:num_beams=4,"}.get(p.applies_to, "greedy:")
    return f"{prefix}{p.name}={raw}"


def parsed(p: Parameter, raw: str) -> Any:
    """The value a message shows for what was typed: the number when it reads as one, else the text."""
    try:
        return int(raw) if p.kind == "int" else float(raw)
    except ValueError:
        return raw


@pytest.mark.parametrize("p", [p for p in PARAMETERS if p.kind != "text"], ids=lambda p: p.name)
def test_the_cli_lane_parser_enforces_every_range_of_the_table(p):
    typed = ["many"]
    if p.range is not None:
        typed += [str(v) for v in outside(p.range) if isinstance(v, int | float) and not isinstance(v, bool)]
    for raw in typed:
        with pytest.raises(ValueError, match=message(p, parsed(p, raw) if p.range else raw)):
            parse_lane(cli_text(p, raw))


PROCESSOR_CLASSES = {cls.name: cls for cls in (
    P.RepetitionPenalty, P.NoRepeatNGram, P.MinNewTokens, P.Temperature, P.TopK, P.TopP, P.MinP, P.Typical,
    P.Epsilon, P.Eta, P.SuppressTokens, P.BadWords, P.SequenceBias, L.FrequencyPresencePenalty, L.Dry,
    L.TopNSigma, L.Xtc, L.Mirostat, L.DynamicTemperature)}


def processor_value(processor: P.Processor, name: str) -> Any:
    return processor.params()["mirostat" if name == "mirostat" else name]


def lane_with(p: Parameter, value: Any) -> LaneSpec:
    """A lane turning processor `p` on with `value` (mirostat alone: it refuses the other truncations)."""
    lane = {"do_sample": True, "seed": 1, p.name: value}
    if p.name == "dynatemp_range":
        lane["temperature"] = 1.0
    return LaneSpec("x", **lane)


@pytest.mark.parametrize("p", [p for p in PARAMETERS if p.is_processor and p.range is not None],
                         ids=lambda p: p.name)
def test_a_lanes_chain_carries_each_validated_value_as_it_is(p):
    """Checked once, when the LaneSpec is made (test_lane_spec_enforces_every_range_of_the_table): the chain's
    stage holds that very value, for every value in range that turns the processor on."""
    for value in [v for v in inside(p.range) if v != p.off]:
        spec = lane_with(p, value)
        (stage,) = [s for s in build_chain(spec, 3, [2]).stages if s.name == p.name]
        assert processor_value(stage, p.name) == value and type(processor_value(stage, p.name)) is type(value)


@pytest.mark.parametrize("p", [p for p in PARAMETERS if p.is_processor], ids=lambda p: p.name)
def test_a_config_of_its_own_is_checked_against_the_table(p):
    """build_processors, for a config no LaneSpec validated, refuses what LaneSpec refuses, in the same words."""
    for value in invalid_values(p):
        if value is None:  # unset
            continue
        with pytest.raises(ValueError, match=message(p, value)):
            build_processors({**strategy(p), p.name: value}, 3, [2])


def test_every_processor_has_its_row_and_its_place_in_each_order():
    assert set(PROCESSOR_CLASSES) == {p.name for p in PARAMETERS if p.is_processor}
    assert PROCESSOR_ORDER[1:] == (
        "repetition_penalty", "frequency_penalty", "dry_multiplier", "no_repeat_ngram_size", "bad_words_ids",
        "min_new_tokens", "suppress_tokens", "temperature", "dynatemp_range", "top_k", "top_p", "min_p", "typical_p",
        "epsilon_cutoff", "eta_cutoff", "top_n_sigma", "xtc_probability", "mirostat")
    assert sorted(LLAMA_CPP_ORDER) == sorted(PROCESSOR_ORDER) and ORDER_PRESETS["llama.cpp"] == LLAMA_CPP_ORDER
    # llama.cpp's default order of the samplers it has (common_params_sampling.samplers), mirostat after them
    llama = [name for name in LLAMA_CPP_ORDER if parameter(name).follows == "llama.cpp" or name in (
        "repetition_penalty", "top_k", "typical_p", "top_p", "min_p", "temperature")]
    assert llama == ["repetition_penalty", "frequency_penalty", "dry_multiplier", "top_n_sigma", "top_k",
                     "typical_p", "top_p", "min_p", "xtc_probability", "temperature", "dynatemp_range", "mirostat"]
    for p in PARAMETERS:
        if p.is_processor:  # the off value is what the spec accepts and builds nothing from
            assert p.accepts(p.off) if p.off is not None else p.accepts(p.default)
            off = p.off if p.off is not None else p.default
            assert build_processors({"do_sample": True, p.name: off}, 3, [2]) == []


def test_the_lane_editor_offers_the_tables_values_and_its_open_ends():
    """The widgets reach exactly the table's range, an open end included: typing it (temperature 0) must get
    LaneSpec's refusal in words, not snap silently to the nearest allowed value."""
    for p in PARAMETERS:
        f = FIELDS_BY_NAME[p.name]
        assert f.kind == p.kind and p.meaning in f.tooltip and p.allowed() in f.tooltip
        if p.range is None:
            continue
        lowest = f.minimum + 1 if f.special_text else f.minimum  # the spin box's minimum then means "unset"
        assert p.range.contains(lowest) or (p.range.low_open and lowest == p.range.low), p.name
        assert p.range.contains(f.maximum) or (p.range.high_open and f.maximum == p.range.high), p.name
        assert f.off == (p.off if p.off is not None else p.default if not f.special_text else f.minimum)


def test_messages_name_the_parameter_value_and_range():
    assert parameter("top_p").allowed() == "a float in [0, 1]"
    assert parameter("typical_p").allowed() == "a float in (0, 1]"
    assert parameter("temperature").allowed() == "a float in (0, inf)"
    assert parameter("length_penalty").allowed() == "a finite float"
    assert parameter("early_stopping").allowed() == 'false, true or "never"'
    with pytest.raises(ValueError, match=re.escape("invalid num_return_sequences=5: allowed an integer in "
                                                   "[1, num_beams=4]")):
        LaneSpec("b", num_beams=4, num_return_sequences=5)


def test_the_cli_help_lists_the_parameter_table():
    from cli import run_command

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    text = parser.format_help()
    for p in PARAMETERS:
        assert re.search(rf"^  {p.name} +{re.escape(p.allowed())}", text, re.MULTILINE), p.name
        assert " ".join(p.meaning.split()[:6]) in " ".join(text.split())


def test_numpy_scalars_become_plain_numbers():
    import numpy as np

    spec = LaneSpec("s", do_sample=True, top_k=np.int64(5), top_p=np.float64(0.5))
    assert type(spec.top_k) is int and type(spec.top_p) is float
    json.dumps(spec.to_config())


def test_unique_name_and_unique_names_agree():
    assert unique_name("greedy", {"greedy", "greedy (2)"}) == "greedy (3)"
    assert unique_name("new", {"greedy"}) == "new"
    named = unique_names([LaneSpec("a"), LaneSpec("a (2)"), LaneSpec("a")])
    assert [s.name for s in named] == ["a", "a (2)", "a (3)"]  # never two lanes with one name


# ---------------------------------------------------------------------------------------------- the doc

DOC_HEADER = ("| parameter | type | allowed | default | off | order | llama.cpp order | applies to | meaning | "
              "follows |")


def doc_row(p: Parameter) -> str:
    default = "unset" if p.default is None or p.default == () else json.dumps(
        list(p.default) if isinstance(p.default, tuple) else p.default)
    json_type = {"bool": "boolean", "int": "integer", "float": "number", "choice": "boolean or string",
                 "text": "list of strings", "ids": "list of integers", "id_lists": "list of lists of integers",
                 "biases": "list of [ids, number] pairs"}[p.kind]
    off = "`[]`" if p.off is None and p.is_processor else f"`{json.dumps(p.off)}`" if p.is_processor else ""
    stage = f"with `{p.stage}`" if p.stage else ""
    cells = [
        f"`{p.name}`",
        json_type,
        p.allowed(),
        default,
        off,
        str(PROCESSOR_ORDER.index(p.name) + 1) if p.is_processor else stage,
        str(LLAMA_CPP_ORDER.index(p.name) + 1) if p.is_processor else "",
        p.applies_to.value,
        p.meaning.replace("|", "\\|"),
        f"[`{p.hf_name}`]({p.hf_link})",
    ]
    return "| " + " | ".join(cells) + " |"


def test_the_doc_lists_the_parameter_table():
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert DOC_HEADER in lines, f"docs/json-format.md needs the table header:\n{DOC_HEADER}"
    start = lines.index(DOC_HEADER) + 2  # after the header's separator line
    end = next(i for i in range(start, len(lines) + 1) if i == len(lines) or not lines[i].startswith("|"))
    expected = [doc_row(p) for p in PARAMETERS]
    assert lines[start:end] == expected, "docs/json-format.md's table should read:\n" + "\n".join(expected)
