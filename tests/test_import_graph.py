"""The modules of `bot/` and of the emulator import each other without a cycle.

Every import statement counts, wherever it is written: at module level, under
`if TYPE_CHECKING:` and inside functions, absolute or relative. A package's `__init__` is a
node of its own, reached only by importing the package itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "conveyor_emulator")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def our_modules() -> dict[str, Path]:
    return {module_name(path): path
            for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def imported_modules(
    tree: ast.Module, module: str, is_package: bool, modules: set[str]
) -> Iterator[str]:
    """The modules each import statement of one module names.

    `from a import b` names the module `a.b` when there is one, else the module `a`.
    """
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            source = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                yield submodule if submodule in modules else source


def import_graph() -> dict[str, set[str]]:
    modules = our_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = imported_modules(tree, name, path.name == "__init__.py", set(modules))
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that ends where it starts, or None."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path = [start]
        on_path = {start}
        pending = [iter(sorted(graph[start]))]
        while pending:
            nxt = next(pending[-1], None)
            if nxt is None:
                pending.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
            elif nxt in on_path:
                return [*path[path.index(nxt):], nxt]
            elif nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                pending.append(iter(sorted(graph[nxt])))
    return None


def test_find_cycle_names_the_modules_of_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_relative_and_type_checking_imports_are_edges() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from ..context import Context\n"
        "if TYPE_CHECKING:\n"
        "    from bot.scheduler import Scheduler\n"
        "def later():\n"
        "    import bot.metrics\n"
    )
    modules = {"bot.promotion.sibling", "bot.context", "bot.scheduler", "bot.metrics"}
    names = set(imported_modules(ast.parse(source), "bot.promotion.opener", False, modules))
    assert names == modules | {"typing"}


def test_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = [start]
    while pending:
        for target in graph[pending.pop()] - seen:
            seen.add(target)
            pending.append(target)
    return seen


def test_the_context_reaches_no_promotion_handler_or_service_module() -> None:
    """The infrastructure is below what is built on it, directly or through other modules."""
    above = ("bot.promotion", "bot.handlers", "bot.services", "bot.server")
    reached = reachable(import_graph(), "bot.context")
    assert "bot.github.client" in reached
    assert sorted(name for name in reached if name.startswith(above)) == []


def test_the_emulator_imports_nothing_of_the_bot() -> None:
    graph = import_graph()
    assert {target for name, targets in graph.items() if name.startswith("conveyor_emulator")
            for target in targets if target.startswith("bot")} == set()
