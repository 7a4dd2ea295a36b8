"""The session tree: every lane a session made (runs, branches, branches not taken, forced tokens, fan-out
members, continuations) as a node of one tree rooted at the prompt.

A node (decoding.records.trace.TreeNode) holds a lane's tokens from the step where it leaves its parent node's
sequence, and the spec that made them, so any node can be made again with a model (`reproduce`): a node under
the prompt is a one-lane run of its spec; a node under a parent continues the parent's first `step` tokens (a
Prefix, the path a branch made after a run takes); a branch not taken replays its parent with the parent's
draws (decoding.engine.replay.replay_not_taken). `continue_from` runs lanes on from a node's sequence and adds them to
the tree under it.

Nodes are only ever removed on purpose: `remove_leaf` (undo a branch) refuses a node with children, `prune`
removes a subtree the user chose and returns what it removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from decoding.analysis.text_align import tokenizer_of
from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine, Prefix, check_positions
from decoding.engine.protocol import PositionLimit
from decoding.engine.replay import replay_not_taken
from decoding.records.trace import LaneTrace, RunTrace, TreeNode

KINDS = ("run", "branch", "replay", "fanout", "forced", "continue")


# ------------------------------------------------------------------------------------------------ reading


def node_of(nodes: Sequence[TreeNode], node_id: int) -> TreeNode:
    for node in nodes:
        if node.id == node_id:
            return node
    raise KeyError(f"no node {node_id} in the session tree")


def children(nodes: Sequence[TreeNode], node_id: int | None) -> list[TreeNode]:
    return [node for node in nodes if node.parent == node_id]


def path(nodes: Sequence[TreeNode], node_id: int) -> list[TreeNode]:
    """The nodes from the one under the prompt down to `node_id`."""
    chain = [node_of(nodes, node_id)]
    while chain[-1].parent is not None:
        chain.append(node_of(nodes, chain[-1].parent))
    return chain[::-1]


def full_tokens(nodes: Sequence[TreeNode], node_id: int) -> list[int]:
    """The node's whole token sequence after the prompt: its ancestors' tokens before each branch step, then its
    own."""
    tokens: list[int] = []
    for node in path(nodes, node_id):
        tokens = tokens[: node.step] + list(node.token_ids)
    return tokens


def depth(nodes: Sequence[TreeNode], node_id: int) -> int:
    return len(path(nodes, node_id)) - 1


def subtree(nodes: Sequence[TreeNode], node_id: int) -> list[TreeNode]:
    """The node and every node below it, parents before children."""
    found, ids = [node_of(nodes, node_id)], {node_id}
    for node in nodes:  # parents come before their children
        if node.parent in ids and node.id not in ids:
            found.append(node)
            ids.add(node.id)
    return found


def node_spec(node: TreeNode) -> LaneSpec:
    """The spec that made the node, its markers included."""
    return LaneSpec.from_config(node.lane, node.config, node.branch, node.fanout, node.replay_of)


def check_tree(nodes: Sequence[TreeNode]) -> None:
    """ValueError naming the first node that does not hold together: a repeated id, a parent that is missing
    (or comes after it), a step beyond its parent's sequence, an unknown kind, a negative token id or colour."""
    seen: dict[int, int] = {}  # id -> length of its full sequence
    for index, node in enumerate(nodes):
        where = f"run.tree[{index}] (node {node.id})"
        if node.id in seen:
            raise ValueError(f"{where}: the id repeats")
        if node.kind not in KINDS:
            raise ValueError(f"{where}: kind {node.kind!r} is not one of {', '.join(KINDS)}")
        if any(token < 0 for token in node.token_ids):
            raise ValueError(f"{where}: negative token id")
        if node.colour is not None and node.colour < 0:
            raise ValueError(f"{where}: colour {node.colour} (allowed: a colour index, 0 or more)")
        if node.parent is None:
            if node.step != 0:
                raise ValueError(f"{where}: a node under the prompt starts at step 0, not {node.step}")
        elif node.parent not in seen:
            raise ValueError(f"{where}: its parent node {node.parent} is not in the tree before it")
        elif not 0 <= node.step <= seen[node.parent]:
            raise ValueError(f"{where}: step {node.step} is beyond its parent's {seen[node.parent]} tokens")
        base = 0 if node.parent is None else node.step
        seen[node.id] = base + len(node.token_ids)


# ------------------------------------------------------------------------------------------------ growing


def kind_of(lane: LaneTrace) -> str:
    if lane.replay_of:
        return "replay"
    if lane.branch:
        return "branch"
    if lane.fanout:
        return "fanout"
    return "forced" if lane.config.get("forced") else "run"


