"""LaneSpec: HF GenerationConfig semantics, no hidden defaults, CLI lane parsing, config: lanes, presets."""

from __future__ import annotations

import json

import pytest

from decoding.chain.spec import (
    PRESETS,
    Branch,
    LaneSpec,
    assign_seeds,
    default_lanes,
    follows_in_run,
    lane_spec,
    parse_lane,
    unique_names,
)
from decoding.records.trace import LaneTrace
from runfiles.generation_config import lane_from_text, read_generation_config


def test_a_lane_applies_only_what_it_sets():
    assert LaneSpec("s", do_sample=True).processors() == []  # no hidden top_k=50
    assert LaneSpec("s", do_sample=True, top_p=0.9, temperature=0.8).processors() == ["temperature", "top_p"]
    off = LaneSpec("s", do_sample=True, top_k=0, top_p=1.0, min_p=0.0, typical_p=1.0, repetition_penalty=1.0)
    assert off.processors() == []
    assert LaneSpec("g", repetition_penalty=1.2, no_repeat_ngram_size=3).processors() == [
        "repetition_penalty",
        "no_repeat_ngram_size",
    ]


def test_processor_order_is_configurable_and_recorded():
    spec = LaneSpec("s", do_sample=True, top_k=40, temperature=0.7, processor_order=("top_k", "temperature"))
    assert spec.processors() == ["top_k", "temperature"]
    assert spec.to_config()["processor_order"] == ["top_k", "temperature"]
    with pytest.raises(ValueError, match="processor_order"):
        LaneSpec("s", do_sample=True, top_k=40, temperature=0.7, processor_order=("top_k",))


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"do_sample": True, "temperature": 0.0}, "temperature"),
        ({"do_sample": True, "top_k": -1}, "top_k"),
        ({"do_sample": True, "top_p": 1.5}, "top_p"),
        ({"do_sample": True, "min_p": -0.1}, "min_p"),
        ({"do_sample": True, "typical_p": 0.0}, "typical_p"),
        ({"repetition_penalty": 0.0}, "repetition_penalty"),
        ({"no_repeat_ngram_size": -2}, "no_repeat_ngram_size"),
        ({"num_beams": 0}, "num_beams"),
        ({"num_beams": 2, "num_return_sequences": 3}, "num_return_sequences"),
        ({"num_beams": 2, "early_stopping": "sometimes"}, "early_stopping"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"do_sample": True, "seed": -1}, "seed"),
        ({"temperature": 0.5}, "temperature"),  # a warper on a greedy lane would silently do nothing
        ({"seed": 3}, "seed"),
        ({"num_beams": 2, "do_sample": True}, "do_sample"),
        ({"num_beams": 2, "stop_strings": ("x",)}, "stop_strings"),
    ],
)
def test_invalid_values_name_the_parameter_value_and_range(kwargs, parameter):
    with pytest.raises(ValueError, match=rf"invalid {parameter}=.*allowed"):
        LaneSpec("x", **kwargs)


