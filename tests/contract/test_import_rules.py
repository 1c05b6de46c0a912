"""The layering of the code base, checked on its source: what each part may import.

- ledger/ is plain Python: no gRPC, no protobuf, no generated code, no services/ or clients/. It may
  use the stdlib-only modules both sides of the wire share, trainledger.pricing, trainledger.bills,
  trainledger.structs, trainledger.leases and trainledger.text.
- Inside ledger/, the layers import downwards only: domain/ imports only the domain; views/ the
  domain and the views; storage/ the domain, the views and storage. The backend factory
  (ledger.backend) and the application are above all three: nothing below imports them.
- clients/ never imports ledger/ or services/: it speaks to the ledger over the wire only.
- services/ holds one package per program and what they share: services.runtime (what a server
  process runs on) imports none of them; the gRPC services (services.grpc) and the dashboard
  (services.web) import neither each other nor the CLI, and nothing from clients/;
  services.render (text for people) imports no program; only the CLI (services.cli) uses clients/.
- No installed package imports tests/ (the fakes of providers' services live there, not in the
  package).
- The run feed (services.runtime.feed, .followers) knows neither encoding: no gRPC, protobuf or HTTP.
- No module imports another module's private (underscore) names.
- No import circles: no module reaches itself through the modules it imports, counting imports
  inside functions and under TYPE_CHECKING (checked for the packages in CYCLE_FREE).
- The dashboard's ES modules (services/web/static) import only modules that are there, and no
  circle either.

Every import is found by walking the syntax tree, including imports inside functions.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_CONTRACT = (
    "trainledger.pricing",
    "trainledger.structs",
    "trainledger.bills",
    "trainledger.leases",
    "trainledger.text",
    "trainledger.fields",
)


def _sources(package: str) -> list[Path]:
    return sorted(path for path in (ROOT / package).rglob("*.py") if "_pb2" not in path.name)


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str = "") -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, names imported from it) for every import in `path`, the module
    `module` (by default, the one `path` is in the source tree)."""
    module = module or _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base, [alias.name for alias in node.names]


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _violations(package: str, allowed: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in _sources(package):
        for line, imported, _ in _imports(path):
            if _within(imported, forbidden) and not _within(imported, allowed):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    return found


def test_the_rule_finder_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    import grpc\n    from ..views import queries\n")
    found = list(_imports(source, "ledger.domain.probe"))
    assert [(line, name) for line, name, _ in found] == [(2, "grpc"), (3, "ledger.views")]


def test_the_ledger_imports_no_wire_no_server_and_no_client() -> None:
    assert (
        _violations(
            "ledger",
            SHARED_CONTRACT,
            ("grpc", "google", "trainledger", "services", "clients", "grpc_status", "grpc_health"),
        )
        == []
    )


@pytest.mark.parametrize(
    ("layer", "may_import"),
    [
        ("ledger/domain", ("ledger.domain",)),
        ("ledger/views", ("ledger.domain", "ledger.views")),
        ("ledger/storage", ("ledger.domain", "ledger.views", "ledger.storage")),
    ],
)
def test_each_layer_of_the_ledger_imports_only_what_lies_below_it(layer: str, may_import: tuple[str, ...]) -> None:
    found = []
    for path in _sources(layer):
        for line, imported, names in _imports(path):
            targets = [f"{imported}.{name}" for name in names] if imported == "ledger" else [imported]
            for target in targets:
                if _within(target, ("ledger",)) and not _within(target, may_import):
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert found == []


def test_clients_speak_to_the_ledger_only_over_the_wire() -> None:
    assert _violations("clients", (), ("ledger", "services")) == []


@pytest.mark.parametrize("package", ["ledger", "services", "clients", "trainledger"])
def test_no_installed_package_imports_the_tests(package: str) -> None:
    assert _violations(package, (), ("tests",)) == []


@pytest.mark.parametrize("package", ["ledger", "services", "clients", "trainledger"])
def test_no_module_imports_the_private_names_of_another(package: str) -> None:
    found = []
    for path in _sources(package):
        module = _module_of(path)
        for line, imported, names in _imports(path):
            private = [name for name in names if name.startswith("_") and not name.startswith("__")]
            if private and imported != module and _within(imported, ("ledger", "services", "clients", "trainledger")):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {private} from {imported}")
    assert found == []


SERVICES_PROGRAMS = (
    "services.grpc",
    "services.web",
    "services.cli",
    "services.server",
    "services.lifecycle",
    "services.embedded",
)


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("services/runtime", (*SERVICES_PROGRAMS, "services.render", "clients")),
        ("services/render", (*SERVICES_PROGRAMS, "services.runtime", "clients")),
        (
            "services/grpc",
            ("services.web", "services.cli", "services.server", "services.lifecycle", "services.render", "clients"),
        ),
        ("services/web", ("services.grpc", "services.cli", "services.server", "services.lifecycle", "clients")),
    ],
)
def test_each_program_of_services_keeps_to_its_package(package: str, forbidden: tuple[str, ...]) -> None:
    assert _violations(package, (), forbidden) == []