def grow(nodes: list[TreeNode], lanes: Sequence[LaneTrace], model: str,
         under: tuple[int, int] | None = None, one_level: bool = False) -> list[TreeNode]:
    """Add a node per lane that ran to `nodes` and return the lanes' nodes (in the lanes' order). A branch
    (or branch not taken) goes under the newest node of its parent lane whose sequence it continues; `under`
    (node id, step) puts every lane there (continuations); `one_level` puts every lane under the prompt. A lane
    the tree already holds (same place, spec and tokens: a run made again) is not added twice."""
    made = []
    for lane in lanes:
        if not lane.steps and not lane.token_ids:
            continue
        if under is None and not one_level and lane.config.get("forced"):
            again = _made_before(nodes, lane)  # a forced lane made again (a replay): the node it was
            if again is not None:
                made.append(again)
                continue
        if under is not None:
            parent, step = under
        else:
            parent, step = (None, 0) if one_level else _parent_of(nodes, lane)
        kind = "continue" if under is not None else kind_of(lane)
        node = TreeNode(
            id=max((n.id for n in nodes), default=-1) + 1, parent=parent, step=step, lane=lane.name, kind=kind,
            config=dict(lane.config), token_ids=list(lane.token_ids[step:]),
            text="".join(record.token_text for record in lane.steps[step:]), model=model,
            branch_text=lane.steps[step].token_text if step < len(lane.steps) else "",
            finish_reason=lane.finish_reason, branch=lane.branch, fanout=lane.fanout, replay_of=lane.replay_of,
            colour=lane.colour,
        )
        same = next((n for n in nodes if _same_place(n, node)), None)
        if same is None:
            nodes.append(node)
        made.append(same or node)
    return made


def _parent_of(nodes: Sequence[TreeNode], lane: LaneTrace) -> tuple[int | None, int]:
    marker = lane.replay_of or lane.branch
    if not marker:
        return _forced_parent(nodes, lane)
    parent_lane, step = marker.get("lane", marker.get("parent")), int(marker["step"])
    for node in reversed(nodes):
        if node.lane == parent_lane and full_tokens(nodes, node.id)[:step] == list(lane.token_ids[:step]):
            return node.id, step
    return None, 0


def _made_before(nodes: Sequence[TreeNode], lane: LaneTrace) -> TreeNode | None:
    """The node of the same lane, config and whole sequence, wherever it hangs."""
    config, tokens = dict(lane.config), list(lane.token_ids)
    return next((node for node in nodes if node.lane == lane.name and node.config == config
                 and full_tokens(nodes, node.id) == tokens), None)


def _forced_parent(nodes: Sequence[TreeNode], lane: LaneTrace) -> tuple[int | None, int]:
    """A lane with forced tokens (Force for all lanes, step mode's picks) branches at its first forced step from
    the newest node whose sequence it follows up to there and leaves there — of the same lane first, then of the
    same strategy, then any; else it is a root."""
    forced = lane.config.get("forced") or {}
    steps = sorted(int(step) for step in forced)
    if not steps or steps[0] >= len(lane.token_ids):
        return None, 0
    step, tokens = steps[0], list(lane.token_ids)
    strategy = _strategy(lane.config)
    for kin in (lambda n: n.lane == lane.name, lambda n: _strategy(n.config) == strategy, lambda _n: True):
        for node in reversed(nodes):
            sequence = full_tokens(nodes, node.id)
            # the lane's own node even where it took that token anyway; another one only where it leaves it there
            leaves_there = len(sequence) > step and (node.lane == lane.name or sequence[step] != tokens[step])
            if kin(node) and leaves_there and sequence[:step] == tokens[:step]:
                return node.id, step
    return None, 0


def _strategy(config: dict) -> dict:
    """A lane's config without what Force and step mode add to it."""
    return {key: value for key, value in config.items() if key not in ("forced", "max_new_tokens", "name")}


def _same_place(a: TreeNode, b: TreeNode) -> bool:
    keys = ("parent", "step", "lane", "config", "token_ids", "branch", "fanout", "replay_of")
    return all(getattr(a, key) == getattr(b, key) for key in keys)


def tree_of_lanes(trace: RunTrace) -> list[TreeNode]:
    """The tree of a file saved before the session tree (schema version < 4): one level, every lane a node under
    the prompt with its whole sequence. A lane that branched keeps its branch marker (`branch`, `replay_of`):
    what it came from is the lane's data, not a place in a tree the file never had."""
    nodes: list[TreeNode] = []
    grow(nodes, trace.lanes, trace.model.name, one_level=True)
    return nodes


def remove_leaf(nodes: list[TreeNode], node_id: int) -> TreeNode:
    """Remove a node without children (undo a branch); ValueError for a node with children."""
    node = node_of(nodes, node_id)
    below = children(nodes, node_id)
    if below:
        raise ValueError(f"node {node_id} has {len(below)} node(s) under it: prune its subtree to remove it")
    nodes.remove(node)
    return node


def prune(nodes: list[TreeNode], node_id: int) -> list[TreeNode]:
    """Remove the node and everything under it (the user asked to); returns what was removed."""
    removed = subtree(nodes, node_id)
    nodes[:] = [node for node in nodes if node not in removed]
    return removed


# --------------------------------------------------------------------------------------------- with a model