def test_parse_cli_lane_specs():
    assert parse_lane("greedy") == LaneSpec("greedy")
    beam = parse_lane("beam:num_beams=4,length_penalty=1.0")
    assert (beam.name, beam.num_beams, beam.length_penalty) == ("beam-4", 4, 1.0)
    sample = parse_lane("sample:top_p=0.9,temperature=0.8,seed=7")
    assert (sample.do_sample, sample.top_p, sample.temperature, sample.seed) == (True, 0.9, 0.8, 7)
    named = parse_lane("sample:name=mine,stop_strings=\\n\\n|END,early_stopping=never,top_k=5")
    assert named.name == "mine" and named.stop_strings == ("\n\n", "END")  # \n is a newline, as in the window
    assert parse_lane("beam:num_beams=2,early_stopping=never").early_stopping == "never"
    assert parse_lane("top-p 0.9") == PRESETS["Top-p 0.9"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sample:top_q=0.9", "unknown lane parameter 'top_q'"),
        ("sample:top_p=2", "invalid top_p=2.0"),
        ("sample:top_k=many", "invalid top_k='many'"),
        ("beam", "needs num_beams"),
        ("beam:num_beams=1", "invalid num_beams=1"),
        ("nucleus:top_p=0.9", "unknown lane kind 'nucleus'"),
        ("sample:top_p", "expected key=value"),
        ("config:/no/such/generation_config.json", "cannot read generation config"),
    ],
)
def test_bad_lane_specs_raise_one_clear_message(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        lane_from_text(text)


def write_config(tmp_path, data):
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_config_lane_applies_transformers_implicit_defaults(tmp_path):
    spec = read_generation_config(
        write_config(tmp_path, {"do_sample": True, "temperature": 0.6, "bos_token_id": 1, "eos_token_id": 2})
    )
    assert spec.do_sample and spec.top_k == 50  # transformers' default top_k applies when the file samples
    assert spec.processors() == ["temperature", "top_k"]
    greedy = read_generation_config(write_config(tmp_path, {"temperature": 0.6, "top_p": 0.9}))
    assert not greedy.do_sample and greedy.processors() == []  # warpers do nothing without do_sample
    beam = lane_from_text(f"config:{write_config(tmp_path, {'num_beams': 3, 'length_penalty': 0.5})}")
    assert beam.num_beams == 3 and beam.length_penalty == 0.5 and beam.early_stopping is False


def test_config_lane_refuses_what_branchpoint_does_not_implement(tmp_path):
    with pytest.raises(ValueError, match="num_beam_groups=2"):
        read_generation_config(write_config(tmp_path, {"num_beams": 4, "num_beam_groups": 2}))
    (tmp_path / "bad.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="not a JSON object"):
        read_generation_config(tmp_path / "bad.json")


def test_presets_and_default_lanes():
    assert set(PRESETS) == {
        "Greedy",
        "Beam 4",
        "Top-k 50",
        "Top-p 0.9",
        "Temperature 1.3",
        "Min-p 0.05",
        "creative",
        "precise",
    }
    defaults = default_lanes()
    assert [s.name for s in defaults] == ["greedy", "beam-4", "top-k 50", "top-p 0.9", "T 1.3"]
    assert defaults[1].num_beams == 4 and defaults[2].top_k == 50 and defaults[4].temperature == 1.3


def test_seeds_derive_from_the_base_seed_and_the_lane_name_only():
    lanes = [LaneSpec("a", do_sample=True, top_k=5), LaneSpec("b", do_sample=True), LaneSpec("g")]
    first = assign_seeds(lanes, 42)
    again = assign_seeds(lanes[1:2] + lanes[:1], 42)
    assert first[0].seed == again[1].seed and first[1].seed == again[0].seed
    assert first[2].seed is None
    assert assign_seeds([lanes[0].with_changes(seed=7)], 42)[0].seed == 7
    assert [s.name for s in unique_names([LaneSpec("a"), LaneSpec("a"), LaneSpec("a")])] == [
        "a",
        "a (2)",
        "a (3)",
    ]


def test_config_round_trip():
    spec = LaneSpec("x", do_sample=True, top_p=0.8, seed=3, stop_strings=("END",), forced={2: 5})
    assert LaneSpec.from_config("x", spec.to_config()) == spec
    with pytest.raises(ValueError, match="unknown lane parameter"):
        LaneSpec.from_config("x", {"do_sample": True, "nucleus": 0.9})


def test_a_branch_is_followed_in_run_only_from_a_single_row_lane_that_is_no_branch():
    greedy, beam = LaneSpec("greedy"), LaneSpec("beam", num_beams=2)
    of_greedy = LaneSpec("g>", branch=Branch("greedy", 2, 7))
    of_beam = LaneSpec("b>", branch=Branch("beam", 2, 7))
    of_branch = LaneSpec("g>>", branch=Branch("g>", 3, 7))
    specs = [greedy, beam, of_greedy, of_beam, of_branch]
    assert [follows_in_run(spec, specs) for spec in (of_greedy, of_beam, of_branch)] == [True, False, False]
    assert not follows_in_run(of_greedy, [of_greedy])  # the parent is not in the run


def test_a_recorded_lane_gives_back_its_spec_markers_and_forced_tokens_included():
    spec = LaneSpec("g>", do_sample=True, seed=4, branch=Branch("greedy", 2, 7), forced={5: 1})
    lane = LaneTrace("g>", spec.to_config(), spec.processors(), branch=spec.branch.to_dict())
    assert lane_spec(lane) == spec
