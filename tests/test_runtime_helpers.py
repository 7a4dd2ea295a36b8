"""The tiny helper graphs (row gather, last-position logits) on their own, in float32 and float16."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto

from runtime.helper_graphs import last_logits_model, row_gather_model

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
