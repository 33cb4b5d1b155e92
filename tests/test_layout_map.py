"""docs/development.md lists every module of bot/, and conveyor_emulator/README.md every module
of the emulator: a module added, moved or deleted without its line fails here."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADING = re.compile(r"^### `(?P<package>[\w/]+/)`")
ROW = re.compile(r"^\| (?P<cells>`[^|]+`) \|")
NAME = re.compile(r"`([\w*.]+)`")


def listed(doc: Path, package_of_rows: str | None = None) -> set[str]:
    """Paths the map names, relative to the repository root: `### `pkg/`` headings name the
    package of the rows below them; without headings every row is in `package_of_rows`."""
    names: set[str] = set()
    package = package_of_rows
    for line in doc.read_text().splitlines():
        if heading := HEADING.match(line):
            package = heading["package"]
        elif (row := ROW.match(line)) and package is not None:
            names.update(package + name for name in NAME.findall(row["cells"]))
    return names


def modules(package: str) -> set[str]:
    return {str(path.relative_to(ROOT)) for path in (ROOT / package).rglob("*.py")}


def unlisted(package: str, names: set[str]) -> list[str]:
    return sorted(m for m in modules(package)
                  if not any(fnmatch.fnmatchcase(m, name) for name in names))


def test_every_module_of_the_bot_is_in_the_layout_map() -> None:
    names = listed(ROOT / "docs" / "development.md")
    assert unlisted("bot", names) == []
    assert sorted(n for n in names if n.endswith(".py") and not (ROOT / n).exists()) == []


def test_every_module_of_the_emulator_is_in_its_readme() -> None:
    names = listed(ROOT / "conveyor_emulator" / "README.md", "conveyor_emulator/")
    assert unlisted("conveyor_emulator", names) == []
    assert sorted(n for n in names if n.endswith(".py") and "*" not in n
                  and not (ROOT / n).exists()) == []


def test_no_package_holds_more_than_15_modules_directly() -> None:
    crowded = {}
    for package in ("bot", "conveyor_emulator"):
        for folder in {path.parent for path in (ROOT / package).rglob("*.py")}:
            count = sum(1 for path in folder.glob("*.py") if path.name != "__init__.py")
            if count > 15:
                crowded[str(folder.relative_to(ROOT))] = count
    assert crowded == {}
