"""Run files that are not runs this version writes — malformed, truncated, another schema version, NaN numbers,
hand edits with wrong types, missing steps or foreign token ids — are refused with one line naming the place, on
import (decoding.records.jsonio, which the window's Open uses) and by `replay` (exit code 2), never with a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decoding.records import jsonio
from runfiles import run_file
from tests.cli.test_run import cli


@pytest.fixture(scope="module")
def saved_run(tiny_model_dir, tmp_path_factory) -> Path:
    """A real run of the tiny model: greedy, beam, a sampled lane with a stop string."""
    import main

    path = tmp_path_factory.mktemp("run") / "run.json"
    code = main.main(["run", "--model", str(tiny_model_dir), "--prompt", "Once upon a time", "--max-new-tokens", "6",
                      "--lane", "greedy", "--lane", "beam:num_beams=2", "--lane", r"sample:seed=3,stop_strings=\n",
                      "--json", str(path)])
    assert code == 0
    return path


def edited(saved_run: Path, tmp_path: Path, edit) -> Path:
    data = json.loads(saved_run.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def set_path(data, keys, value):
    for key in keys[:-1]:
        data = data[key]
    data[keys[-1]] = value


def delete_path(data, keys):
    for key in keys[:-1]:
        data = data[key]
    del data[keys[-1]]


EDITS = {
    "token id as a string": (lambda d: set_path(d, ["lanes", 0, "token_ids", 1], "12"),
                             "run.lanes[0].token_ids[1]: expected an integer, got '12'"),
    "probability as a string": (lambda d: set_path(d, ["lanes", 1, "steps", 0, "prob"], "high"),
                                "run.lanes[1].steps[0].prob: expected a number, got 'high'"),
    "steps missing": (lambda d: d["lanes"][0]["steps"].pop(),
                      "run.lanes[0] ('greedy'): 5 steps for 6 token ids"),
    "a step out of order": (lambda d: set_path(d, ["lanes", 0, "steps", 2, "step"], 7),
                            "run.lanes[0] ('greedy').steps[2]: step 7, expected 2"),
    "negative token id": (lambda d: (set_path(d, ["lanes", 0, "token_ids", 0], -3),
                                     set_path(d, ["lanes", 0, "steps", 0, "token_id"], -3)),
                          "run.lanes[0] ('greedy').token_ids: token id -3 (allowed: 0 or more)"),
    "lanes not a list": (lambda d: set_path(d, ["lanes"], {"greedy": 1}), "is not a valid Branchpoint run: "),
    "prompt ids missing": (lambda d: delete_path(d, ["prompt", "ids"]), "PromptInfo"),
    "a lane config out of range": (lambda d: set_path(d, ["lanes", 2, "config", "top_p"], 7.0),
                                   "run.lanes[2] ('sample').config: invalid top_p=7.0"),
    "a lane config of the wrong type": (lambda d: set_path(d, ["lanes", 2, "config", "stop_strings"], 5),
                                        "run.lanes[2] ('sample').config: "),
    "a lane name twice": (lambda d: set_path(d, ["lanes", 1, "name"], "greedy"), "lane names repeat (greedy)"),
    "a branch without its step": (lambda d: set_path(d, ["lanes", 0, "branch"], {"parent": "x", "token_id": 1}),
                                  "run.lanes[0] ('greedy').branch.step: expected an integer, got None"),
    "settings of the wrong type": (lambda d: set_path(d, ["settings", "top_n"], "twenty"),
                                   "run.settings.top_n: expected an integer"),
    "a boolean for a number": (lambda d: set_path(d, ["lanes", 0, "steps", 0, "entropy"], True),
                               "run.lanes[0].steps[0].entropy: expected a number, got True"),
    "the model missing": (lambda d: delete_path(d, ["model"]), "a required field is missing: 'model'"),
    "a future version": (lambda d: set_path(d, ["schema_version"], 99), "schema_version 99; this Branchpoint reads"),
    "no version": (lambda d: delete_path(d, ["schema_version"]), "is not a Branchpoint run (no schema_version)"),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_hand_edited_files_are_refused_in_one_line(saved_run, tmp_path, capsys, name):
    edit, message = EDITS[name]
    path = edited(saved_run, tmp_path, edit)
    with pytest.raises(jsonio.TraceFormatError) as info:
        run_file.load(path)
    assert message in str(info.value) and "\n" not in str(info.value)
    code, out, err = cli(capsys, "replay", str(path), "--model", str(saved_run.parent))  # never gets to the model
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is not JSON"),
        ("{", "is not JSON"),
        ('{"schema_version": 2, "model": {"name": "x"}, "prompt": NaN}', "NaN is not a number JSON allows"),
        ('{"schema_version": 2, "model": {"name": "x"}, "prompt": 1e999}', "1e999 is out of range"),
        ("[1, 2, 3]", "no schema_version"),
        ('"a string"', "no schema_version"),
        ("[" * 100000, "is not JSON"),
    ],
)
def test_malformed_text_is_refused_in_one_line(text, message):
    with pytest.raises(jsonio.TraceFormatError) as info:
        jsonio.loads(text, source="run.json")
    assert message in str(info.value) and str(info.value).startswith("run.json ")


def test_truncated_files_are_refused_at_every_length(saved_run):
    text = saved_run.read_text(encoding="utf-8")
    for end in range(0, len(text) - 2, max(1, len(text) // 200)):  # 200 cuts through the file
        with pytest.raises(jsonio.TraceFormatError):
            jsonio.loads(text[:end])


def test_token_ids_outside_the_models_vocabulary_are_refused_before_the_replay(saved_run, tmp_path, capsys,
                                                                              tiny_model_dir):
    def foreign(data):
        data["lanes"][0]["token_ids"][2] = data["lanes"][0]["steps"][2]["token_id"] = 50000

    path = edited(saved_run, tmp_path, foreign)
    run_file.load(path)  # a valid file: the window opens it without the model
    code, out, err = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 2
    assert err.strip() == (f"branchpoint: error: cannot replay {str(path)!r}: lane 'greedy' has token id 50000, "
                           "outside the model's vocabulary (0..383)")
