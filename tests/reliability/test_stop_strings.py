"""Stop strings: the command line and the window read `\\n` alike (one function,
decoding.chain.spec.parse_stop_strings);
a lane stops at the token that completes a stop string, across token boundaries, inside multi-byte characters
spread over byte-level tokens (real tokenizer), and when the stop string is longer than what 32 tokens decode to."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decoding.chain.spec import LaneSpec, format_stop_strings, parse_lane, parse_stop_strings
from decoding.engine.engine import Engine
from decoding.records.trace import PromptInfo
from tests.fake_source import FakeTokenizer
from tests.reliability.scripted import ScriptedSource


def test_the_command_line_and_the_lane_editor_read_stop_strings_alike():
    from gui.present.lane_fields import FIELDS_BY_NAME, spec_from_values

    typed = r"\n\n|END|a\|b"
    cli = parse_lane(f"sample:stop_strings={typed}").stop_strings
    values = {name: field.off for name, field in FIELDS_BY_NAME.items()} | {"stop_strings": typed}
    window = spec_from_values("lane", values).stop_strings
    assert cli == window == ("\n\n", "END", "a|b")


@given(st.lists(st.text(min_size=1), max_size=4))
def test_formatted_stop_strings_read_back_the_same(strings):
    assert parse_stop_strings(format_stop_strings(strings)) == tuple(strings)


def run_script(tokenizer, script: list[int], stop: str, vocab: int, max_new_tokens: int = 100):
    prompt = PromptInfo("scripted", [1, 2, 3])
    engine = Engine(ScriptedSource(len(prompt.ids), script, vocab), tokenizer, eos_token_ids=[])
    spec = LaneSpec("greedy", stop_strings=(stop,))
    return engine.run(prompt, [spec], max_new_tokens=max_new_tokens).lanes[0]


def test_a_stop_string_longer_than_32_tokens_of_text_stops_the_lane():
    script = list(range(5, 85))  # 80 distinct tokens "<5><6>…"
    tokenizer = FakeTokenizer()
    stop = tokenizer.decode(script[10:60])  # 50 tokens' text (179 characters)
    lane = run_script(tokenizer, script, stop, vocab=100)
    assert lane.finish_reason == "stop_string"
    assert lane.token_ids == script[:60]


@pytest.fixture(scope="module")
def real_tokenizer(default_model_dir):
    from runtime.tokenizer import Tokenizer

    return Tokenizer.from_model_dir(default_model_dir)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "stop", "stops_after"),
    [
        ("The capital of France is Paris. It is big.", " of Fr", "The capital of France"),  # across 2 tokens
        ("The capital of France is Paris. It is big.", "s. I", "The capital of France is Paris. It"),
        ("我虽然很累，但还是决定出去散步。", "然", "我虽然"),  # 然 is three byte tokens: stop on its last one
        ("Go 🚀 now, go!", "🚀", "Go 🚀"),  # an emoji of three byte-level tokens
    ],
)
def test_stop_strings_on_the_real_tokenizer(real_tokenizer, text, stop, stops_after):
    script = real_tokenizer.encode(text)
    lane = run_script(real_tokenizer, script, stop, vocab=real_tokenizer.vocab_size)
    assert lane.finish_reason == "stop_string"
    assert lane.text == stops_after
    assert lane.token_ids == script[: len(lane.token_ids)]


@pytest.mark.slow
def test_a_long_stop_string_on_the_real_tokenizer(real_tokenizer):
    text = ("Once upon a time, in a small village by the sea, there lived an old fisherman who told stories "
            "to every child who would listen, and the children came back every evening to hear another one.")
    script = real_tokenizer.encode(text)
    stop = real_tokenizer.decode(script[4:40])  # 36 tokens
    lane = run_script(real_tokenizer, script, stop, vocab=real_tokenizer.vocab_size)
    assert lane.finish_reason == "stop_string"
    assert lane.token_ids == script[:40]
