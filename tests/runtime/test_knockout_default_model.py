"""The knock-out and the depth split on the default model against transformers (the GGUF's float32 weights): every
position's row of the tour's prompt equals transformers' logits under the 4D mask that hides the same position
from every later query, as does a word hidden whole; the depth split adds up to the gap."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.decoder import OnnxDecoder
from runtime.knockout import Knockout
from runtime.tokenizer import Tokenizer
from tests.runtime.test_knockout import hf_knocked_out

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
PROMPT = "Although he tried to open the door,"  # greedy continues with " but" (the tour's stop)
ATOL = 2e-3  # ORT vs torch float32 over 30 layers: the plain logits already differ by up to ~1e-4


@pytest.fixture(scope="module")
def reference(default_model_dir):
    from tests.reference import load_reference_model

    return load_reference_model(default_model_dir)


def test_knockout_rows_equal_transformers_under_the_same_mask(default_model_dir, reference):
    tokenizer = Tokenizer.from_model_dir(default_model_dir)
    ids = tokenizer.encode(PROMPT, add_special_tokens=False)
    but, and_ = (tokenizer.encode(text, add_special_tokens=False)[0] for text in (" but", " and"))
    groups = [[j] for j in range(len(ids) - 1)] + [[0, 1, 2]]
    rows = Knockout(OnnxDecoder(default_model_dir, "cpu"), max_tokens=12).run(ids, groups, [but, and_])
    plain = hf_knocked_out(reference, ids, [])
    assert int(plain.argmax()) == but == rows.base_top_id
    assert np.allclose(rows.base_logits, plain[[but, and_]], atol=ATOL)
    for r, group in enumerate(groups):
        expected = hf_knocked_out(reference, ids, group)
        assert np.allclose(rows.logits[r], expected[[but, and_]], atol=ATOL), (group, rows.logits[r])
        assert rows.top_ids[r] == int(expected.argmax())
    assert np.abs(rows.logits - rows.base_logits).max() > 0.5  # the rows moved: the comparison means something


def test_depth_split_adds_up_on_the_default_model(default_model_dir):
    from runtime.depth import DepthGraph

    tokenizer = Tokenizer.from_model_dir(default_model_dir)
    ids = tokenizer.encode(PROMPT, add_special_tokens=False)
    but, and_ = (tokenizer.encode(text, add_special_tokens=False)[0] for text in (" but", " and"))
    split = DepthGraph(default_model_dir, "cpu").split(ids, but, and_)
    assert split.layers == 30 and len(split.heads[0]) == 9
    assert abs(split.rest) < 1e-3 and abs(split.total() - split.gap) < 1e-9
    assert max(abs(a - sum(h)) for a, h in zip(split.attention, split.heads, strict=True)) < 1e-3
