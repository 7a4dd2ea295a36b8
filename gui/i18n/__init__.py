"""The interface's one translation helper: `translate("Context", "text")` everywhere in gui/, Qt-free. It has the
form pyside6-lupdate collects and is Qt's QCoreApplication.translate once gui.i18n.language has loaded a language
(until then, and in tests of Qt-free modules alone, the English source text). The catalogue is
gui/i18n/translations/branchpoint_zh_CN.ts."""

from __future__ import annotations

from collections.abc import Callable

_translate: Callable[..., str] | None = None


def translate(context: str, text: str, disambiguation: str | None = None, n: int = -1) -> str:
    return text if _translate is None else _translate(context, text, disambiguation, n)


def use(translator: Callable[..., str] | None) -> None:
    global _translate
    _translate = translator


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 (the name pyside6-lupdate looks for)
    """Marks a module-level text for the catalogue; translate it where it is shown."""
    return text
