"""`main.py run` and `main.py replay` with the tiny model: output, JSON, replay verification, same JSON across
processes, and bad input answered with one line and exit code 2 (nothing written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import main
from decoding.records.trace import SCHEMA_VERSION
from runfiles import run_file

REPO = Path(__file__).resolve().parents[2]


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main.main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_run_prints_lanes_and_writes_json_that_replays(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = cli(
        capsys,
        "run",
        "--model",
        str(tiny_model_dir),
        "--prompt",
        "The capital of France is",
        "--max-new-tokens",
        "6",
        "--lane",
        "greedy",
        "--lane",
        "beam:num_beams=2",
        "--lane",
        "sample:top_p=0.9,seed=7",
        "--json",
        str(path),
        "--device",
        "cpu",
    )
    assert code == 0, err
    assert "greedy [" in out and "beam-2 [" in out and "top-p 0.9 [" in out
    assert "near-tie" in out and "step 6/6" in err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert [lane["name"] for lane in data["lanes"]] == ["greedy", "beam-2", "top-p 0.9"]
    assert data["lanes"][2]["config"]["seed"] == 7
    code, out, err = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 0, err
    assert "replay identical: 3 lanes" in out


def test_the_llama_cpp_samplers_run_from_the_command_line_and_replay(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "run.json"
    lanes = ["sample:dry_multiplier=0.8,xtc_probability=0.5,frequency_penalty=0.2,penalty_last_n=8,seed=1",
             "sample:mirostat=2,mirostat_tau=3,seed=2", "sample:top_n_sigma=1,dynatemp_range=0.3,seed=3",
             "sample:top_k=20,temperature=0.7,processor_order=llama.cpp,seed=4",
             "greedy:suppress_tokens=5|6,bad_words_ids=7 8|9,sequence_bias=3:2.5",
             "sample:xtc_probability=1,xtc_threshold=0.004,seed=5"]
    argv = ["run", "--model", str(tiny_model_dir), "--prompt", "The capital of France is", "--max-new-tokens",
            "6", "--json", str(path), "--device", "cpu"]
    code, out, err = cli(capsys, *argv, *(arg for lane in lanes for arg in ("--lane", lane)))
    assert code == 0, err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == SCHEMA_VERSION and data["lanes"][1]["steps"][0]["mirostat_mu"] == 6.0
    assert data["lanes"][0]["config"]["dry_sequence_breakers"] == ["\n", ":", '"', "*"]
    assert data["lanes"][3]["processors"] == ["top_k", "temperature"]  # llama.cpp's order: temperature last
    xtc = data["lanes"][5]["steps"]  # XTC acts at every step (coin <= 1): the tiny model's many tokens of p >= 0.004
    assert all(step["xtc_coin"] is not None and step["kept"] < 384 for step in xtc)
    assert all(step["top"][0]["id"] != step["top_raw"][0]["id"] for step in xtc)  # its raw best token is gone
    code, out, err = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 0, err
    assert "replay identical: 6 lanes" in out


def test_replay_reports_the_first_mismatch(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "run.json"
    assert (
        cli(
            capsys,
            "run",
            "--model",
            str(tiny_model_dir),
            "--prompt",
            "Once upon a time",
            "--max-new-tokens",
            "5",
            "--json",
            str(path),
        )[0]
        == 0
    )
    trace = run_file.load(path)
    lane = trace.lanes[0]
    lane.token_ids[3] = lane.steps[3].token_id = (lane.token_ids[3] + 1) % 300  # one step per token, as written
    run_file.save(trace, path)
    code, out, _ = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 1
    assert f"MISMATCH lane 'greedy' step 3: expected token {lane.token_ids[3]}" in out


def test_chat_prompt_uses_the_template(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "chat.json"
    code, _, err = cli(
        capsys,
        "run",
        "--model",
        str(tiny_model_dir),
        "--prompt",
        "Hi",
        "--chat",
        "--system",
        "Be brief.",
        "--max-new-tokens",
        "3",
        "--json",
        str(path),
    )
    assert code == 0, err
    prompt = json.loads(path.read_text(encoding="utf-8"))["prompt"]
    assert prompt["chat"] is True and prompt["system"] == "Be brief."
    assert prompt["rendered"].startswith("<|im_start|>system\nBe brief.<|im_end|>")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lane", "sample:top_q=0.9"], "unknown lane parameter 'top_q'"),
        (["--lane", "sample:top_p=1.5"], "invalid top_p=1.5"),
        (["--lane", "beam:num_beams=4,num_return_sequences=5"], "invalid num_return_sequences=5"),
        (["--lane", "config:/no/such/generation_config.json"], "cannot read generation config"),
        (["--max-new-tokens", "0"], "invalid --max-new-tokens=0"),
        (["--top-n", "5"], "invalid --top-n=5"),
        (["--system", "x"], "--system needs --chat"),
        (["--json", "/no/such/folder/run.json"], "does not exist"),
        (["--model", "/no/such/model"], "no prepared model"),
        (["--lane", "sample:mirostat=2,top_k=40"], "invalid top_k=40: allowed unset with mirostat=2"),
        (["--lane", "sample:dry_base=2"], "invalid dry_base=2.0: allowed its default (1.75) unless dry_multiplier"),
        (["--lane", "sample:xtc_probability=1.5"], "invalid xtc_probability=1.5: allowed a float in [0, 1]"),
        (["--lane", "greedy:penalty_last_n=64"], "invalid penalty_last_n=64"),
        (["--lane", "sample:suppress_tokens=a|b"], "invalid suppress_tokens='a|b'"),
        (["--lane", "sample:processor_order=mirostat|top_k,mirostat=2,temperature=0.8"], "invalid processor_order"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tiny_model_dir, tmp_path, args, message):
    argv = ["run", "--prompt", "hello", "--max-new-tokens", "3", *args]
    if "--model" not in args:
        argv += ["--model", str(tiny_model_dir)]
    if "--json" not in args:  # a writable place: the refusal must still write nothing there
        argv += ["--json", str(tmp_path / "run.json")]
    code, out, err = cli(capsys, *argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and out == ""
    assert list(tmp_path.iterdir()) == []


def test_empty_prompt_and_unknown_option_exit_2(capsys, tiny_model_dir):
    code, _, err = cli(capsys, "run", "--prompt", "   ", "--model", str(tiny_model_dir))
    assert code == 2 and "invalid --prompt" in err
    code, _, _ = cli(capsys, "run", "--prompt", "x", "--lanes", "greedy")
    assert code == 2


def test_replay_of_unreadable_or_foreign_files_exits_2(capsys, tmp_path):
    code, _, err = cli(capsys, "replay", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read run file" in err
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"schema_version": 7}), encoding="utf-8")
    code, _, err = cli(capsys, "replay", str(foreign))
    assert code == 2 and "schema_version 7" in err


def without_timing(text: str) -> dict:
    data = json.loads(text)
    data.pop("timing")
    for lane in data["lanes"]:
        for step in lane["steps"]:
            step.pop("time_ms")
    return data


def test_same_seed_gives_the_same_json_in_two_processes(tiny_model_dir, tmp_path):
    """Everything but wall-clock timings is identical."""
    outputs = []
    for name in ("a.json", "b.json"):
        path = tmp_path / name
        subprocess.run(
            [
                sys.executable,
                str(REPO / "main.py"),
                "run",
                "--model",
                str(tiny_model_dir),
                "--prompt",
                "Once upon a time",
                "--max-new-tokens",
                "8",
                "--seed",
                "123",
                "--lane",
                "greedy",
                "--lane",
                "sample:top_k=50",
                "--lane",
                "sample:temperature=1.3",
                "--lane",
                "beam:num_beams=2",
                "--json",
                str(path),
            ],
            check=True,
            capture_output=True,
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": "random"},
        )
        outputs.append(path.read_text(encoding="utf-8"))
    assert without_timing(outputs[0]) == without_timing(outputs[1])


def test_fanout_run_shows_each_group_once_and_replays_every_member(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "fanout.json"
    code, out, err = cli(
        capsys, "run", "--model", str(tiny_model_dir), "--prompt", "The capital of France is",
        "--max-new-tokens", "6", "--lane", "greedy", "--lane", "sample:temperature=1.0,seed=11",
        "--fanout", "4", "--json", str(path), "--device", "cpu",
    )
    assert code == 0, err
    assert "greedy [" in out and "── T 1.0 × 4, seeds 11..14:" in out and "distinct continuations" in out
    assert "T 1.0 #0 [" not in out  # no column per member
    assert "critical point" in out and "  T 1.0 × 4: " in out
    data = json.loads(path.read_text(encoding="utf-8"))
    assert [lane["name"] for lane in data["lanes"]] == ["greedy", "T 1.0 #0", "T 1.0 #1", "T 1.0 #2", "T 1.0 #3"]
    assert [lane["config"].get("seed") for lane in data["lanes"]] == [None, 11, 12, 13, 14]
    assert data["lanes"][3]["fanout"] == {"group": "T 1.0", "member": 2}
    assert data["analysis"]["fanouts"]["T 1.0"]["members"] == [f"T 1.0 #{k}" for k in range(4)]
    code, out, err = cli(capsys, "replay", str(path), "--model", str(tiny_model_dir))
    assert code == 0, err
    assert "replay identical: 5 lanes" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fanout", "0"], r"invalid --fanout=0: allowed an integer in [1, 64]"),
        (["--fanout", "65"], r"invalid --fanout=65: allowed an integer in [1, 64]"),
        (["--fanout", "4"], "invalid --fanout=4: no sampled lane to fan out"),
        (["--critical-draw-distance", "0.7"], "invalid --critical-draw-distance=0.7: allowed a float in [0, 0.5]"),
        (["--critical-ratio", "0"], "invalid --critical-ratio=0.0: allowed a float in (0, 1]"),
        (["--critical-min-prob", "-1"], "invalid --critical-min-prob=-1.0: allowed a float in [0, 1]"),
    ],
)
def test_bad_fanout_and_critical_settings_are_one_line_and_exit_2(capsys, tiny_model_dir, args, message):
    argv = ["run", "--prompt", "hello", "--max-new-tokens", "3", "--model", str(tiny_model_dir), *args]
    code, out, err = cli(capsys, *argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and out == ""


def test_critical_settings_are_recorded(capsys, tiny_model_dir, tmp_path):
    path = tmp_path / "run.json"
    code, _, err = cli(capsys, "run", "--model", str(tiny_model_dir), "--prompt", "hello", "--max-new-tokens", "3",
                       "--critical-ratio", "0.5", "--json", str(path))
    assert code == 0, err
    assert json.loads(path.read_text(encoding="utf-8"))["settings"]["critical"]["ratio"] == 0.5


def test_the_progress_line_counts_the_prompt_tokens_read(capsys):
    from cli.run_command import StepProgress

    bar = StepProgress(total=8, lanes=1, width=10)
    bar.live = True  # as on a terminal
    bar.prefill(1536, 4000)
    bar.prefill(4000, 4000)  # read: the step line takes over
    _, err = capsys.readouterr()
    assert err == "\r[###.......] reading the prompt: 1,536 / 4,000 tokens "


def test_a_lane_on_a_served_model_runs_beside_the_local_one_and_says_it_is_partial(capsys, tiny_model_dir, tmp_path,
                                                                                  monkeypatch):
    """The fake llama.cpp server's tokenizer is not the tiny model's: its lane reads the prompt with the server's,
    and a server that stops mid-run ends only that lane, with the message printed and its steps kept."""
    from tests.fake_server import FakeModelServer

    monkeypatch.setenv("COLUMNS", "200")  # the columns' headers whole (a narrow terminal wraps them)

    server = FakeModelServer("llamacpp").start()
    path = tmp_path / "run.json"
    try:
        code, out, err = cli(capsys, "run", "--model", str(tiny_model_dir), "--prompt", "<1><2>", "--max-new-tokens",
                             "5", "--lane", "greedy", "--lane", f"greedy:model={server.name}?alternatives=16,name=srv",
                             "--json", str(path), "--device", "cpu")
    finally:
        server.stop()
    assert code == 0, err
    assert "srv [length, 5 tok, partial: top 16 of 64; tail ≤ " in out
    assert f"on llamacpp {server.url} (fake-model) · partial: top 16 of 64" in out and "raw entropy " in out
    saved = run_file.load(path)
    assert saved.lanes[1].model.served["url"] == server.url and saved.lanes[1].prompt_ids == [1, 2]
    code, out, err = cli(capsys, "run", "--model", str(tiny_model_dir), "--prompt", "<1><2>", "--max-new-tokens", "3",
                         "--lane", "greedy", "--lane", f"greedy:model={server.name}", "--device", "cpu")
    assert code == 2 and "connection refused" in err  # nothing listens any more: refused before the run


def test_a_whole_run_on_a_served_model_is_partial_in_every_lane_and_replays_on_the_server(capsys, tmp_path,
                                                                                        monkeypatch):
    """--model names a server: the server's tokenizer reads the prompt, every lane runs there (the local fake
    model's tokens: greedy's top-1 is always among the 16 returned), each is marked partial, the file records the
    server for the run and each lane, and replay connects to it again; with the server gone, replay says so."""
    from decoding.chain.spec import LaneSpec
    from decoding.engine.engine import Engine
    from decoding.records.trace import PromptInfo
    from tests.fake_server import FakeModelServer
    from tests.fake_source import FakeSource, FakeTokenizer

    monkeypatch.setenv("COLUMNS", "200")  # the columns' headers whole (a narrow terminal wraps them)
    server = FakeModelServer("llamacpp").start()
    path = tmp_path / "run.json"
    name = f"{server.name}?alternatives=16"
    try:
        code, out, err = cli(capsys, "run", "--model", name, "--prompt", "<1><2>", "--max-new-tokens", "6",
                             "--lane", "greedy", "--lane", "sample:seed=3,temperature=0.9", "--json", str(path))
        assert code == 0, err
        assert out.count("partial: top 16 of 64; tail ≤ ") == 4, out  # each lane's header and its line
        assert f"{name} (fake-model) · llamacpp server" in out and "on llamacpp" not in out  # said once
        import jsonschema

        jsonschema.validate(json.loads(path.read_text()), run_file.schema())
        saved = run_file.load(path)
        assert saved.model.name == name and saved.model.served["alternatives"] == 16
        assert saved.provider == "llamacpp server" and saved.prompt.ids == [1, 2]
        assert [lane.model.served["url"] for lane in saved.lanes] == [server.url] * 2
        local = Engine(FakeSource(vocab_size=64), FakeTokenizer(), [3]).run(
            PromptInfo("<1><2>", [1, 2]), [LaneSpec("greedy")], max_new_tokens=6)
        assert saved.lanes[0].token_ids == local.lanes[0].token_ids
        assert all(0.0 < step.unseen_mass < 1.0 for lane in saved.lanes for step in lane.steps)
        code, out, err = cli(capsys, "replay", str(path))
        assert code == 0 and "replay identical: 2 lanes, 12 tokens" in out, out + err
    finally:
        server.stop()
    code, out, err = cli(capsys, "replay", str(path))
    assert code == 2 and "connection refused" in err, err