# The views are sliced by view: each slice holds one view's tables, handlers and reads, over what
# they share (the store's protocols and Query runner, how handlers are applied, row decoding, the
# read models); above them, what assembles them (the schema, the handlers' registry, ViewReader,
# the projector, the scratch rebuild).
VIEW_SLICES = (
    "ledger.views.runs",
    "ledger.views.series",
    "ledger.views.spend",
    "ledger.views.bills",
    "ledger.views.registry",
    "ledger.views.provenance",
    "ledger.views.reports",
    "ledger.views.search",
)
VIEWS_SHARED = ("ledger.views.store", "ledger.views.handling", "ledger.views.rows", "ledger.views.models")
VIEWS_ASSEMBLY = (
    "ledger.views.schema",
    "ledger.views.handlers",
    "ledger.views.queries",
    "ledger.views.projector",
    "ledger.views.scratch",
)


@pytest.mark.parametrize(
    ("modules", "forbidden"),
    [(VIEW_SLICES, VIEWS_ASSEMBLY), (VIEWS_SHARED, (*VIEW_SLICES, *VIEWS_ASSEMBLY))],
    ids=["slices", "shared"],
)
def test_the_views_slices_lie_below_what_assembles_them(modules: tuple[str, ...], forbidden: tuple[str, ...]) -> None:
    found = []
    for path in _sources("ledger/views"):
        if not _within(_module_of(path), modules):
            continue
        for line, imported, names in _imports(path):
            for target in (imported, *(f"{imported}.{name}" for name in names)):
                if _within(target, forbidden) and not _within(target, modules):
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert found == []


def test_the_contexts_of_the_application_reach_the_kernel_only_through_the_writer_and_the_reader() -> None:
    # Only the composition (ledger.application.ledger) builds on the kernel; a context is given
    # its writer and reader (ledger.application.context), never the application itself.
    found = []
    for path in _sources("ledger/application"):
        if path.name in ("kernel.py", "ledger.py"):
            continue
        for line, imported, _ in _imports(path):
            if _within(imported, ("ledger.application.kernel", "ledger.application.ledger")):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert found == []


@pytest.mark.parametrize("module", ["services/runtime/feed.py", "services/runtime/followers.py"])
def test_the_run_feed_knows_neither_encoding(module: str) -> None:
    """The feed that WatchRun and the dashboard's SSE share leaves the wire to its encoders
    (services.grpc.watch, services.web.live): no gRPC, protobuf or HTTP in it."""
    wire = ("grpc", "google.protobuf", "trainledger.v1", "starlette", "services.grpc", "services.web")
    found = [
        f"{module}:{line} imports {imported}"
        for line, imported, _ in _imports(ROOT / module)
        if _within(imported, wire)
    ]
    assert found == []


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of `modules` it imports: `from package import module` names the
    module, `from module import name` the module."""
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        for _, imported, names in _imports(path, module):
            targets = [f"{imported}.{name}" for name in names if f"{imported}.{name}" in modules]
            for target in targets or ([imported] if imported in modules else []):
                if target != module:
                    graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`: its strongly connected parts of more than one module
    (Tarjan's algorithm, without recursion), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            following = next(successors, None)
            if following is not None:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(sorted(graph[following]))))
                elif following in on_stack:
                    low[node] = min(low[node], index[following])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def test_the_cycle_finder_sees_a_circle_closed_inside_a_function(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from services.cli import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from services.cli.c import g\n")
    (tmp_path / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from services.cli.a import x\n"
    )
    (tmp_path / "d.py").write_text("import services.cli.a\n")
    modules = {f"services.cli.{name}": tmp_path / f"{name}.py" for name in "abcd"}
    assert _cycles(_graph(modules)) == [["services.cli.a", "services.cli.b", "services.cli.c"]]


# Every package: no module imports itself through others. An aggregate's module (whose classes
# name the stored topics) imports none of the modules of commands over it, and an import moved
# into a function to dodge a circle is still a circle.
CYCLE_FREE = ("ledger", "services", "clients", "trainledger")


@pytest.mark.parametrize("package", CYCLE_FREE)
def test_no_module_imports_itself_through_others(package: str) -> None:
    modules = {
        _module_of(path): path for top in ("ledger", "services", "clients", "trainledger") for path in _sources(top)
    }
    circles = [circle for circle in _cycles(_graph(modules)) if any(_within(m, (package,)) for m in circle)]
    assert circles == []


STATIC = ROOT / "services" / "web" / "static"


def _script_graph() -> dict[str, set[str]]:
    """The dashboard's ES modules -> the modules beside them that they import, statically
    (`from "./x.js"`) or lazily (`import("./x.js")`)."""
    found = r"""(?:from\s+|import\(\s*)["']\./([\w.-]+\.js)["']"""
    return {path.name: set(re.findall(found, path.read_text(encoding="utf-8"))) for path in STATIC.glob("*.js")}


def test_the_dashboard_modules_import_modules_that_are_there_and_no_circle() -> None:
    graph = _script_graph()
    assert graph["dashboard.js"]  # the entry the pages load starts the others
    assert sorted((module, name) for module, names in graph.items() for name in names if name not in graph) == []
    assert _cycles(graph) == []
