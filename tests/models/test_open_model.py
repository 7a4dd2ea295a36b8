"""models.open_model: the one place both front ends open a prepared model, build its identity and encode prompts."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.common import UsageError, load_model
from decoding.records.trace import ModelInfo
from gui.state import model_holder as session
from models.catalog import read_manifest
from models.open_model import model_identity, open_model


def test_open_model_gives_identity_provider_engine_and_prompts(tiny_model_dir):
    model = open_model(tiny_model_dir, device="cpu")
    manifest = read_manifest(tiny_model_dir)
    assert model.info.name == manifest["name"]
    assert model.info.path == str(tiny_model_dir)
    assert model.info.hashes == {}  # the tiny model's manifest lists no files
    assert model.provider == "CPUExecutionProvider"
    assert model.eos_token_ids == list(model.loaded.eos_token_ids) != []

    engine = model.engine(top_n=25, near_tie_threshold=0.1)
    assert (engine.top_n, engine.near_tie_threshold, engine.eos_token_ids) == (25, 0.1, model.eos_token_ids)

    tokenizer = model.tokenizer
    plain = model.encode_prompt("The capital of France is")
    assert (plain.ids, plain.chat, plain.rendered) == (tokenizer.encode("The capital of France is"), False, None)
    chat = model.encode_prompt("你好 🙂", chat=True, system="Be brief.")
    # the ids the window used to get from encode_chat, and the text they encode
    assert chat.ids == tokenizer.encode_chat("你好 🙂", system="Be brief.")
    assert chat.rendered == tokenizer.render_chat("你好 🙂", "Be brief.")
    assert (chat.text, chat.chat, chat.system) == ("你好 🙂", True, "Be brief.")


def test_model_identity_records_hashes_sorted_by_file_name():
    manifest = {"files": {"model.onnx": {"sha256": "b2", "size": 9}, "config.json": {"sha256": "a1"}, "x": {}}}
    info = model_identity(Path("/cache/models/some-model"), manifest)
    assert info == ModelInfo(name="some-model", hashes={"config.json": "a1", "model.onnx": "b2"},
                             path="/cache/models/some-model")
    assert list(info.hashes) == ["config.json", "model.onnx"]
    assert model_identity(Path("/m"), {"name": "named"}).name == "named"


def test_open_model_by_name_from_the_cache(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny").symlink_to(tiny_model_dir, target_is_directory=True)
    model = open_model("tiny", device="cpu")
    assert model.info.path == str(tmp_path / "models" / "tiny")
    with pytest.raises(FileNotFoundError, match="no prepared model named or at 'missing'.*prepared: tiny"):
        open_model("missing")


def test_window_and_command_line_open_the_same_model_and_prompt(tiny_model_dir):
    cli_model = load_model(str(tiny_model_dir), "auto")
    holder = session.ModelHolder(tiny_model_dir)
    window_model = holder.get()
    assert window_model.info == cli_model.info
    assert window_model.provider == cli_model.provider
    request = session.RunRequest("hi there", chat=True, system=None, max_new_tokens=4)
    assert holder.encode_prompt(request) == cli_model.encode_prompt("hi there", chat=True)


def test_command_line_reports_a_missing_model_as_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path))
    with pytest.raises(UsageError, match="no prepared model named or at 'nope'"):
        load_model("nope", "cpu")


def test_window_preloads_the_model_and_a_run_takes_the_same_one(tiny_model_dir):
    holder = session.ModelHolder(tiny_model_dir)
    holder.preload()
    holder.preload()  # a second call starts nothing more
    model = holder.get()  # waits for the preload instead of loading again
    holder.wait_preloaded()
    assert not holder.preloading and holder.loaded is model and holder.get() is model
    assert holder.engine() is holder.engine()


def test_a_failed_preload_is_reported_by_the_run_that_needs_the_model(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    holder = session.ModelHolder(tmp_path)
    holder.preload()
    holder.wait_preloaded()
    assert holder.loaded is None and not holder.preloading
    with pytest.raises(Exception, match="INVALID_PROTOBUF"):  # ONNX Runtime's own exception type
        holder.get()
