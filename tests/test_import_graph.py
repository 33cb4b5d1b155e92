"""The modules of `bot/` and of the emulator import each other without a cycle, and only down
the layers of their packages (the tables at the end).

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


def type_checking_imports(tree: ast.Module) -> set[int]:
    """The ids of the import statements under `if TYPE_CHECKING:`: names for annotations only."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                   "typing.TYPE_CHECKING"):
            found.update(id(inner) for statement in node.body for inner in ast.walk(statement)
                         if isinstance(inner, (ast.Import, ast.ImportFrom)))
    return found


def imports(
    tree: ast.Module, module: str, is_package: bool, modules: set[str]
) -> Iterator[tuple[str, bool]]:
    """The modules each import statement of one module names, and whether it names them for
    annotations only.

    `from a import b` names the module `a.b` when there is one, else the module `a`.
    """
    here = module.split(".") if is_package else module.split(".")[:-1]
    for_types = type_checking_imports(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, id(node) in for_types) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            source = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                yield (submodule if submodule in modules else source), id(node) in for_types


def import_edges() -> dict[str, dict[str, bool]]:
    """Each module → the modules of ours it imports → whether only for annotations."""
    modules = our_modules()
    edges: dict[str, dict[str, bool]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: dict[str, bool] = {}
        for target, type_only in imports(tree, name, path.name == "__init__.py", set(modules)):
            if target in modules and target != name:
                targets[target] = targets.get(target, True) and type_only
        edges[name] = targets
    return edges


def import_graph() -> dict[str, set[str]]:
    return {name: set(targets) for name, targets in import_edges().items()}


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
        "from . import hold\n"
        "from ...runtime.context import Context\n"
        "if TYPE_CHECKING:\n"
        "    from bot.runtime.scheduler import Scheduler\n"
        "def later():\n"
        "    import bot.metrics\n"
    )
    modules = {"bot.promotion.gate.hold", "bot.runtime.context", "bot.runtime.scheduler",
               "bot.metrics"}
    found = list(imports(ast.parse(source), "bot.promotion.gate.gatekeeper", False, modules))
    assert {name for name, _ in found} == modules | {"typing"}
    assert {name for name, type_only in found if type_only} == {"bot.runtime.scheduler"}


def test_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_emulator_imports_nothing_of_the_bot() -> None:
    graph = import_graph()
    assert {target for name, targets in graph.items() if name.startswith("conveyor_emulator")
            for target in targets if target.startswith("bot")} == set()


# The allowed directions. A node is a package (the modules directly in it) or a module directly
# in `bot/` or `conveyor_emulator/`. Layers go from the bottom up: a module may import its own
# node and any node of a lower layer, never one of its own layer or above, unless the layer is
# marked as peers (families whose JSON shapes name each other). Runtime imports only: names
# imported under `if TYPE_CHECKING:` may also point up, where TYPE_ONLY says so.
BOT_LAYERS: list[tuple[str, set[str]]] = [
    ("leaves: no import of the bot",
     {"bot", "bot.text", "bot.names", "bot.metrics", "bot.caches"}),
    ("the YAML reader", {"bot.yamlread"}),
    ("pure decisions", {"bot.domain"}),
    ("pure: the policy, the gate's verdict, commands",
     {"bot.domain.policy", "bot.domain.gate", "bot.domain.commands"}),
    ("pure: one promotion's candidate, refusals, marker and words",
     {"bot.domain.promotions"}),
    ("pure: the image-reference editor", {"bot.manifests"}),
    ("pure: the config check's validators", {"bot.configcheck"}),
    ("the edges: GitHub, registries, kustomize, Sigstore",
     {"bot.github", "bot.registry", "bot.render", "bot.attestations"}),
    ("one app's infrastructure", {"bot.runtime"}),
    ("Redis; deployment repositories and their builds", {"bot.redisq", "bot.promotion"}),
    ("what Conveyor wrote; the config check on GitHub",
     {"bot.promotion.authorship", "bot.promotion.configcheck"}),
    ("evidence, opening PRs, history",
     {"bot.promotion.evidence", "bot.promotion.opening", "bot.promotion.history"}),
    ("the gate; release trains", {"bot.promotion.gate", "bot.promotion.trains"}),
    ("what events set in motion", {"bot.promotion.triggers"}),
    ("after the merge: watch, rollback, delivery figures", {"bot.promotion.watching"}),
    ("the dashboard", {"bot.promotion.dashboard"}),
    ("slash commands", {"bot.promotion.commands"}),
    ("the resync", {"bot.promotion.resync"}),
    ("the capabilities of one app", {"bot.capabilities"}),
    ("webhook handlers", {"bot.handlers"}),
    ("serving; the offline commands", {"bot.serving", "bot.cli"}),
    ("the sandbox", {"bot.sandbox"}),
    ("the command line", {"bot.__main__"}),
]
EMULATOR_LAYERS: list[tuple[str, set[str]]] = [
    ("leaves: the trimmed descriptions; GitHub's Sigstore instances",
     {"conveyor_emulator.openapi", "conveyor_emulator.sigstore"}),
    ("the records", {"conveyor_emulator.store"}),
    ("GitHub's errors", {"conveyor_emulator.errors"}),
    ("faults and limits; the route table", {"conveyor_emulator.faults",
                                            "conveyor_emulator.routing"}),
    ("users and organizations", {"conveyor_emulator.accounts"}),
    ("peers: the resource families and their webhooks",
     {"conveyor_emulator.apps", "conveyor_emulator.repos", "conveyor_emulator.issues",
      "conveyor_emulator.pulls", "conveyor_emulator.checks", "conveyor_emulator.releases",
      "conveyor_emulator.events"}),
    ("the state changes composed; the registry",
     {"conveyor_emulator.ops", "conveyor_emulator.registry"}),
    ("the Python API", {"conveyor_emulator.driver"}),
    ("what reads the Python API", {"conveyor_emulator.control", "conveyor_emulator.web_views",
                                   "conveyor_emulator.graphql_api"}),
    ("the dispatcher", {"conveyor_emulator.app"}),
    ("served; the description trimmer",
     {"conveyor_emulator.served", "conveyor_emulator.make_trimmed"}),
    ("the public names", {"conveyor_emulator"}),
]
TYPE_ONLY: dict[str, set[str]] = {
    # a route's request carries the state changes
    "conveyor_emulator.routing": {"conveyor_emulator.ops"},
}


