"""Teacher-forced comparison of two models: the maths against a plain numpy reference, the whole-sequence logits
against step-by-step ones, and `compare-models` on the tiny model and its fp16 variant."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import main
from decoding.analysis import model_compare


def plain_reference(a: np.ndarray, b: np.ndarray, chosen: list[int]) -> list[dict]:
    """Row by row in Python floats: softmax by the definition, KL as the sum of p log(p / q)."""
    rows = []
    for row_a, row_b, token in zip(a.tolist(), b.tolist(), chosen, strict=True):
        za = sum(math.exp(x) for x in row_a)
        zb = sum(math.exp(x) for x in row_b)
        p = [math.exp(x) / za for x in row_a]
        q = [math.exp(x) / zb for x in row_b]
        rows.append(
            {
                "kl": sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True)),
                "top1_reference": max(range(len(p)), key=p.__getitem__),
                "top1_other": max(range(len(q)), key=q.__getitem__),
                "p_reference": p[token],
                "p_other": q[token],
            }
        )
    return rows


def test_teacher_forced_matches_a_plain_reference():
    rng = np.random.default_rng(3)
    a = rng.normal(0, 3, (7, 50)).astype(np.float32)
    b = (a + rng.normal(0, 1, a.shape)).astype(np.float32)
    chosen = [int(i) for i in rng.integers(0, 50, 7)]
    steps = model_compare.teacher_forced(a, b, chosen)
    expected = plain_reference(a, b, chosen)
    for step, want in zip(steps, expected, strict=True):
        assert step.kl == pytest.approx(want["kl"], rel=1e-9, abs=1e-12)
        assert (step.top1_reference, step.top1_other) == (want["top1_reference"], want["top1_other"])
        assert step.p_reference == pytest.approx(want["p_reference"], rel=1e-9)
        assert step.delta_p == pytest.approx(want["p_other"] - want["p_reference"], rel=1e-9, abs=1e-12)
    summary = model_compare.summarize(steps)
    kls = [w["kl"] for w in expected]
    assert summary["mean_kl"] == pytest.approx(sum(kls) / 7) and summary["max_kl"] == pytest.approx(max(kls))
    assert summary["max_kl_step"] == kls.index(max(kls))
    agree = [w["top1_reference"] == w["top1_other"] for w in expected]
    assert summary["top1_agreement"] == pytest.approx(sum(agree) / 7)
    assert summary["first_top1_flip"] == (agree.index(False) if False in agree else None)


def test_identical_models_agree_everywhere_and_shapes_must_match():
    a = np.random.default_rng(4).normal(0, 2, (3, 20))
    steps = model_compare.teacher_forced(a, a.copy(), [0, 1, 2])
    assert all(s.kl == 0.0 and s.top1_agree and s.delta_p == 0.0 for s in steps)
    with pytest.raises(ValueError, match="same vocabulary"):
        model_compare.teacher_forced(a, a[:, :10], [0, 1, 2])


def test_first_divergence():
    assert model_compare.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert model_compare.first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert model_compare.first_divergence([1, 2], [1, 2, 3]) == 2
    assert model_compare.first_divergence("abc", "abd") == 2


@pytest.mark.parametrize("edited", [False, True])
def test_whole_sequence_logits_equal_prefix_recomputations(tiny_model_dir, tmp_path, edited):
    """As exported, and with the preparation's graph edits (lm_head on the last position: the scorer takes that
    slice out again)."""
    from models.graph_edits import edited_model_dir
    from models.validate import empty_past, kv_layout, open_session, run_step
    from runtime.sequence_logits import LAST_POSITION_NODE, SequenceScorer, all_positions_graph

    folder = edited_model_dir(tiny_model_dir, tmp_path / "edited") if edited else tiny_model_dir
    import onnx

    has_slice = any(n.name == LAST_POSITION_NODE for n in onnx.load(str(folder / "model.onnx")).graph.node)
    assert has_slice == edited
    assert not any(n.name == LAST_POSITION_NODE for n in all_positions_graph(folder).graph.node)
    ids = [5, 17, 42, 99, 7, 3]
    logits = SequenceScorer(folder, "cpu")(ids)
    session = open_session(folder / "model.onnx")
    layout = kv_layout(session)
    assert logits.shape[0] == len(ids)
    for end in (1, 4, 6):
        last, _ = run_step(session, layout, np.array([ids[:end]], np.int64), empty_past(layout), 0)
        np.testing.assert_allclose(logits[end - 1], last, atol=1e-4)


@pytest.fixture
def two_tiny_models(tmp_path, monkeypatch, tiny_model_dir):
    from models import prepare
    from models.variants import prepare_variant

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    prepare.register_onnx_folder(tiny_model_dir, name="tiny")
    prepare_variant("fp16", "tiny")
    return tmp_path


def test_compare_models_writes_the_numbers(two_tiny_models, capsys):
    from models.catalog import resolve
    from models.validate import empty_past, kv_layout, open_session, run_step

    out = two_tiny_models / "cmp.json"
    code = main.main(
        ["compare-models", "--prompt", "The capital of France is", "--models", "tiny,tiny-fp16",
         "--max-new-tokens", "6", "--device", "cpu", "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["format"] == "branchpoint-model-comparison" and record["version"] == 1
    assert record["reference"]["precision"] == "fp32" and record["other"]["precision"] == "fp16"
    steps = record["steps"]
    assert len(steps) == 6 and record["summary"]["steps"] == 6
    prompt_ids = record["prompt"]["ids"]
    tokens = [s["token_id"] for s in steps]
    assert tokens == record["greedy"]["reference_ids"]  # the default lane is greedy
    # an independent reference: each model's last-position logits of every prefix, step by step
    rows = []
    for name in ("tiny", "tiny-fp16"):
        session = open_session(resolve(name) / "model.onnx")
        layout = kv_layout(session)
        rows.append(
            np.stack(
                [
                    run_step(session, layout, np.array([prompt_ids + tokens[:i]], np.int64), empty_past(layout), 0)[0]
                    for i in range(len(tokens))
                ]
            )
        )
    expected = plain_reference(rows[0].astype(np.float64), rows[1].astype(np.float64), tokens)
    for step, want in zip(steps, expected, strict=True):
        assert step["kl"] == pytest.approx(want["kl"], abs=1e-6)
        assert step["p_reference"] == pytest.approx(want["p_reference"], abs=1e-5)
        assert step["top1_agree"] == (want["top1_reference"] == want["top1_other"])
    assert "teacher-forced" in capsys.readouterr().out


def test_different_vocabularies_are_refused(two_tiny_models, tiny_model_dir, capsys):
    import shutil

    from models import prepare

    other = two_tiny_models / "other-vocab"
    shutil.copytree(tiny_model_dir, other)
    data = json.loads((other / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    first = next(iter(vocab))
    vocab["Ġrenamed"] = vocab.pop(first)
    (other / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    prepare.register_onnx_folder(other, name="other")
    code = main.main(["compare-models", "--prompt", "Hi", "--models", "tiny,other", "--device", "cpu"])
    assert code == 2
    assert "different vocabularies" in capsys.readouterr().err


def test_bad_models_argument(two_tiny_models, capsys):
    assert main.main(["compare-models", "--prompt", "Hi", "--models", "tiny"]) == 2
    assert "A,B" in capsys.readouterr().err
    assert main.main(["compare-models", "--prompt", "Hi", "--models", "tiny,nope"]) == 2
    assert "no prepared model" in capsys.readouterr().err


def test_scoreboard_of_identical_logits_is_perfect():
    from decoding.analysis.model_compare import position_scores, scoreboard

    logits = np.random.default_rng(0).normal(0, 3, (20, 50))
    board = scoreboard([position_scores(logits, logits.copy(), list(range(20)))])
    assert board["positions"] == 20 and board["mean_kl"] == 0.0 and board["p99_kl"] == 0.0
    assert board["same_top"] == 1.0 and board["rms_delta_p"] == 0.0 and board["top10_jaccard"] == 1.0


def test_scoreboard_columns_by_hand():
    """Two positions, vocabulary 12 (logits 11, 10, …, 0): row 1 of B lifts the last token to the top, a flip
    that also swaps it into the top 10 for A's tenth (Jaccard 9 / 11); the next tokens' Δp."""
    from decoding.analysis.model_compare import log_softmax, position_scores, scoreboard

    def kl_rows(x, y):  # plain KL(softmax x ‖ softmax y) per row
        lp, lq = log_softmax(x), log_softmax(y)
        return (np.exp(lp) * (lp - lq)).sum(axis=-1)

    a = np.tile(np.arange(11.0, -1.0, -1.0), (2, 1))
    b = a.copy()
    b[1, 11] = 12.0
    scores = position_scores(a, b, [0, 3])
    assert list(scores.same_top) == [True, False]
    np.testing.assert_allclose(scores.kl, kl_rows(a, b))
    pa, pb = np.exp(log_softmax(a)), np.exp(log_softmax(b))
    np.testing.assert_allclose(scores.delta_p, [pb[0, 0] - pa[0, 0], pb[1, 3] - pa[1, 3]])
    board = scoreboard([scores])
    assert board["same_top"] == 0.5
    assert board["rms_delta_p"] == pytest.approx(np.sqrt(np.mean(scores.delta_p**2)))
    assert board["p99_kl"] == pytest.approx(np.percentile(kl_rows(a, b), 99))
    assert scores.top_jaccard[0] == 1.0 and scores.top_jaccard[1] == pytest.approx(9 / 11)
    assert scores.kl[0] == 0.0 and scores.kl[1] > 0


def test_scoreboard_refuses_misaligned_rows():
    from decoding.analysis.model_compare import position_scores, scoreboard

    with pytest.raises(ValueError, match="do not line up"):
        position_scores(np.zeros((3, 5)), np.zeros((3, 5)), [1, 2])
    with pytest.raises(ValueError, match="at least one"):
        scoreboard([])


def test_compare_models_over_the_text_set(two_tiny_models, capsys):
    """--text-set: both models read the fixed English and Chinese texts; the JSON's scoreboard is the one the
    variant's manifest recorded when it was prepared (same texts, same windows)."""
    from models.catalog import read_manifest

    out = two_tiny_models / "board.json"
    code = main.main(["compare-models", "--text-set", "--models", "tiny,tiny-fp16", "--device", "cpu",
                      "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "teacher-forced over kl_texts.json" in printed and "zh" in printed and "en" in printed
    board = json.loads(out.read_text(encoding="utf-8"))["scoreboard"]
    recorded = read_manifest(two_tiny_models / "cache" / "models" / "tiny-fp16")["variant"]["teacher_forced"]
    assert board["positions"] == recorded["positions"] > 1000
    assert board["mean_kl"] == pytest.approx(recorded["mean_kl"], rel=1e-6, abs=1e-12)
    assert 0 < board["mean_kl"] < 1e-3 and board["same_top"] > 0.99
    assert main.main(["compare-models", "--text-set", "--prompt", "Hi", "--models", "tiny,tiny-fp16"]) == 2
    assert "takes no --prompt" in capsys.readouterr().err


def test_layer_departure_by_hand():
    from decoding.analysis.model_compare import layer_departure

    a = np.array([[[3.0, 4.0], [1.0, 0.0]], [[1.0, 1.0], [0.0, 2.0]]])  # 2 layers, 2 positions, width 2
    b = a.copy()
    b[1, 0] = [1.0, -1.0]  # layer 2, position 0: orthogonal, same length
    got = layer_departure(a, b)
    assert [d.layer for d in got] == [0, 1]
    assert got[0].relative_error == 0.0 and got[0].cosine == pytest.approx(1.0)
    assert got[1].relative_error == pytest.approx((2 / np.sqrt(2) + 0) / 2)
    assert got[1].cosine == pytest.approx((0 + 1) / 2)
    with pytest.raises(ValueError, match="same shape"):
        layer_departure(a, b[:, :1])


def test_per_layer_states_of_the_tiny_model(two_tiny_models, tiny_model_dir):
    """One state per decoder layer; the same model gives zero departure, its fp16 variant a small one; the last
    layer's states are transformers' hidden states, and the last one through its final norm and lm_head gives
    the logits."""
    from decoding.analysis.model_compare import layer_departure
    from runtime.sequence_logits import SequenceScorer

    models = two_tiny_models / "cache" / "models"
    ids = [5, 17, 3, 42, 8, 11, 2]
    base = SequenceScorer(models / "tiny", "cpu", layers=True)
    logits = base(ids)
    config = json.loads((tiny_model_dir / "config.json").read_text())
    assert base.last_layers.shape == (config["num_hidden_layers"], len(ids), config["hidden_size"])
    same = SequenceScorer(models / "tiny", "cpu", layers=True)
    same(ids)
    assert all(d.relative_error == 0.0 for d in layer_departure(base.last_layers, same.last_layers))
    fp16 = SequenceScorer(models / "tiny-fp16", "cpu", layers=True)
    fp16(ids)
    departure = layer_departure(base.last_layers, fp16.last_layers)
    assert all(0 < d.relative_error < 1e-2 and d.cosine > 0.9999 for d in departure)
    import torch
    from transformers import AutoModelForCausalLM

    reference = AutoModelForCausalLM.from_pretrained(f"{tiny_model_dir}-hf").eval()
    with torch.no_grad():
        hidden = reference(torch.tensor([ids]), output_hidden_states=True).hidden_states
        last = torch.from_numpy(base.last_layers[-1][None])
        head_logits = reference.lm_head(reference.model.norm(last))[0].numpy()
    for layer in range(config["num_hidden_layers"] - 1):  # HF's last entry is after the final norm
        np.testing.assert_allclose(base.last_layers[layer], hidden[layer + 1][0].numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(head_logits, logits, rtol=1e-4, atol=1e-4)


def kl(p: list[float], q: list[float]) -> float:
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True))


SURE = [0.98, 0.01, 0.01]  # asymmetric rows: KL(SURE ‖ UNSURE) = 0.96 nats, KL(UNSURE ‖ SURE) = 1.95
UNSURE = [0.34, 0.33, 0.33]


@pytest.mark.parametrize("reference, other", [(SURE, UNSURE), (UNSURE, SURE)])
def test_the_window_s_comparison_is_kl_of_the_reference_from_the_other_on_asymmetric_rows(reference, other):
    """What the Model comparison view shows (gui.state.model_comparison, Qt-free): KL(reference ‖ other), p of
    the chosen token under each, in the order of its sides."""
    from gui.state.model_comparison import ModelSide, comparison_of

    rows = np.log(np.array([reference, other]))[:, None, :]
    sides = (ModelSide("a", "fp32"), ModelSide("b", "int4"))
    comparison = comparison_of(0, "lane", sides, (rows[0], rows[1]), [1], str, None)
    step = comparison.steps[0]
    assert abs(kl(reference, other) - kl(other, reference)) > 0.9
    assert step.kl == pytest.approx(kl(reference, other), rel=1e-9)
    assert (step.p_reference, step.p_other) == (pytest.approx(reference[1]), pytest.approx(other[1]))
    core = model_compare.teacher_forced(rows[0], rows[1], [1])[0]  # the core the CLI and the bench read
    assert core.kl == pytest.approx(kl(reference, other), rel=1e-9)


def test_compare_models_is_kl_of_the_first_model_from_the_second(tmp_path, monkeypatch, tiny_model_dir,
                                                                  tiny_model_b_dir):
    """Two models of other weights (fp32 and fp16 of one agree both ways): each step's KL is KL(A ‖ B) of the
    models in --models order, which differs from KL(B ‖ A)."""
    from models import prepare
    from models.catalog import resolve
    from runtime.sequence_logits import SequenceScorer

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    prepare.register_onnx_folder(tiny_model_dir, name="tiny")
    prepare.register_onnx_folder(tiny_model_b_dir, name="tiny-b")
    out = tmp_path / "cmp.json"
    assert main.main(["compare-models", "--prompt", "The capital of France is", "--models", "tiny,tiny-b",
                      "--max-new-tokens", "5", "--device", "cpu", "--json", str(out)]) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    tokens = [s["token_id"] for s in record["steps"]]
    sequence = record["prompt"]["ids"] + tokens
    rows = [SequenceScorer(resolve(name), "cpu")(sequence)[len(record["prompt"]["ids"]) - 1 : len(sequence) - 1]
            for name in ("tiny", "tiny-b")]
    forward = plain_reference(rows[0].astype(np.float64), rows[1].astype(np.float64), tokens)
    backward = plain_reference(rows[1].astype(np.float64), rows[0].astype(np.float64), tokens)
    assert max(abs(f["kl"] - b["kl"]) for f, b in zip(forward, backward, strict=True)) > 1e-3
    for step, want in zip(record["steps"], forward, strict=True):
        assert step["kl"] == pytest.approx(want["kl"], abs=1e-6)
        assert step["p_reference"] == pytest.approx(want["p_reference"], abs=1e-5)
