"""The package's shape, checked: its rooms on floors with every import going down, no import cycles, no private
names across modules, small modules, a true `__all__`, and docs/architecture.md naming every module that exists (and
no other) and drawing the floors as they are here."""

from __future__ import annotations

import ast
import re
import types
from pathlib import Path

import bertlens

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bertlens"
MAX_LINES = 400
# Modules allowed to pass MAX_LINES, each with its reason: a sentence of why this module cannot be split along a line
# that means something, whose words before the first colon the module's docstring also says. None needs one today.
LONGER: dict[str, str] = {}

# The package's rooms (its top-level modules and subpackages) on floors, the ground first. A room imports only rooms on
# floors below its own: never one beside it, never one above (type-only imports under TYPE_CHECKING included), so that
# every capability can be read, tested and changed without the ones above it. A new package takes a floor here and in
# docs/architecture.md.
FLOORS: list[set[str]] = [
    {"core"},  # models, tokens, options, outputs, results, errors
    {"embeddings"},  # the embedding layer, static rows, token classes, exports
    {"similarity", "contextual"},  # the input matrix searched; the forward pass and its vectors
    {"occurrences", "views", "extend", "spaces"},  # a corpus's index; many vectors at once; new words; two spaces
    {"senses", "wic"},  # a word's senses in an index; same sense or not
    {"plots", "web"},  # pictures of results; the local explorer
    {"training"},  # a small BERT trained and watched (its reports draw with plots)
    {"lens"},  # the facade
    {"cli"},  # the command line
    {"__init__", "__main__"},  # the public names; `python -m bertlens`
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports under `if TYPE_CHECKING:` (never run, so never part of a cycle)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        lines.add(sub.lineno)
    return lines


def imports(name: str, *, type_checking: bool = False) -> list[tuple[str, str, int]]:
    """(imported bertlens module, imported name or "", line) for every import that runs in module `name` (and those
    under TYPE_CHECKING too with `type_checking`)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = set() if type_checking else type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str, int]] = []
    for node in ast.walk(tree):
        if node.lineno in skip if isinstance(node, (ast.Import, ast.ImportFrom)) else True:
            continue
        if isinstance(node, ast.Import):
            found += [(a.name, "", node.lineno) for a in node.names if a.name.startswith("bertlens")]
            continue
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if not target.startswith("bertlens"):
            continue
        for alias in node.names:
            submodule = f"{target}.{alias.name}"
            if submodule in MODULES:
                found.append((submodule, "", node.lineno))
            else:
                found.append((target, alias.name, node.lineno))
    return found


def import_graph() -> dict[str, set[str]]:
    return {name: {target for target, _, _ in imports(name) if target in MODULES} for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def room(name: str) -> str:
    """The room a module stands in: `bertlens.senses.senses` -> "senses", `bertlens.lens` -> "lens"."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor_of() -> dict[str, int]:
    return {name: number for number, rooms in enumerate(FLOORS, start=1) for name in rooms}


def test_every_room_stands_on_one_floor():
    rooms = {room(name) for name in MODULES} | {"__main__"}
    placed = [name for floor in FLOORS for name in floor]
    assert len(placed) == len(set(placed)), "a room on two floors"
    assert sorted(rooms - set(placed)) == [], "rooms FLOORS does not place"
    assert sorted(set(placed) - rooms) == [], "placed in FLOORS, not in the package"


def test_every_import_goes_down_a_floor():
    """No arrow back up and none sideways: a room imports rooms on lower floors only (type-only imports included)."""
    floor = floor_of()
    upward = sorted(
        f"{name}:{line} imports {target} (floor {floor[room(target)]} from floor {floor[room(name)]})"
        for name in MODULES
        for target, _, line in imports(name, type_checking=True)
        if room(target) != room(name) and floor[room(target)] >= floor[room(name)]
    )
    assert upward == []


def test_no_import_cycles():
    """Imports that run (at module level or inside functions), not those under TYPE_CHECKING. The top-level
    `bertlens/__init__.py` is left out: it gathers the public API and no module imports it."""
    graph = import_graph()
    assert not any("bertlens" in targets for targets in graph.values()), "a module imports the top-level package"
    graph.pop("bertlens")
    assert cycles(graph) == []


def test_no_private_name_is_imported_from_another_module():
    offenders = [
        f"{name}:{line} imports {imported} from {target}"
        for name in MODULES
        for target, imported, line in imports(name)
        if imported.startswith("_") and not imported.startswith("__")
    ]
    assert offenders == []


def test_modules_are_short():
    long = {
        str(path.relative_to(ROOT)): count
        for path in MODULES.values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert set(long) <= set(LONGER), long
    for path, reason in LONGER.items():
        assert reason and reason.split(":")[0].strip() in (ROOT / path).read_text(encoding="utf-8"), path


def test_every_module_says_what_it_holds():
    missing = [name for name, path in MODULES.items() if ast.get_docstring(ast.parse(path.read_text("utf-8"))) is None]
    assert [m for m in missing if not m.endswith("__main__")] == []


def test_all_is_exactly_the_public_api():
    """As httpx checks its own: every public name the package has is in `__all__`, and nothing else (ruff's RUF022
    keeps it sorted)."""
    lazy = set(bertlens.__all__) - set(vars(bertlens))
    public = {
        name
        for name, value in vars(bertlens).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert len(set(bertlens.__all__)) == len(bertlens.__all__) <= 40  # short: each package exports the rest
    assert set(bertlens.__all__) == public | lazy
    for name in lazy:  # imported on first use, and then there
        assert getattr(bertlens, name) is not None, name


def architecture_doc() -> str:
    return (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def documented_paths() -> set[str]:
    """The files of the tree drawn in docs/architecture.md, as paths (`bertlens/core/model.py`)."""
    block = re.search(r"```text\n(bertlens/\n.*?)```", architecture_doc(), re.DOTALL)
    assert block, "docs/architecture.md draws no tree (a ```text block starting with bertlens/)"
    paths: set[str] = set()
    folders = ["bertlens"]
    for line in block.group(1).splitlines()[1:]:
        match = re.match(r"^((?:│   |    )*)(?:├── |└── )(\S+)", line)
        assert match, f"not a tree line: {line!r}"
        depth = len(match.group(1)) // 4 + 1
        name = match.group(2)
        del folders[depth:]
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
        else:
            paths.add("/".join([*folders, name]))
    return paths


def documented_floors() -> list[set[str]]:
    """The floors docs/architecture.md draws (a ```text block of `floor N  room, room` lines), the ground first."""
    block = re.search(r"```text\n(floor .*?)```", architecture_doc(), re.DOTALL)
    assert block, "docs/architecture.md draws no floors (a ```text block of `floor N  rooms` lines)"
    floors: dict[int, set[str]] = {}
    for line in block.group(1).splitlines():
        match = re.match(r"^floor +(\d+) +(.+?)(?:  +.*)?$", line)
        assert match, f"not a floor line: {line!r}"
        names = match.group(2).split(",")
        floors[int(match.group(1))] = {name.strip().strip("/").removesuffix(".py") for name in names}
    return [floors[number] for number in sorted(floors)]


def test_architecture_doc_draws_the_floors():
    assert documented_floors() == FLOORS


def test_architecture_doc_names_every_module():
    documented = documented_paths()
    actual = {str(p.relative_to(ROOT)) for p in MODULES.values() if p.name not in ("__init__.py", "__main__.py")}
    assert sorted(actual - documented) == [], "modules the tree in docs/architecture.md does not show"
    every = {str(p.relative_to(ROOT)) for p in MODULES.values()}
    assert sorted(documented - every) == [], "shown in docs/architecture.md, not in the package"
