"""generation_config.json in and out of a lane, against transformers' GenerationConfig reading the same file:
the processors transformers builds from it (classes, order, parameters), the beam settings and the limits are
the lane's. Export → transformers → import gives the lane back."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from decoding.chain.chain import build_processors
from decoding.chain.spec import PRESETS, LaneSpec, generation_config_of
from runfiles.generation_config import read_generation_config
from tests.decoding.test_processors import (
    TRANSFORMERS_NAMES,  # transformers' processor classes by the key that makes them
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

EOS = [2]
PROMPT_LEN = 4
THEIR_VALUE = {"repetition_penalty": "penalty", "no_repeat_ngram_size": "ngram_size", "min_new_tokens":
               "min_new_tokens", "temperature": "temperature", "top_k": "top_k", "top_p": "top_p",
               "min_p": "min_p", "typical_p": "mass"}


def transformers_reading(path: Path):
    """GenerationConfig.from_pretrained on the file, with no warning about its contents."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = transformers.GenerationConfig.from_pretrained(path.parent, path.name)
    config.eos_token_id = EOS
    config._eos_token_tensor = torch.tensor(EOS)
    return config


def their_chain(config) -> list[tuple[str, float]]:
    from transformers.generation.utils import GenerationMixin

    chain = GenerationMixin._get_logits_processor(GenerationMixin(), config, PROMPT_LEN)
    named = [(TRANSFORMERS_NAMES[type(p).__name__], p) for p in chain]
    return [(name, pytest.approx(float(getattr(p, THEIR_VALUE[name])))) for name, p in named]


def our_chain(spec: LaneSpec) -> list[tuple[str, float]]:
    processors = build_processors(spec.to_config(), PROMPT_LEN, EOS, spec.num_beams, spec.processor_order)
    return [(p.name, _value(p)) for p in processors]


def _value(processor) -> float:
    """A processor's parameter, read through its description ('top_p=0.9, min_tokens_to_keep=2')."""
    return float(processor.describe().split(",")[0].split("=")[1])


def assert_same_decoding(spec: LaneSpec, config) -> None:
    assert our_chain(spec) == their_chain(config)
    assert (spec.do_sample, spec.num_beams) == (config.do_sample, config.num_beams)
    assert spec.max_new_tokens == config.max_new_tokens
    if spec.is_beam:
        assert (spec.length_penalty, spec.early_stopping, spec.num_return_sequences) == (
            config.length_penalty, config.early_stopping, config.num_return_sequences)
    assert list(spec.stop_strings) == ([config.stop_strings] if isinstance(config.stop_strings, str)
                                       else list(config.stop_strings or []))


FILES = [  # generation_config.json files as models ship them (transformers' defaults fill the rest)
    {"do_sample": True, "temperature": 0.6, "top_p": 0.9, "bos_token_id": 1, "eos_token_id": 2},
    {"do_sample": True, "top_k": 20, "top_p": 0.8, "repetition_penalty": 1.05, "temperature": 0.7},
    {"do_sample": True, "min_p": 0.05, "temperature": 1.2, "top_k": 0},
    {"num_beams": 4, "length_penalty": 0.8, "early_stopping": True, "num_return_sequences": 2,
     "no_repeat_ngram_size": 3, "max_new_tokens": 40},
    {"do_sample": True, "typical_p": 0.95, "min_new_tokens": 5, "stop_strings": ["\n\n", "END"]},
    {"temperature": 0.6, "top_p": 0.9},  # warpers without do_sample: greedy in transformers
    {},
]


@pytest.mark.parametrize("data", FILES)
def test_import_means_what_transformers_reads(tmp_path, data):
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a greedy file with warpers: transformers warns, and ignores them
        config = transformers.GenerationConfig.from_pretrained(tmp_path)
    config.eos_token_id = EOS
    config._eos_token_tensor = torch.tensor(EOS)
    assert_same_decoding(read_generation_config(path), config)


LANES = [
    *PRESETS.values(),
    LaneSpec("beam", num_beams=3, length_penalty=0.5, early_stopping="never", num_return_sequences=3,
             repetition_penalty=1.2, max_new_tokens=30),
    LaneSpec("all", do_sample=True, temperature=0.8, top_k=40, top_p=0.95, min_p=0.02, typical_p=0.9,
             repetition_penalty=1.1, no_repeat_ngram_size=2, min_new_tokens=3, stop_strings=("\n",), seed=7),
    LaneSpec("top-p only", do_sample=True, top_p=0.9),
]


@pytest.mark.parametrize("spec", LANES, ids=lambda spec: spec.name)
def test_export_then_transformers_and_import_decode_as_the_lane(tmp_path, spec):
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps(generation_config_of(spec)), encoding="utf-8")
    assert_same_decoding(spec, transformers_reading(path))
    back = read_generation_config(path, name=spec.name)
    assert_same_decoding(back, transformers_reading(path))
    assert our_chain(back) == our_chain(spec) and back.processors() == spec.processors()


def test_a_processor_order_of_its_own_is_refused():
    spec = LaneSpec("odd", do_sample=True, temperature=0.7, top_p=0.9, processor_order=("top_p", "temperature"))
    with pytest.raises(ValueError, match="processor_order"):
        generation_config_of(spec)
    same = LaneSpec("same", do_sample=True, temperature=0.7, processor_order=("temperature", "top_p"))
    assert generation_config_of(same)["temperature"] == 0.7
