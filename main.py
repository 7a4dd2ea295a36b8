"""Branchpoint entry point: no arguments opens the window; subcommands run headless.

    python main.py                      # the desktop app (prepares the default model on first run)
    python main.py RUN.json             # the desktop app showing a saved run ("Open with Branchpoint")
    python main.py --gui-install-desktop  # the launcher in the desktop's application menu (--gui-uninstall-desktop)
    python main.py prepare [SOURCE]     # convert/export a model into the cache
    python main.py models               # list prepared models
    python main.py catalog              # the models prepared by name (prepare --catalog NAME)
    python main.py run --prompt TEXT …  # side-by-side decoding in the terminal
    python main.py run --from RUN.json --node ID …  # continue a saved run's session tree from a node
    python main.py replay FILE.json     # re-run an exported run and verify every token
    python main.py tree RUN.json        # print a saved run's session tree
    python main.py explain --prompt TEXT --json FILE   # attention and logit lens of one sequence
    python main.py why --prompt TEXT --step N --json FILE  # each earlier token's push on a choice
    python main.py bench                # benchmark suite (ratios)

The subcommands live in cli/ (bench in bench/); this file only dispatches, importing lazily so that `--help`
and the window start fast and the run time never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

# name -> (module, help). The module provides add_arguments(parser) and run(args) -> exit code.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "prepare": ("cli.prepare_command", "prepare a model (default: the embedded SmolLM2-135M-Instruct)"),
    "models": ("cli.models_command", "list prepared models"),
    "catalog": ("cli.catalog_command", "list the models Branchpoint prepares by name (prepare --catalog NAME)"),
    "run": ("cli.run_command", "decode one prompt under several strategies side by side"),
    "replay": ("cli.replay_command", "re-run an exported JSON run with the model and verify every token"),
    "tree": ("cli.tree_command", "print a saved run's session tree: every run and branch, indented"),
    "compare-models": (
        "cli.compare_models_command",
        "teacher-forced comparison of two models: per-token KL, top-1 agreement, where greedy texts part",
    ),
    "explain": ("cli.explain_command", "attention weights and logit lens of one sequence, as JSON"),
    "why": ("cli.why_command", "why a lane chose A and not B at a step: each earlier token's push, by layer too"),
    "bench": ("bench.__main__", "run the benchmark suite and print ratios"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="branchpoint", description="A playground for LLM decoding strategies.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module_name)
        if "--help" in sys.argv or "-h" in sys.argv or (len(sys.argv) > 1 and sys.argv[1] == name):
            importlib.import_module(module_name).add_arguments(sub_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0].startswith("--gui"):
        return _window(argv)
    if argv[0] not in SUBCOMMANDS and _is_run_file(argv[0]):
        return _window(["--gui-open", argv[0], *argv[1:]])
    parser = build_parser()
    if argv[0] in SUBCOMMANDS:
        module = importlib.import_module(SUBCOMMANDS[argv[0]][0])
        sub_parser = argparse.ArgumentParser(prog=f"branchpoint {argv[0]}", description=SUBCOMMANDS[argv[0]][1])
        module.add_arguments(sub_parser)
        args = sub_parser.parse_args(argv[1:])
        return int(module.run(args) or 0)
    parser.parse_args(argv)  # prints usage / error for unknown commands
    return 2


def _is_run_file(argument: str) -> bool:
    """A saved run given as the first argument (a file manager's "Open with", the launcher's %f)."""
    return argument.lower().endswith(".json") or Path(argument).is_file()


def _window(argv: list[str]) -> int:
    from gui.app import run_app

    return run_app(argv)


def gui_entry() -> None:
    """The `branchpoint` gui-script: the same arguments as main.py (on Windows it opens no console window)."""
    sys.exit(main())


def cli_entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
