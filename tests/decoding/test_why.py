"""decoding/analysis/why: pushes from knock-out rows (sign: toward A when hiding lowers the gap), the strongest
pushers each way, word and character groups, spans and candidates refused by name, the depth split's sums, and
the JSON round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

from decoding.analysis.why import (
    Candidate,
    DepthSplit,
    WhyResult,
    check_candidates,
    check_span,
    depth_split,
    knockable,
    pushes,
    word_groups,
)


def test_a_push_is_the_fall_of_the_gap_and_probabilities_follow_the_normaliser():
    base, base_norm = [2.0, 1.0], 3.0
    logits = np.array([[1.0, 1.5], [2.5, 0.5]], np.float32)
    log_norm = np.array([2.5, 3.2])
    rows = pushes([[0], [1, 2]], ["a", "b", "c"], base, base_norm, logits, log_norm, np.array([7, 8]))
    assert rows[0].push == pytest.approx(1.0 - (-0.5))  # hiding it cut the gap: it pushed toward A
    assert rows[1].push == pytest.approx(1.0 - 2.0)
    assert rows[1].text == "bc" and rows[1].positions == (1, 2) and rows[1].top_id == 8
    assert rows[0].d_prob_a == pytest.approx(math.exp(1.0 - 2.5) - math.exp(2.0 - 3.0))
    assert rows[0].d_prob_b == pytest.approx(math.exp(1.5 - 2.5) - math.exp(1.0 - 3.0))


def result_with(pushes_: list[float]) -> WhyResult:
    rows = pushes([[j] for j in range(len(pushes_))], [f"t{j}" for j in range(len(pushes_) + 1)], [0.0, 0.0], 0.0,
                  np.array([[-p, 0.0] for p in pushes_]), np.zeros(len(pushes_)), np.zeros(len(pushes_), int))
    return WhyResult("greedy", 0, Candidate(5, " but"), Candidate(6, " and"), list(range(len(pushes_) + 1)),
                     [f"t{j}" for j in range(len(pushes_) + 1)], 1, 1.0, 0.5, 0.3, 0.2, rows)


def test_the_strongest_pushers_each_way_strongest_first():
    result = result_with([0.5, -2.0, 3.0, 0.0, -0.1, 1.0])
    assert [row.positions[0] for row in result.pushers(True)] == [2, 5, 0]
    assert [row.positions[0] for row in result.pushers(False)] == [1, 4]
    assert [row.positions[0] for row in result.pushers(True, count=1)] == [2]


def test_words_group_pieces_and_cjk_characters_stand_alone():
    texts = ["Al", "though", " he", " tried", ",", " but", "我", "虽然", "很", "累", "，", "don", "'t", "\n", "x"]
    groups = word_groups(texts)
    assert [[texts[p] for p in g] for g in groups] == [
        ["Al", "though"], [" he"], [" tried"], [","], [" but"], ["我"], ["虽然"], ["很"], ["累"], ["，"], ["don"],
        ["'t"], ["\n"], ["x"]]
    assert sum(len(g) for g in groups) == len(texts)


def test_knockable_groups_leave_the_last_position_out():
    assert knockable([[0, 1], [2], [3, 4]], 5) == [[0, 1], [2], [3]]
    assert knockable([[0], [1]], 2) == [[0]]


@pytest.mark.parametrize(("span", "message"), [((3, 3), "must lie in"), ((0, 9), "must lie in"),
                                               ((-1, 2), "must lie in"), ((1,), "two positions")])
def test_bad_spans_are_refused(span, message):
    with pytest.raises(ValueError, match=message):
        check_span(span, 6)
    assert check_span((1, 4), 6) == [1, 2, 3]


def test_candidates_outside_the_vocabulary_or_equal_are_refused():
    with pytest.raises(ValueError, match="b = token 100 is not in the vocabulary"):
        check_candidates(1, 100, 100)
    with pytest.raises(ValueError, match="the same token"):
        check_candidates(4, 4, 100)
    check_candidates(4, 5, 100)


def test_depth_split_shares_add_up_and_heads_sum_to_their_layer():
    rng = np.random.default_rng(0)
    dim, layers, heads = 8, 3, 2
    embedding = rng.normal(size=dim)
    head_out = rng.normal(size=(layers, heads, dim))
    attention, mlp = head_out.sum(axis=1), rng.normal(size=(layers, dim))
    weight, direction = rng.normal(size=dim), rng.normal(size=dim)
    final = embedding + attention.sum(0) + mlp.sum(0)
    rms = float(np.sqrt((final**2).mean() + 1e-5))
    gap = float((weight * final / rms) @ direction)
    split = depth_split(gap, embedding, attention, head_out, mlp, weight, rms, direction)
    assert split.embedding + sum(split.attention) + sum(split.mlp) == pytest.approx(gap, abs=1e-12)
    assert abs(split.rest) < 1e-12 and max(map(abs, split.head_rest)) < 1e-12
    off = depth_split(gap + 0.5, embedding, attention, head_out, mlp, weight, rms, direction)
    assert off.rest == pytest.approx(0.5)


def test_json_round_trip_is_exact():
    result = result_with([0.5, -2.0, 3.0])
    result.words = result.positions[:2]
    result.depth = DepthSplit(0.5, 0.1, [0.2, 0.3], [-0.1, 0.0], [[0.1, 0.1], [0.3, 0.0]], 0.0, [0.0, 0.0], 2.5)
    result.depth_note = None
    again = WhyResult.from_json(result.to_json())
    assert again == result
    assert again.to_json() == result.to_json()
    with pytest.raises(ValueError, match="branchpoint-why"):
        WhyResult.from_json('{"format": "other"}')


def test_a_character_split_over_byte_tokens_is_one_group():
    from decoding.analysis.why import character_groups

    pieces = ["我".encode()[:2], "我".encode()[2:], *(bytes([b]) for b in "虽".encode()), "，".encode(), b" but", b"s"]
    texts = [piece.decode("utf-8", errors="backslashreplace") for piece in pieces]
    assert character_groups(pieces) == [[0, 1], [2, 3, 4], [5], [6], [7]]
    assert word_groups(texts, pieces) == [[0, 1], [2, 3, 4], [5], [6, 7]]