def node_of(module: str) -> str:
    if (ROOT / module.replace(".", "/")).is_dir() or module.count(".") == 1:
        return module
    return module.rpartition(".")[0]


def layer_rank(layers: list[tuple[str, set[str]]]) -> dict[str, int]:
    return {node: rank for rank, (_, nodes) in enumerate(layers) for node in nodes}


def direction_breaks(edges: dict[str, dict[str, bool]], layers: list[tuple[str, set[str]]]
                     ) -> list[str]:
    rank = layer_rank(layers)
    peers = {rank[next(iter(nodes))] for title, nodes in layers if title.startswith("peers")}
    breaks = []
    for module, targets in sorted(edges.items()):
        here = node_of(module)
        if here not in rank:
            continue
        for target, type_only in sorted(targets.items()):
            there = node_of(target)
            if there == here or there not in rank:
                continue
            if rank[there] < rank[here] or (rank[there] == rank[here] and rank[here] in peers):
                continue
            if type_only and there in TYPE_ONLY.get(here, set()):
                continue
            breaks.append(f"{module} -> {target}")
    return breaks


def test_every_package_has_a_layer() -> None:
    nodes = {node_of(module) for module in our_modules()}
    placed = set(layer_rank(BOT_LAYERS)) | set(layer_rank(EMULATOR_LAYERS))
    assert sorted(nodes - placed) == []
    assert sorted(placed - nodes) == []


def test_imports_go_down_the_layers() -> None:
    edges = import_edges()
    assert direction_breaks(edges, BOT_LAYERS) == []
    assert direction_breaks(edges, EMULATOR_LAYERS) == []


def test_an_import_up_a_layer_is_a_break() -> None:
    edges = {"bot.promotion.gate.gatekeeper": {"bot.promotion.dashboard.status": False},
             "bot.domain.gate.verdict": {"bot.github.client": False},
             "bot.promotion.gate.hold": {"bot.promotion.trains.opener": False},
             "bot.promotion.dashboard.issue": {"bot.capabilities": True},
             "bot.promotion.opening.opener": {"bot.capabilities": False, "bot.metrics": False}}
    assert direction_breaks(edges, BOT_LAYERS) == [
        "bot.domain.gate.verdict -> bot.github.client",
        "bot.promotion.dashboard.issue -> bot.capabilities",
        "bot.promotion.gate.gatekeeper -> bot.promotion.dashboard.status",
        "bot.promotion.gate.hold -> bot.promotion.trains.opener",
        "bot.promotion.opening.opener -> bot.capabilities",
    ]