def check_same_model(trace: RunTrace, node: TreeNode, model: str) -> None:
    if node.model != model:
        raise ValueError(f"node {node.id} ({node.lane!r}) was made with model {node.model!r}; the model open is "
                         f"{model!r}: continue it with {node.model!r}")


def reproduce(engine: Engine, trace: RunTrace, node_id: int, model: str) -> LaneTrace:
    """Make node `node_id` again with `engine`: its whole lane (records from step 0). See reproduce_path."""
    return reproduce_path(engine, trace, node_id, model)[-1]


def reproduce_path(engine: Engine, trace: RunTrace, node_id: int, model: str) -> list[LaneTrace]:
    """The lanes of every node on the path to `node_id`, made again with `engine`, each from its parent's
    records. ValueError when a node of the path was made with another model or does not come out with the
    tokens the tree holds (the model or the files changed); RuntimeError when the model fails."""
    lanes: list[LaneTrace] = []
    for node in path(trace.tree, node_id):
        check_same_model(trace, node, model)
        lane = _run_node(engine, trace, node, lanes[-1] if lanes else None)
        expected = full_tokens(trace.tree, node.id)
        if lane.token_ids != expected:
            step = next((i for i, (a, b) in enumerate(zip(lane.token_ids, expected, strict=False)) if a != b),
                        min(len(lane.token_ids), len(expected)))
            raise ValueError(f"node {node.id} ({node.lane!r}) did not come out as recorded: it differs at step {step}")
        lanes.append(lane)
    return lanes


def _run_node(engine: Engine, trace: RunTrace, node: TreeNode, parent: LaneTrace | None) -> LaneTrace:
    spec, step = node_spec(node), node.step
    marker = spec.branch or spec.replay_of
    if parent is None and marker is not None and marker.step:  # one level (a file older than the tree)
        step, parent = marker.step, _lead_in(engine, trace, spec, node.token_ids[: marker.step])
    if parent is not None and spec.replay_of is not None:
        replayed = replace(trace, lanes=[replace(parent, name=spec.replay_of.lane)], tree=[])
        return replay_not_taken(engine, replayed, spec)
    prefix = None if parent is None else Prefix(parent.token_ids[:step], [replace(r) for r in parent.steps[:step]],
                                                tokenizer=tokenizer_of(parent))
    run = engine.run(trace.prompt, [spec], max_new_tokens=trace.settings.max_new_tokens, model=trace.model,
                     base_seed=trace.settings.seed, prefix=prefix)
    if run.error:
        raise RuntimeError(run.error)
    return run.lanes[0]


def _lead_in(engine: Engine, trace: RunTrace, spec: LaneSpec, tokens: list[int]) -> LaneTrace:
    """The steps a node under the prompt that branched takes over from the lane it came from (which the tree
    does not hold): its own tokens before the branch step, forced on its spec (forced steps draw nothing, as a
    branch's copied steps; a sampled branch not taken, which replays its parent's draws, comes out different
    and `reproduce` says so)."""
    plain = replace(spec, branch=None, replay_of=None, fanout=None, max_new_tokens=len(tokens),
                    forced=dict(enumerate(tokens)))
    run = engine.run(trace.prompt, [plain], max_new_tokens=len(tokens), model=trace.model,
                     base_seed=trace.settings.seed)
    if run.error:
        raise RuntimeError(run.error)
    return run.lanes[0]


def continue_from(engine: Engine, trace: RunTrace, node_id: int, model: str, specs: Sequence[LaneSpec] | None,
                  new_tokens: int, provider: str = "") -> RunTrace:
    """A run of `specs` (None: the node's own spec) continuing node `node_id`'s sequence for `new_tokens` more
    tokens; its tree is `trace`'s with the new lanes under the node. ValueError for a node of another model or
    one whose sequence leaves no room in the model's positions."""
    node = node_of(trace.tree, node_id)
    check_same_model(trace, node, model)
    tokens = full_tokens(trace.tree, node_id)
    limit = len(tokens) + new_tokens
    if specs is None:
        specs = [replace(node_spec(node), branch=None, replay_of=None, fanout=None)]
    specs = [replace(spec, max_new_tokens=limit, forced={}) for spec in specs]
    source = engine.source
    try:
        check_positions(len(trace.prompt.ids), limit, source.max_positions if isinstance(source, PositionLimit)
                        else None)
    except ValueError as error:
        raise ValueError(f"cannot continue node {node_id} ({len(tokens)} tokens after the prompt's "
                         f"{len(trace.prompt.ids)}): {error}") from error
    lane = reproduce(engine, trace, node_id, model)
    prefix = Prefix(lane.token_ids, [replace(r) for r in lane.steps], tokenizer=tokenizer_of(lane))
    result = engine.run(trace.prompt, specs, max_new_tokens=limit, model=trace.model, provider=provider,
                        base_seed=trace.settings.seed, prefix=prefix)
    result.settings.max_new_tokens = trace.settings.max_new_tokens  # the tree's other nodes' length
    result.tree = [replace(n) for n in trace.tree]
    grow(result.tree, result.lanes, model, under=(node_id, len(tokens)))
    return result
