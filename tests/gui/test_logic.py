"""Qt-free parts of the window: colours, token display, marks, lane fields, status texts."""

from __future__ import annotations

import pytest

from decoding.analysis.compare import first_difference
from decoding.chain.spec import LaneSpec, unique_name
from decoding.records.trace import BeamHypothesis, StepRecord, TokenProb
from gui.dialogs.setup_dialog import stage_label
from gui.present.lane_fields import FIELDS_BY_NAME, describe, display_value, spec_from_values
from gui.present.lane_html import (
    TokenMarks,
    alternatives_html,
    group_tokens,
    label_piece,
    lane_fragments,
    piece_bytes,
    probability_colour,
    token_html,
    visible_piece,
)
from gui.state.run_state import running_beam_pieces
from gui.views.status import progress_text, provider_label
from gui.views.text_view import parse_token_url


def record(step: int = 0, token: int = 5, probs: tuple[float, ...] = (0.5, 0.3, 0.2),
           text: str = "a") -> StepRecord:
    top = [TokenProb(token + i, text if i == 0 else f"t{i}", p, i) for i, p in enumerate(probs)]
    margin = probs[0] - (probs[1] if len(probs) > 1 else 0.0)
    return StepRecord(step=step, token_id=token, token_text=text, prob=probs[0], prob_raw=probs[0] / 2,
                      logprob=-0.7, logprob_raw=-1.4, entropy=1.0, entropy_raw=1.2,
                      margin=margin, margin_raw=0.1, kept=3, tail_mass=0.0, tail_mass_raw=0.1,
                      top=top, top_raw=[TokenProb(t.id, t.text, t.prob / 2, t.rank) for t in top])


def test_probability_colour_goes_from_red_to_green():
    low, high = probability_colour(0.0), probability_colour(1.0)
    assert int(low[1:3], 16) > int(low[3:5], 16)  # red dominates
    assert int(high[3:5], 16) > int(high[1:3], 16)  # green dominates
    assert probability_colour(-1) == low and probability_colour(2) == high


def test_token_text_keeps_whitespace_visible():
    assert visible_piece("a\nb") == "a↵\nb"
    assert visible_piece("") == "∅"
    assert visible_piece("a\x1eb\rc") == "a\\x1eb\\x0dc"
    # a lane stopped inside a character: its last bytes as the token view shows them, not as escapes
    assert visible_piece("100\\xe5\\xa4") == "100‹e5 a4›" and visible_piece("\\xe8") == "‹e8›"
    assert label_piece(" x\t\n") == "·x→↵"


def test_first_difference_and_critical_marks():
    from decoding.analysis.critical import critical_point
    from decoding.records.trace import CriticalSettings

    assert first_difference([1, 2, 3], [1, 2, 4]) == 2
    assert first_difference([1, 2], [1, 2, 3]) is None
    settings = CriticalSettings()
    assert critical_point(record(probs=(0.41, 0.40, 0.19)), settings) is not None  # two strong, nearly tied
    assert critical_point(record(probs=(0.6, 0.3, 0.1)), settings) is None
    assert critical_point(record(probs=(1.0,)), settings) is None


def test_tokens_that_only_together_spell_a_character_are_grouped():
    whole = "这".encode()
    first, second = (whole[:2].decode(errors="backslashreplace"), whole[2:].decode(errors="backslashreplace"))
    assert first == "\\xe8\\xbf" and piece_bytes(first) == whole[:2]
    groups = group_tokens(["a", first, second, " b", first])
    assert [(g.steps, g.text) for g in groups] == [((0,), "a"), ((1, 2), "这"), ((3,), " b"), ((4,), first)]
    assert [g.steps for g in group_tokens([first, " x"])] == [(0,), (1,)]  # never completed: kept as is
    steps = [record(0, text="a"), record(1, text=first, probs=(0.5, 0.4)),
             record(2, text=second, probs=(0.8, 0.1))]
    html = "".join(lane_fragments(0, steps, [TokenMarks(), TokenMarks(), TokenMarks(critical=True)]))
    assert "这" in html and 'href="tok:0:1"' in html and 'href="tok:0:2"' not in html
    assert probability_colour(0.4) in html and "▲" in html  # p(character) = 0.5 × 0.8, marks merged


def test_token_html_is_an_anchor_with_marks():
    html = token_html(2, record(step=7, text="<b>"), TokenMarks(divergence=True, critical=True))
    assert 'href="tok:2:7"' in html and "&lt;b&gt;" in html
    assert "◆" in html and "▲" in html and "underline" in html
    assert parse_token_url("tok:2:7") == (2, 7)
    assert parse_token_url("http://x") is None


