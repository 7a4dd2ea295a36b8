"""The examples in decoding/'s docstrings run and hold: a broken example fails the suite."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import types

import pytest

import decoding
from decoding.chain import llama_samplers as L
from decoding.chain import processors as P
from decoding.chain.parameters import PROCESSOR_ORDER

MODULES = sorted(info.name for info in pkgutil.iter_modules(decoding.__path__, "decoding."))


def run_examples(module: types.ModuleType) -> tuple[int, int, str]:
    """(failed, tried, the failure report) for every example in the module's docstrings."""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)
    return runner.failures, runner.tries, "".join(report)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    failed, _, report = run_examples(importlib.import_module(name))
    assert failed == 0, report


def test_every_processor_documents_its_arguments_with_an_example():
    processors = [cls for module in (P, L) for cls in vars(module).values()
                  if isinstance(cls, type) and issubclass(cls, P.Processor) and getattr(cls, "name", None)]
    assert {cls.name for cls in processors} == set(PROCESSOR_ORDER)
    for cls in processors:
        assert "Args:" in cls.__doc__ and doctest.DocTestParser().get_examples(cls.__doc__), cls.__name__


def test_a_broken_example_fails():
    module = types.ModuleType("broken", "An example that does not hold:\n\n>>> 1 + 1\n3\n")
    failed, tried, report = run_examples(module)
    assert (failed, tried) == (1, 1) and "Expected:\n    3\nGot:\n    2" in report
