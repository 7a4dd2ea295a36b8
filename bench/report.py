"""Benchmark results: rows of (item, metric, value, goal) printed as a table and written as JSON."""

from __future__ import annotations

import json
import os
import platform
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path


class SkipItem(Exception):
    """Raised by an item that cannot be measured here (e.g. no display); the reason goes into the report."""


@dataclass(frozen=True)
class Row:
    """One measured number. `goal` e.g. ">= 4" or "<= 1.5" (empty: informational); `unit` "x" for ratios."""

    item: str
    metric: str
    value: float
    unit: str = "x"
    goal: str = ""
    note: str = ""

    @property
    def passed(self) -> bool | None:
        if not self.goal:
            return None
        op, target = self.goal.split()
        limit = float(target)
        return {
            "<=": self.value <= limit,
            ">=": self.value >= limit,
            "<": self.value < limit,
            ">": self.value > limit,
        }[op]


@dataclass
class Report:
    machine: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # item -> why it was not measured

    def add(self, rows: list[Row]) -> None:
        self.rows.extend(rows)

    def to_json(self) -> dict:
        rows = [{**asdict(row), "passed": row.passed} for row in self.rows]
        return {"machine": self.machine, "settings": self.settings, "rows": rows, "skipped": self.skipped}


def format_value(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "%":
        return f"{value:.1f} %"
    if abs(value) >= 100:
        return f"{value:.0f} {unit}"
    return f"{value:.3g} {unit}"


def table(report: Report) -> str:
    """A Markdown table (readable in a terminal and pasteable into results.md)."""
    lines = ["| item | metric | value | goal | ok |", "|---|---|---|---|---|"]
    for row in report.rows:
        ok = {None: "", True: "yes", False: "NO"}[row.passed]
        metric = f"{row.metric} ({row.note})" if row.note else row.metric
        lines.append(f"| {row.item} | {metric} | {format_value(row.value, row.unit)} | {row.goal} | {ok} |")
    for item, why in report.skipped.items():
        lines.append(f"| {item} | not measured: {why} | | | |")
    return "\n".join(lines)


def machine_facts() -> dict:
    import numpy

    facts = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "processor": _cpu_model(),
        "numpy": numpy.__version__,
    }
    for module in ("onnxruntime", "torch", "transformers"):
        facts[module] = _version(module)
    return facts


def _version(module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    name = {"onnxruntime": "onnxruntime-gpu"}.get(module, module)
    for candidate in (name, module):
        try:
            return version(candidate)
        except PackageNotFoundError:
            continue
    return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def write_json(report: Report, path: Path) -> None:
    """Atomic write (temp file + rename) so an interrupted run never leaves a truncated file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as tmp:
        json.dump(report.to_json(), tmp, indent=2)
    os.replace(tmp.name, path)


BEGIN_MARK, END_MARK = "<!-- bench:begin -->", "<!-- bench:end -->"


def machine_lines(report: Report) -> list[str]:
    m = report.machine
    versions = ", ".join(f"{name} {m[name]}" for name in ("onnxruntime", "torch", "transformers", "numpy"))
    return [
        f"- run {report.settings.get('started', '')}, model `{report.settings.get('model_dir', '')}`"
        f"{' (--quick)' if report.settings.get('quick') else ''}",
        f"- {m.get('processor', '')}, {m.get('cpu_count')} logical cores, {m.get('platform', '')}",
        f"- Python {m.get('python')}, {versions}",
    ]


def update_markdown(report: Report, path: Path) -> None:
    """Replace the block between the bench markers in `path` with this run's machine facts and table."""
    text = path.read_text(encoding="utf-8") if path.exists() else f"{BEGIN_MARK}\n{END_MARK}\n"
    if BEGIN_MARK not in text or END_MARK not in text:
        text += f"\n{BEGIN_MARK}\n{END_MARK}\n"
    head, rest = text.split(BEGIN_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    block = "\n".join([BEGIN_MARK, *machine_lines(report), "", table(report), END_MARK])
    path.write_text(head + block + tail, encoding="utf-8")
