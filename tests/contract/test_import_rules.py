"""The layering of the code base, checked on its source: what each part may import.

- ledger/ is plain Python: no gRPC, no protobuf, no generated code, no services/ or clients/. It may
  use the stdlib-only modules both sides of the wire share, trainledger.pricing, trainledger.bills,
  trainledger.structs, trainledger.leases and trainledger.text.
- Inside ledger/, the layers import downwards only: domain/ imports only the domain; views/ the
  domain and the views; storage/ the domain, the views and storage. The backend factory
  (ledger.backend) and the application are above all three: nothing below imports them.
- clients/ never imports ledger/ or services/: it speaks to the ledger over the wire only.
- services/ holds one package per program and what they share: services.runtime (what a server
  process runs on) imports none of them; the gRPC edge (services.grpc) and the dashboard
  (services.web) import neither each other nor the CLI, and nothing from clients/;
  services.render (text for people) imports no program; only the CLI (services.cli) uses clients/.
- The run feed (services.runtime.feed, .followers) knows neither encoding: no gRPC, protobuf or HTTP.
- No module imports another module's private (underscore) names.

Every import is found by walking the syntax tree, including imports inside functions.
"""

from __future__ import annotations

import ast
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
