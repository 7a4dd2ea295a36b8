"""decoding.engine.beam.BeamSearch against transformers 4.57.6 beam search (`generate(num_beams=...)`), driven by a
tiny random-weight torch Llama recomputed in full each step: same tokens, same sequence scores (1e-4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from decoding.chain.chain import build_processors
from decoding.chain.processors import apply_processors, top_candidates
from decoding.engine.beam import BeamSearch
from tests.extras import require_prepare_module

torch = require_prepare_module("torch")
transformers = require_prepare_module("transformers")

VOCAB = 320
PROMPT_LEN = 6
MAX_NEW = 12
# Tokens this seeded model's beams like (in the best 2- and 4-beam hypotheses without eos): as eos ids they
# end hypotheses early. The tests assert that they really do, so a change of weights cannot go unnoticed.
EOS = 85
SECOND_EOS = 227


@pytest.fixture(scope="module")
def model():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: threads only add contention on a shared machine
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        initializer_range=0.3,  # peaked logits, so beams differ
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    lm = transformers.LlamaForCausalLM(config).eval()
    lm.generation_config.eos_token_id = None
    lm.generation_config.pad_token_id = None
    lm.generation_config.bos_token_id = None
    yield lm
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def prompt():
    return torch.randint(0, VOCAB, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(1))


def reference(model, prompt, **generate_kwargs) -> tuple[list[list[int]], list[float]]:
    """transformers beam search: generated ids of each returned sequence (unpadded) and sequence scores."""
    eos = generate_kwargs.get("eos_token_id")
    pad = eos[0] if isinstance(eos, list) else eos
    with torch.no_grad():
        out = model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            do_sample=False,
            output_scores=True,
            return_dict_in_generate=True,
            pad_token_id=pad,
            **generate_kwargs,
        )
    lengths = (out.beam_indices >= 0).sum(dim=1).tolist()  # generated length of each hypothesis
    sequences = [row[prompt.shape[1] :][:n].tolist() for row, n in zip(out.sequences, lengths, strict=True)]
    return sequences, out.sequences_scores.tolist()


_LOGITS_CACHE: dict[tuple[int, ...], torch.Tensor] = {}


def last_logits(model, ids: torch.Tensor) -> torch.Tensor:
    """Full recompute of the last position's logits per row, memoised: the tests revisit the same prefixes."""
    keys = [tuple(row) for row in ids.tolist()]
    missing = sorted({key for key in keys if key not in _LOGITS_CACHE})
    if missing:
        with torch.no_grad():
            logits = model(torch.tensor(missing)).logits[:, -1, :].float()
        _LOGITS_CACHE.update(zip(missing, logits, strict=True))
    return torch.stack([_LOGITS_CACHE[key] for key in keys])


def run_ours(model, prompt, search: BeamSearch, processors=(), max_steps=None):
    """Drive BeamSearch like the engine does: per running beam, processors(ids, log_softmax(logits)), with
    decoding.chain.processors on numpy."""
    steps = []
    while not search.done and (max_steps is None or len(steps) < max_steps):
        generated = torch.tensor(search.running_sequences(), dtype=torch.long).reshape(search.num_beams, -1)
        ids = torch.cat([prompt.expand(search.num_beams, -1), generated], dim=1)
        scores = torch.log_softmax(last_logits(model, ids), dim=-1).numpy()
        steps.append(search.step(apply_processors(processors, ids.numpy(), scores)))
    sequences, sequence_scores = search.finalize()
    return sequences, sequence_scores, steps


def assert_same(ours, theirs):
    (our_sequences, our_scores), (their_sequences, their_scores) = ours, theirs
    assert our_sequences == their_sequences
    np.testing.assert_allclose(our_scores, their_scores, rtol=0, atol=1e-4)


def beam_params(num_beams, num_return_sequences, length_penalty, early_stopping):
    return {
        "num_beams": num_beams,
        "num_return_sequences": num_return_sequences,
        "length_penalty": length_penalty,
        "early_stopping": early_stopping,
        "max_new_tokens": MAX_NEW,
    }