def test_alternatives_tooltip_lists_top_five_with_the_chosen_bold():
    html = alternatives_html(record(probs=(0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05)))
    assert html.count("<tr>") == 5
    assert "<b>a</b>" in html


def test_spec_from_values_sets_only_what_applies():
    values = {f: FIELDS_BY_NAME[f].off for f in FIELDS_BY_NAME}
    values.update(do_sample=True, top_p=0.9, top_k=0, length_penalty=2.0)
    spec = spec_from_values("lane", values)
    assert spec.top_p == 0.9 and spec.top_k is None and spec.seed is None
    assert spec.length_penalty == 1.0  # beam-only parameter ignored without beams
    assert spec.processors() == ["top_p"]


def test_spec_from_values_refuses_beam_sampling():
    values = {f: FIELDS_BY_NAME[f].off for f in FIELDS_BY_NAME}
    values.update(do_sample=True, num_beams=4)
    with pytest.raises(ValueError, match="do_sample"):
        spec_from_values("lane", values)


def test_stop_strings_and_lane_limit_round_trip():
    values = {f: FIELDS_BY_NAME[f].off for f in FIELDS_BY_NAME}
    values.update(stop_strings="END|\\n\\n", max_new_tokens=10)
    spec = spec_from_values("lane", values)
    assert spec.stop_strings == ("END", "\n\n") and spec.max_new_tokens == 10
    assert display_value(spec, FIELDS_BY_NAME["stop_strings"]) == "END|\\n\\n"
    assert describe(spec) == "greedy · max 10 · stop END|\\n\\n"
    values.update(stop_strings="", max_new_tokens=0)
    assert spec_from_values("lane", values).stop_strings == ()
    assert spec_from_values("lane", values).max_new_tokens is None


def test_the_running_best_beam_is_followed_through_parent_pointers():
    def hyp(beam, parent, text, kept=True):
        return BeamHypothesis(beam=beam, parent=parent, token_id=0, token_text=text, score=0.0, kept=kept)

    step0, step1 = record(0, text="A"), record(1, text="y")
    step0.beams = [hyp(0, 0, "A"), hyp(1, 0, "B"), hyp(-1, 0, "C", kept=False)]
    step1.beams = [hyp(0, 1, "x"), hyp(1, 0, "y")]  # the best beam now extends "B", not step 0's best "A"
    assert running_beam_pieces([step0, step1]) == ["B", "x"]
    assert running_beam_pieces([record(0)]) is None


def test_display_and_describe():
    spec = LaneSpec("s", do_sample=True, temperature=1.3, seed=7)
    assert display_value(spec, FIELDS_BY_NAME["top_k"]) == 0
    assert describe(spec) == "sample · T 1.3 · seed 7"
    assert describe(spec, seed=False) == "sample · T 1.3"
    assert describe(LaneSpec("b", num_beams=4)) == "beam 4"


def test_small_labels():
    assert unique_name("greedy", {"greedy", "greedy (2)"}) == "greedy (3)"
    assert provider_label("CUDAExecutionProvider") == "CUDA"
    assert progress_text(12, 64, 100, 4.0) == ("step 12/64", "25.0 tok/s")
    assert stage_label("export", "export") == "export"
    assert stage_label("export", "exporting") == "export — exporting"


def test_byte_pieces_read_as_their_character_and_share_of_bytes():
    from gui.present.chart_rows import display_token
    from gui.present.lane_html import lane_characters, piece_label

    pieces = ["a", "\\xe8\\xbf", "\\x99", " b", "\\xf0\\x9f"]  # 这 split in two; an emoji never completed
    shares = lane_characters(pieces)
    assert sorted(shares) == [1, 2]
    labels = [piece_label(p, shares.get(i)) for i, p in enumerate(pieces)]
    assert labels == ["a", "这 (bytes 1–2 of 3)", "这 (byte 3 of 3)", "·b", "‹f0 9f› 2 of 4 bytes"]
    assert piece_label("\\x99") == "‹99› end of a character"
    assert display_token("\\xe8\\xbf", 40) == "‹e8 bf› 2 of 3 bytes"  # never a raw \\xe8 on an axis
    html = alternatives_html(record(text="\\xe8\\xbf"), character=shares[1])
    assert "这 (bytes 1–2 of 3)" in html and "\\xe8" not in html


def test_a_numbered_automatic_name_still_follows_its_strategy():
    from decoding.chain.spec import LaneSpec
    from gui.state.lane_names import follows_strategy

    assert follows_strategy(LaneSpec("greedy")) and follows_strategy(LaneSpec("greedy (2)"))
    assert not follows_strategy(LaneSpec("greedy #2")) and not follows_strategy(LaneSpec("my greedy (2)"))
