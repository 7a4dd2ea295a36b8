"""A model folder that cannot be used, at the command line: one clear line and exit code 2, never a traceback, and
no run started. Damaged model.onnx, no tokenizer, a graph whose inputs are not an export's, CUDA asked for
without CUDA; and a prompt longer than the model's positions refused before the model is opened."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from runtime.session import cuda_unavailable_reason
from tests.cli.test_run import cli


def model_copy(tiny_model_dir: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    return folder


def graph(input_ids_type: int, with_past: bool, vocab_shape: tuple[int, ...] = (1, 1, 384)) -> onnx.ModelProto:
    """A small graph with an export's input names; `logits` = input_ids cast to float, expanded to
    `vocab_shape` (one that cannot broadcast makes a graph that loads but fails when it runs)."""
    inputs = [helper.make_tensor_value_info("input_ids", input_ids_type, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", 384])]
    nodes = [helper.make_node("Cast", ["input_ids"], ["ids_float"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["ids_float", "axis"], ["column"]),
             helper.make_node("Expand", ["column", "vocab_shape"], ["logits"])]
    initializers = [helper.make_tensor("axis", TensorProto.INT64, [1], [2]),
                    helper.make_tensor("vocab_shape", TensorProto.INT64, [3], list(vocab_shape))]
    if with_past:
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.0.{kind}", TensorProto.FLOAT,
                                                        ["batch", 2, "past", 4]))
            outputs.append(helper.make_tensor_value_info(f"present.0.{kind}", TensorProto.FLOAT,
                                                         ["batch", 2, "past", 4]))
            nodes.append(helper.make_node("Identity", [f"past_key_values.0.{kind}"], [f"present.0.{kind}"]))
    model = helper.make_model(helper.make_graph(nodes, "not-an-export", inputs, outputs, initializers),
                              opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def damage(folder: Path, how: str) -> str:
    """Damage the model copy; returns what the one-line message must say."""
    onnx_path = folder / "model.onnx"
    if how == "truncated model.onnx":
        onnx_path.write_bytes(onnx_path.read_bytes()[:5000])
        return "damaged or not ONNX?"
    if how == "text as model.onnx":
        onnx_path.write_text("not a model", encoding="utf-8")
        return "damaged or not ONNX?"
    if how == "no tokenizer.json":
        (folder / "tokenizer.json").unlink()
        return "needs a tokenizer.json"
    if how == "damaged tokenizer.json":
        (folder / "tokenizer.json").write_text("{", encoding="utf-8")
        return "cannot load the tokenizer"
    if how == "a graph without past inputs":
        onnx.save(graph(TensorProto.INT64, with_past=False), onnx_path)
        return "not a with-past export"
    if how == "float input_ids":
        onnx.save(graph(TensorProto.FLOAT, with_past=True), onnx_path)
        return "inputs and outputs do not match"
    if how == "a graph that does not run as an export":
        onnx.save(graph(TensorProto.INT64, with_past=True, vocab_shape=(3, 5, 384)), onnx_path)
        return "does not run as a text-generation-with-past export"
    raise AssertionError(how)


FAULTS = ["truncated model.onnx", "text as model.onnx", "no tokenizer.json", "damaged tokenizer.json",
          "a graph without past inputs", "float input_ids", "a graph that does not run as an export"]


@pytest.mark.parametrize("how", FAULTS)
def test_an_unusable_model_folder_is_one_line_and_exit_2(capsys, tiny_model_dir, tmp_path, how):
    folder = model_copy(tiny_model_dir, tmp_path)
    expected = damage(folder, how)
    out_json = tmp_path / "run.json"
    code, out, err = cli(capsys, "run", "--prompt", "hello", "--model", str(folder), "--device", "cpu",
                         "--json", str(out_json))
    assert code == 2, err
    assert err.startswith("branchpoint: error: ") and expected in err
    assert len(err.strip().splitlines()) == 1 and out == ""
    assert not out_json.exists()


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="CUDA looks available here")
def test_cuda_asked_for_without_cuda_is_one_line_and_exit_2(capsys, tiny_model_dir):
    code, out, err = cli(capsys, "run", "--prompt", "hello", "--model", str(tiny_model_dir), "--device", "cuda")
    assert code == 2
    assert err.strip() == (f"branchpoint: error: device 'cuda' requested but CUDA is not active: "
                           f"{cuda_unavailable_reason()}. Use --device cpu or auto.")
    assert out == ""


@pytest.fixture
def no_model_opened(monkeypatch):
    """Opening the model fails the test: what is checked must be refused before."""
    from cli import run_command

    def no_model(*_args):
        raise AssertionError("the model was opened")

    monkeypatch.setattr(run_command, "load_model", no_model)


def prompt_of_about(tiny_model_dir: Path, tokens: int) -> tuple[str, int]:
    """A prompt of at least `tokens` tokens with the tiny model's tokenizer, and its exact count."""
    from runtime.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_model_dir(tiny_model_dir)
    words = ["word"]
    while len(tokenizer.encode(" ".join(words))) < tokens:
        words.append("word")
    prompt = " ".join(words)
    return prompt, len(tokenizer.encode(prompt))


def test_a_prompt_longer_than_the_models_positions_is_refused_before_the_model_opens(
        capsys, tiny_model_dir, no_model_opened):
    prompt, n = prompt_of_about(tiny_model_dir, 600)  # the tiny model has 512 positions
    code, out, err = cli(capsys, "run", "--prompt", prompt, "--model", str(tiny_model_dir))
    assert code == 2 and out == ""
    assert err.strip() == (f"branchpoint: error: invalid prompt: {n} tokens, longer than the model's 512 positions "
                           "(allowed: at most 512 tokens)")


def test_new_tokens_past_the_models_positions_are_refused_before_the_model_opens(
        capsys, tiny_model_dir, no_model_opened):
    prompt, n = prompt_of_about(tiny_model_dir, 500)
    room = 512 - n + 1  # the prompt's n positions, then every new token but the last
    code, out, err = cli(capsys, "run", "--prompt", prompt, "--model", str(tiny_model_dir),
                         "--max-new-tokens", str(room + 1))
    assert code == 2 and out == ""
    assert err.strip() == (f"branchpoint: error: invalid max_new_tokens={room + 1}: after the prompt's {n} tokens it "
                           f"needs {n + room} positions, the model has 512 (allowed: max_new_tokens <= {room})")
    with pytest.raises(AssertionError, match="the model was opened"):  # exactly the room: on to the model
        cli(capsys, "run", "--prompt", prompt, "--model", str(tiny_model_dir), "--max-new-tokens", str(room))


def test_a_message_of_several_lines_is_printed_as_one(capsys):
    from cli.common import EXIT_USAGE, fail

    assert fail("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : bad input\n  at node Gather\n") == EXIT_USAGE
    assert capsys.readouterr().err == (
        "branchpoint: error: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : bad input at node Gather\n")
