"""`python main.py tree RUN.json`: the run's session tree, one node a line, indented by depth.

    [0] greedy · run · 32 tokens · length
      [4] greedy ↳5 · branch at step 5 on ' Paris' · 27 tokens (32 after the prompt) · eos ★ "the good one"

Each line: the node's id (what `run --from RUN.json --node ID` continues), its lane, its kind, its branch step
and token (under a parent), its own tokens and its whole sequence's length, how it ended, ★ for a bookmark and
its note; "(hidden)" for a node hidden in the window. Bad input (unreadable or damaged file) prints one line and
exits with code 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.common import fail
from decoding.analysis import session_tree
from decoding.records.trace import RunTrace, TreeNode
from runfiles import run_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a run saved by `run --json` or the app's Save")


def run(args: argparse.Namespace) -> int:
    try:
        trace = run_file.load(args.file)
    except ValueError as exc:
        return fail(str(exc))
    print(render(trace))
    return 0


def render(trace: RunTrace) -> str:
    tree = trace.tree
    lines = [f"prompt {trace.prompt.text!r} ({len(trace.prompt.ids)} tokens) · {trace.model.name} · "
             f"{len(tree)} node{'s' if len(tree) != 1 else ''}"]

    def visit(parent: int | None, depth: int) -> None:
        for node in session_tree.children(tree, parent):
            lines.append("  " * (depth + 1) + node_line(tree, node))
            visit(node.id, depth + 1)

    visit(None, 0)
    return "\n".join(lines)


def node_line(tree: list[TreeNode], node: TreeNode) -> str:
    total = len(session_tree.full_tokens(tree, node.id))
    parts = [f"[{node.id}] {node.lane}", node.kind]
    if node.parent is not None:
        parts.append(f"at step {node.step} on {node.branch_text!r}")
    own = f"{len(node.token_ids)} tokens" + (f" ({total} after the prompt)" if total != len(node.token_ids) else "")
    parts.append(own)
    if node.finish_reason:
        parts.append(node.finish_reason)
    line = " · ".join(parts)
    if node.bookmark:
        line += " ★"
    if node.note:
        line += f" {node.note!r}"
    return line + (" (hidden)" if node.hidden else "")
