"""The tiny helper graphs (row gather, last-position logits, row summary) on their own."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto

from runtime.helper_graphs import last_logits_model, row_gather_model, row_summary_model, summary_parts

CPU = ["CPUExecutionProvider"]


@pytest.mark.parametrize(("elem_type", "dtype"), [(TensorProto.FLOAT, np.float32), (TensorProto.FLOAT16, np.float16)])
def test_row_gather_takes_rows_of_every_tensor(elem_type, dtype):
    session = ort.InferenceSession(row_gather_model(3, elem_type), providers=CPU)
    rng = np.random.default_rng(0)
    tensors = [rng.standard_normal((4, 2, 5, 3)).astype(dtype) for _ in range(3)]
    rows = np.array([3, 3, 0, 1, 2], np.int64)
    outputs = session.run(None, {"indices": rows, **{f"kv_{j}": t for j, t in enumerate(tensors)}})
    for out, tensor in zip(outputs, tensors, strict=True):
        np.testing.assert_array_equal(out, tensor[rows])


@pytest.mark.parametrize(("elem_type", "dtype"), [(TensorProto.FLOAT, np.float32), (TensorProto.FLOAT16, np.float16)])
def test_last_logits_keeps_last_position_as_float32(elem_type, dtype):
    session = ort.InferenceSession(last_logits_model(elem_type), providers=CPU)
    logits = np.random.default_rng(1).standard_normal((2, 7, 11)).astype(dtype)
    (last,) = session.run(None, {"logits": logits})
    assert last.dtype == np.float32 and last.shape == (2, 11)
    np.testing.assert_array_equal(last, logits[:, -1].astype(np.float32))


def test_row_summary_matches_numpy_and_orders_ties_by_lower_id():
    session = ort.InferenceSession(row_summary_model(), providers=CPU)
    rng = np.random.default_rng(2)
    logits = (rng.standard_normal((3, 500)) * 3).astype(np.float32)
    logits[1, [40, 7, 300]] = 20.0  # a three-way tie at the top: lower ids first
    parts = summary_parts(500)
    feed = {"logits": logits, "k": np.array([6], np.int64), "chunks": np.array([3, parts, 500 // parts], np.int64)}
    peak, weights, total_parts, shift_parts, top_ids = session.run(None, feed)
    shifted = (logits - logits.max(axis=1, keepdims=True)).astype(np.float64)
    np.testing.assert_array_equal(peak[:, 0], logits.max(axis=1))
    np.testing.assert_allclose(weights, np.exp(shifted), rtol=1e-6)
    assert total_parts.shape == shift_parts.shape == (3, parts)  # chunk sums, added up by the caller
    np.testing.assert_allclose(total_parts.sum(axis=1, dtype=np.float64), np.exp(shifted).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(shift_parts.sum(axis=1, dtype=np.float64), (np.exp(shifted) * shifted).sum(axis=1),
                               rtol=1e-6)
    np.testing.assert_array_equal(top_ids, np.argsort(-logits, axis=1, kind="stable")[:, :6])
    assert top_ids[1, :3].tolist() == [7, 40, 300]
