"""What the session tree view draws, Qt-free: one row per shown node in depth-first order (a child right under
its parent), its span on the step axis and its label; nodes under a hidden node are left out and counted on it."""

from __future__ import annotations

from dataclasses import dataclass

from decoding.analysis import session_tree
from decoding.records.trace import TreeNode
from gui.present.chart_rows import display_token


@dataclass(frozen=True)
class TreeRow:
    node: TreeNode
    row: int
    depth: int
    start: int  # the step where the node's own tokens start (its branch step)
    end: int  # one past its last step
    parent_row: int | None  # the row of its parent node (None under the prompt)
    folded: int  # nodes under it not drawn (it is hidden)


def tree_rows(tree: list[TreeNode]) -> list[TreeRow]:
    rows: list[TreeRow] = []

    def visit(parent: int | None, parent_row: int | None, depth: int) -> None:
        for node in session_tree.children(tree, parent):
            start = node.step
            folded = len(session_tree.subtree(tree, node.id)) - 1 if node.hidden else 0
            rows.append(TreeRow(node, len(rows), depth, start, start + len(node.token_ids), parent_row, folded))
            if not node.hidden:
                visit(node.id, len(rows) - 1, depth + 1)

    visit(None, None, 0)
    return rows


def node_label(row: TreeRow) -> str:
    """The lane's name, its branch token under a parent (★ before a forced one, as in the text), ⚑ for a
    bookmark, its note, +N for folded nodes."""
    node = row.node
    parts = [node.lane]
    if node.parent is not None:
        forced = "★" if node.kind == "forced" else ""
        parts.append(f"{forced}“{display_token(node.branch_text, 16)}”")
    if node.bookmark:
        parts.append("⚑")
    if node.note:
        parts.append(f"— {node.note[:40]}")
    if row.folded:
        parts.append(f"(+{row.folded})")
    return " ".join(parts)
