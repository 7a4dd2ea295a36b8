"""The interface language: English (the source strings) or Simplified Chinese, from View → Language or, when that
follows the system, from LANGUAGE / LC_ALL / LC_MESSAGES / LANG (as gettext reads them).

The Chinese text lives in gui/i18n/translations/branchpoint_zh_CN.ts (Qt Linguist's XML, kept in the repository:
`pyside6-lupdate` collects the strings, docs/gui.md says how). Qt reads compiled .qm files: the first start that
needs one compiles the .ts with PySide6's `lrelease` into the user cache, named by the .ts file's hash, so an
edited .ts is compiled again and the install folder is never written to. Qt's own dialogs (file dialogs,
message box buttons) use Qt's Chinese catalogue shipped with PySide6.

Every user-visible string goes through Qt's translate: `self.tr("…")` in QObject subclasses,
`QCoreApplication.translate("Context", "…")` elsewhere, with `{name}` fields filled by `.format()` after
translation (never an f-string inside: the catalogue needs the literal). Qt-free modules mark theirs with
gui.i18n.translate, which is Qt's once the application has started.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator

TRANSLATIONS = Path(__file__).with_name("translations")
LANGUAGES = ("en", "zh_CN")  # English is the source; the others have a .ts file


def system_language(environ=os.environ) -> str:
    """The interface language the locale environment asks for: "zh_CN" for any Chinese, else "en"."""
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(variable, "")
        if not value:
            continue
        first = value.split(":")[0]
        if variable == "LANGUAGE" and environ.get("LC_ALL", environ.get("LANG", "")) in ("C", "POSIX"):
            continue  # gettext ignores LANGUAGE under the C locale
        return "zh_CN" if first.lower().startswith("zh") else "en"
    return "en"


def chosen_language(setting: str, environ=os.environ) -> str:
    """The setting ("system", "en" or "zh_CN") as a language."""
    return system_language(environ) if setting == "system" else setting


def cache_folder() -> Path:
    from models.catalog import cache_root

    return cache_root() / "translations"


def lrelease_command() -> list[str]:
    """PySide6's lrelease (the binary beside the package, as its pyside6-lrelease wrapper runs it)."""
    import PySide6

    binary = Path(PySide6.__file__).parent / ("lrelease.exe" if sys.platform == "win32" else "lrelease")
    if binary.is_file():
        return [str(binary)]
    return [sys.executable, "-c", "import sys; from PySide6.scripts.pyside_tool import lrelease; "
                                  "sys.argv[0] = 'lrelease'; sys.exit(lrelease())"]


def compiled(language: str, folder: Path | None = None) -> Path:
    """The .qm for `language`, compiled from its .ts into the cache if not there yet. Raises OSError with the
    reason if it cannot be."""
    source = TRANSLATIONS / f"branchpoint_{language}.ts"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    folder = folder or cache_folder()
    target = folder / f"branchpoint_{language}-{digest}.qm"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    done = subprocess.run([*lrelease_command(), "-silent", str(source), "-qm", str(partial)],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise OSError(f"lrelease could not compile {source.name}: {(done.stderr or done.stdout).strip()}")
    partial.replace(target)  # atomic: another instance compiling at the same time writes the same bytes
    return target


def install(app: QCoreApplication, language: str) -> str:
    """Load `language`'s translations into the application (before any window is made). Returns "" or one
    line saying why the interface stays English."""
    if language == "en":
        return ""
    try:
        qm = compiled(language)
    except OSError as error:  # said in English: no translation is loaded
        return f"The {language} interface is not available ({error}); the interface is English."
    ours = QTranslator(app)
    if not ours.load(str(qm)):
        return f"The {language} interface is not available ({qm} did not load); the interface is English."
    app.installTranslator(ours)
    qt = QTranslator(app)
    if qt.load(QLocale(language), "qtbase", "_", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
        app.installTranslator(qt)
    QLocale.setDefault(QLocale(language))
    from gui import i18n

    i18n.use(QCoreApplication.translate)
    return ""


def uninstall(app: QCoreApplication) -> None:
    """Back to English (tests)."""
    for translator in app.findChildren(QTranslator):
        app.removeTranslator(translator)
        translator.deleteLater()
    QLocale.setDefault(QLocale(QLocale.Language.English, QLocale.Country.UnitedStates))
    from gui import i18n

    i18n.use(None)
