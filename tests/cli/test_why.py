"""`main.py why` on the tiny model: the strongest pushers printed both ways and everything written as JSON (the
same numbers as models.why computes, candidates by text or #id, spans); bad input is one line and exit code 2
before any file is written."""

from __future__ import annotations

import json

import pytest

from main import main

PROMPT = "Although I was tired, I still"


def why(prepared, tmp_path, *extra: str) -> tuple[int, dict | None]:
    out = tmp_path / "why.json"
    code = main(["why", "--model", str(prepared), "--prompt", PROMPT, "--device", "cpu", "--json", str(out), *extra])
    return code, json.loads(out.read_text(encoding="utf-8")) if out.exists() else None


def test_prints_pushers_both_ways_and_writes_everything(prepared_tiny_dir, tmp_path, capsys):
    code, data = why(prepared_tiny_dir, tmp_path, "--step", "2", "--span", "1:4", "--b", "#7")
    assert code == 0 and data["format"] == "branchpoint-why" and data["version"] == 1
    result = data["why"]
    printed = capsys.readouterr().out
    assert "pushed toward A" in printed and "pushed toward B" in printed and "depth split" in printed
    assert result["b"]["token_id"] == 7 and result["step"] == 2
    assert len(result["positions"]) == len(result["token_ids"]) - 1
    assert [row["positions"] for row in result["spans"]] == [[1, 2, 3]]
    strongest = max(result["positions"], key=lambda row: row["push"])
    assert f"{strongest['text']!r}@{strongest['positions'][0]} {strongest['push']:+.3f}" in printed
    depth = result["depth"]
    assert abs(depth["embedding"] + sum(depth["attention"]) + sum(depth["mlp"]) + depth["rest"] - depth["gap"]) < 1e-9
    assert depth["gap"] == pytest.approx(result["logit_a"] - result["logit_b"], abs=1e-4)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--step", "-1"], "invalid --step=-1: allowed an integer >= 0"),
        (["--step", "0", "--b", " butterfly cup"], "invalid --b=' butterfly cup': it is"),
        (["--step", "0", "--a", "#99999"], "invalid --a=#99999: not in the vocabulary"),
        (["--step", "0", "--span", "3"], "invalid --span='3': allowed START:END"),
        (["--step", "1", "--span", "0:99"], "must lie in"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(prepared_tiny_dir, tmp_path, capsys, extra, message):
    code, data = why(prepared_tiny_dir, tmp_path, *extra)
    err = capsys.readouterr().err
    assert code == 2 and data is None
    assert message in err and err.startswith("branchpoint: error:")


def test_b_equal_to_a_is_refused(prepared_tiny_dir, tmp_path, capsys):
    code, data = why(prepared_tiny_dir, tmp_path, "--step", "0")
    chosen = data["why"]["a"]["token_id"]
    (tmp_path / "why.json").unlink()
    code, data = why(prepared_tiny_dir, tmp_path, "--step", "0", "--b", f"#{chosen}")
    assert code == 2 and data is None and "the same token" in capsys.readouterr().err
