"""Samplers are told apart in one place: no isinstance / issubclass on a processor, llama.cpp sampler or selector
class outside decoding/chain/chain.py. Everything else asks a stage or the chain (`stateful`, `accept`,
`record_state`, `Chain.step`), so a new sampler is one class and one row of the parameter table."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from decoding.chain import chain, llama_samplers, processors, selectors

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ROOT / "decoding" / "chain" / "chain.py"
PACKAGES = ("decoding", "runtime", "models", "gui", "cli", "bench", "runfiles", "scripts")


def sampler_classes() -> set[str]:
    """The names of every processor, llama.cpp sampler, selector and the chain."""
    names = {"Chain", "Argmax", "Sampler"}
    for module in (processors, llama_samplers, selectors, chain):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, processors.Processor):
                names.add(name)
    return names


def class_checks(source: str, classes: set[str]) -> list[tuple[int, str]]:
    """(line, class name) of each isinstance / issubclass call naming one of `classes` (bare or as module.Name)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
            continue
        second = node.args[1]
        for target in second.elts if isinstance(second, ast.Tuple) else [second]:
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
            if name in classes:
                found.append((node.lineno, name))
    return found


def test_the_class_list_holds_the_samplers():
    classes = sampler_classes()
    assert {"Processor", "MaskProcessor", "TopP", "Xtc", "Mirostat", "Dry", "Argmax", "Sampler", "Chain"} <= classes


def test_the_check_finds_a_class_test_in_every_form():
    classes = sampler_classes()
    source = "isinstance(p, Xtc)\nisinstance(p, (int, L.Mirostat))\nissubclass(c, P.MaskProcessor)\nisinstance(p, int)"
    assert class_checks(source, classes) == [(1, "Xtc"), (2, "Mirostat"), (3, "MaskProcessor")]


def test_no_isinstance_on_a_sampler_class_outside_the_chain_module():
    classes = sampler_classes()
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ALLOWED:
                continue
            for line, name in class_checks(path.read_text(encoding="utf-8"), classes):
                offenders.append(f"{path.relative_to(ROOT)}:{line} tests for {name}")
    assert not offenders, "ask the stage or the chain instead:\n" + "\n".join(offenders)