@pytest.mark.parametrize("early_stopping", [True, False, "never"])
@pytest.mark.parametrize("length_penalty", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("return_all", [True, False], ids=["all", "best"])
@pytest.mark.parametrize("num_beams", [2, 4])
@pytest.mark.parametrize("with_eos", [True, False], ids=["eos", "no-eos"])
def test_matches_transformers(model, prompt, with_eos, num_beams, return_all, length_penalty, early_stopping):
    params = beam_params(num_beams, num_beams if return_all else 1, length_penalty, early_stopping)
    eos = [EOS] if with_eos else []
    theirs = reference(model, prompt, eos_token_id=EOS if with_eos else None, **params)
    sequences, scores, steps = run_ours(model, prompt, BeamSearch(eos_token_ids=eos, **params))
    assert_same((sequences, scores), theirs)
    assert len(sequences) == params["num_return_sequences"]
    if with_eos:  # the eos really ends hypotheses
        assert any(h.finished and h.token_id == eos[0] for step in steps for h in step.hypotheses)
    else:
        assert len(steps) == MAX_NEW and all(len(s) == MAX_NEW for s in sequences)


@pytest.mark.parametrize("early_stopping", [True, False, "never"])
@pytest.mark.parametrize("length_penalty", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("num_beams", [2, 4])
def test_two_eos_ids_match_transformers(model, prompt, num_beams, length_penalty, early_stopping):
    """Two eos ids: transformers keeps (1 + 2) * num_beams candidates per step."""
    params = beam_params(num_beams, num_beams, length_penalty, early_stopping)
    theirs = reference(model, prompt, eos_token_id=[EOS, SECOND_EOS], **params)
    search = BeamSearch(eos_token_ids=[EOS, SECOND_EOS], **params)
    sequences, scores, steps = run_ours(model, prompt, search)
    assert_same((sequences, scores), theirs)
    assert all(len(step.hypotheses) == 3 * num_beams for step in steps)
    assert {SECOND_EOS, EOS} <= {h.token_id for step in steps for h in step.hypotheses if h.finished}


def test_early_stopping_modes_stop_at_different_steps(model, prompt):
    """True stops once num_beams hypotheses finished; False when the heuristic says the best running beam
    cannot win; "never" (with length_penalty > 0) only when it cannot win even at max_new_tokens."""
    steps_taken = {}
    for early_stopping in (True, False, "never"):
        params = beam_params(2, 2, 0.5, early_stopping)
        search = BeamSearch(eos_token_ids=[EOS], **params)
        *ours, steps = run_ours(model, prompt, search)
        assert_same(ours, reference(model, prompt, eos_token_id=EOS, **params))
        steps_taken[early_stopping] = len(steps)
    assert steps_taken[True] <= steps_taken[False] < steps_taken["never"] < MAX_NEW


@pytest.fixture(scope="module")
def repeating_prompt(prompt):
    """The prompt followed by the tokens this model's beams like next: penalties on seen tokens then bite."""
    return torch.cat([prompt, torch.tensor([[182, 149, 184, 71, 271, 274]])], dim=1)


def check_processed_search(model, prompt, config, num_beams, length_penalty):
    """transformers applies its processors to log_softmax(logits) in beam search, each beam with its own
    history: here decoding.chain.processors, fed running_sequences()."""
    eos = [EOS, SECOND_EOS]
    params = beam_params(num_beams, num_beams, length_penalty, False)
    theirs = reference(model, prompt, eos_token_id=eos, **config, **params)
    processors = build_processors(config, prompt.shape[1], eos, num_beams)
    *ours, _ = run_ours(model, prompt, BeamSearch(eos_token_ids=eos, **params), processors)
    assert_same(ours, theirs)
    assert theirs != reference(model, prompt, eos_token_id=eos, **params)  # the processors changed the search


@pytest.mark.parametrize(
    "config",
    [
        {"repetition_penalty": 1.3},
        {"repetition_penalty": 0.7, "no_repeat_ngram_size": 2},
        {"no_repeat_ngram_size": 1},  # bans every seen token: -inf candidates
    ],
    ids=["rep-1.3", "rep-0.7-ngram-2", "ngram-1"],
)
@pytest.mark.parametrize("num_beams", [2, 4])
def test_processed_log_probs_match_transformers(model, repeating_prompt, num_beams, config):
    check_processed_search(model, repeating_prompt, config, num_beams, 1.0)


def test_min_new_tokens_holds_eos_back_like_transformers(model, prompt):
    check_processed_search(model, prompt, {"min_new_tokens": 3}, 2, 0.5)


@pytest.mark.parametrize("early_stopping", [False, "never"])
@pytest.mark.parametrize("length_penalty", [0.0, -1.0])
def test_non_positive_length_penalty_matches_transformers(model, prompt, length_penalty, early_stopping):
    params = beam_params(2, 2, length_penalty, early_stopping)
    *ours, _ = run_ours(model, prompt, BeamSearch(eos_token_ids=[EOS], **params))
    assert_same(ours, reference(model, prompt, eos_token_id=EOS, **params))


def test_last_step_may_keep_and_finish_nothing(model, prompt):
    """With "never", the search runs to max_new_tokens even when the last candidates cannot beat the finished
    pool: that step keeps nothing and finishes nothing (the engine must cope)."""
    params = {**beam_params(2, 2, 0.5, "never"), "max_new_tokens": 4}
    *ours, steps = run_ours(model, prompt, BeamSearch(eos_token_ids=[EOS, SECOND_EOS], **params))
    assert_same(ours, reference(model, prompt, eos_token_id=[EOS, SECOND_EOS], **params))
    assert steps[-1].done and not any(h.kept or h.finished for h in steps[-1].hypotheses)


def test_cancelled_search_ranks_running_beams_like_a_shorter_search(model, prompt):
    """finalize() before done closes the running beams at their length: without eos that is exactly
    transformers with max_new_tokens = the steps taken."""
    search = BeamSearch(4, max_new_tokens=MAX_NEW, num_return_sequences=4, length_penalty=2.0)
    *ours, steps = run_ours(model, prompt, search, max_steps=5)
    assert len(steps) == 5 and not steps[-1].done
    assert_same(ours, reference(model, prompt, **{**beam_params(4, 4, 2.0, False), "max_new_tokens": 5}))


def test_step_result_describes_the_new_beams(model, prompt):
    """sources/tokens, the kept hypotheses and running_sequences() tell one story, step after step."""
    search = BeamSearch(4, max_new_tokens=MAX_NEW, eos_token_ids=[EOS, SECOND_EOS], early_stopping="never")
    assert search.running_sequences() == [[]] * 4 and search.running_scores()[1:] == [-1e9] * 3
    while not search.done:
        before = search.running_sequences()
        ids = torch.cat([prompt.expand(4, -1), torch.tensor(before, dtype=torch.long).reshape(4, -1)], dim=1)
        result = search.step(torch.log_softmax(last_logits(model, ids), dim=-1).numpy())
        hypotheses = result.hypotheses
        assert len(hypotheses) == search.beams_to_keep == 12
        assert [h.score for h in hypotheses] == sorted((h.score for h in hypotheses), reverse=True)
        if result.done:
            break
        kept = sorted((h for h in hypotheses if h.kept), key=lambda h: h.beam)
        assert [h.beam for h in kept] == [0, 1, 2, 3]
        assert result.sources == [h.parent for h in kept] and result.tokens == [h.token_id for h in kept]
        assert search.running_sequences() == [before[h.parent] + [h.token_id] for h in kept]
        assert search.running_scores() == pytest.approx([h.score for h in kept])
        assert not any(h.kept and h.token_id in (EOS, SECOND_EOS) for h in hypotheses)
    with pytest.raises(RuntimeError, match="done"):
        search.step(np.zeros((4, VOCAB), dtype=np.float32))


@settings(max_examples=200, deadline=None)
@given(
    values=hnp.arrays(
        np.float32,
        st.integers(1, 60),
        elements=st.sampled_from([-np.inf, -1e9, -3.5, -1.0, 0.0, 2.0]) | st.floats(-10, 10, width=32),
    ),
    k=st.integers(1, 70),
)
def test_top_candidates_is_a_stable_descending_sort_prefix(values, k):
    expected = np.argsort(-values, kind="stable")[:k]
    np.testing.assert_array_equal(top_candidates(values, k), expected)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_beams": 1}, "num_beams"),
        ({"num_beams": 2.0}, "num_beams"),
        ({"num_beams": True}, "num_beams"),
        ({"length_penalty": float("nan")}, "length_penalty"),
        ({"length_penalty": "1"}, "length_penalty"),
        ({"early_stopping": "always"}, "early_stopping"),
        ({"early_stopping": 1}, "early_stopping"),
        ({"num_return_sequences": 0}, "num_return_sequences"),
        ({"num_return_sequences": 5}, r"num_return_sequences=5.*\[1, num_beams=4\]"),
        ({"eos_token_ids": [-1]}, "eos_token_ids"),
        ({"eos_token_ids": [1.5]}, "eos_token_ids"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
    ],
)
def test_invalid_parameters_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BeamSearch(**{"num_beams": 4, "max_new_tokens": 8, **kwargs})


def test_invalid_scores_are_refused():
    search = BeamSearch(4, max_new_tokens=8, eos_token_ids=[0, 1])
    with pytest.raises(ValueError, match="num_beams=4"):
        search.step(np.zeros((3, 50), dtype=np.float32))
    with pytest.raises(ValueError, match="too small"):
        search.step(np.zeros((4, 2), dtype=np.float32))  # keeps (1 + 2) * 4 = 12 > 4 * 2 candidates


@pytest.mark.parametrize("kind", ["normal", "ties", "mostly-inf"])
def test_top_candidates_on_vocab_sized_rows(kind):
    """Long arrays take the sampled-bound path; it must agree with the stable sort, ties and -inf included."""
    rng = np.random.default_rng(3)
    size = 4 * 49152
    values = {
        "normal": rng.standard_normal(size),
        "ties": rng.choice([-1e9, -2.0, -1.0, 0.5], size=size),
        "mostly-inf": np.where(rng.random(size) < 0.999, -np.inf, rng.standard_normal(size)),
    }[kind].astype(np.float32)
    for k in (1, 8, 12, 40):
        np.testing.assert_array_equal(top_candidates(values, k), np.argsort(-values, kind="stable")[:k])


@pytest.mark.parametrize("seed", range(6))
def test_step_top_equals_step_given_each_beams_best_tokens(seed):
    """The engine's fast path (candidates from each beam's best tokens) against the full-scores step, with
    ties (integer-valued scores), an eos id and a finished pool, until both searches end."""
    rng = np.random.default_rng(seed)
    vocab, eos = 300, 4
    full = BeamSearch(4, max_new_tokens=9, eos_token_ids=[eos], length_penalty=0.5)
    fast = BeamSearch(4, max_new_tokens=9, eos_token_ids=[eos], length_penalty=0.5)
    while not full.done:
        scores = (rng.integers(-12, 0, (4, vocab)) * 0.5).astype(np.float32)
        scores[:, eos] = rng.choice([-0.5, -8.0])
        best = np.argsort(-scores, axis=1, kind="stable")[:, : fast.beams_to_keep + seed]
        want = full.step(scores)
        got = fast.step_top(best, np.take_along_axis(scores, best, axis=1))
        assert (got.sources, got.tokens, got.done) == (want.sources, want.tokens, want.done)
        assert got.hypotheses == want.hypotheses
    assert fast.done and fast.finalize() == full.finalize()


def test_step_top_refuses_too_few_tokens():
    search = BeamSearch(4, max_new_tokens=8, eos_token_ids=[0])
    with pytest.raises(ValueError, match="too few"):
        search.step_top(np.zeros((4, 7), np.int64), np.zeros((4, 7), np.float32))


def test_a_beam_lane_forced_to_a_token_its_processors_ban_takes_it_and_goes_on():
    """A branch of a beam lane onto a token no_repeat_ngram_size bans on every beam (the fuzz found the engine
    failing with "min() arg is an empty sequence"): the beams take it, as a single-row lane takes its forced token."""
    from decoding.chain.spec import LaneSpec
    from tests.fake_source import FakeSource
    from tests.lane_oracle import run_lane

    lane = run_lane(LaneSpec("beam", num_beams=2, no_repeat_ngram_size=1, forced={0: 0}), FakeSource(vocab_size=48),
                    [0], 3)
    assert lane.token_ids[0] == 0 and lane.steps[0].forced and len(lane.token_ids) == 3
    assert lane.finish_reason == "length" and 0 not in lane.token_ids[1:]  # the ban still holds after it
