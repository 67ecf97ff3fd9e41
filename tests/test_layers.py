"""The package's house rules, checked on the source: imports run one way, no private name crosses a
package boundary, only one module imports each solver library (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "fairshare"

# Layers, lowest first. A module may import fairshare modules of its own layer or of a lower one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("fairshare.errors", "fairshare._validate", "fairshare._compat", "fairshare._io")),
    ("core", ("fairshare.problem", "fairshare.documents", "fairshare.fair_share", "fairshare.formulation",
              "fairshare.allocation", "fairshare.validators", "fairshare.priority", "fairshare.packing",
              "fairshare.cluster", "fairshare.running", "fairshare.shortfall_price", "fairshare.kept_jobs")),
    ("solvers", ("fairshare.solvers",)),
    ("methods", ("fairshare.methods", "fairshare.allocate", "fairshare.binding", "fairshare.engine",
                 "fairshare.engine_config", "fairshare.engine_events", "fairshare.engine_plans",
                 "fairshare.engine_rounds", "fairshare.engine_state", "fairshare.testing")),
    ("policies", ("fairshare.policies",)),
    ("sim", ("fairshare.sim",)),
    ("kube", ("fairshare.kube",)),
    ("cli", ("fairshare.cli", "fairshare.__main__")),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer_of(module: str) -> int | None:
    """Index of the layer of a fairshare module; None for the package index (fairshare/__init__)."""
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (i, len(prefix))
    return None if best is None else best[0]


def _imports(path: Path, module: str) -> list[tuple[str, tuple[str, ...], int]]:
    """(imported module, imported names, line) for every fairshare import, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, (), node.lineno) for a in node.names if a.name.startswith("fairshare")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.startswith("fairshare"):
                out.append((base, tuple(a.name for a in node.names), node.lineno))
    return out


def _subpackage(module: str) -> str:
    """The package a module belongs to: ``fairshare.sim.catalog.files`` -> ``fairshare.sim.catalog``."""
    path = MODULES.get(module)
    if path is not None and path.name == "__init__.py":
        return module
    return module.rsplit(".", 1)[0]


def test_every_module_has_a_layer():
    missing = [m for m in MODULES if m != "fairshare" and layer_of(m) is None]
    assert missing == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "fairshare"))
def test_imports_run_one_way(module):
    mine = layer_of(module)
    assert mine is not None
    upward = []
    for target, names, line in _imports(MODULES[module], module):
        candidates = [target] + [f"{target}.{n}" for n in names]
        for cand in candidates:
            if cand in MODULES or cand == target:
                their = layer_of(cand)
                if their is not None and their > mine:
                    upward.append(f"line {line}: {cand} ({LAYERS[their][0]}) from {LAYERS[mine][0]}")
    assert upward == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_crosses_a_package_boundary(module):
    home = _subpackage(module)
    bad = []
    for target, names, line in _imports(MODULES[module], module):
        target_pkg = _subpackage(target) if target in MODULES else target.rsplit(".", 1)[0]
        # a private module of another package (fairshare.policies._timeshare from fairshare.sim.x)
        last = target.rsplit(".", 1)[-1]
        if last.startswith("_") and last != "__init__" and not home.startswith(target_pkg):
            bad.append(f"line {line}: module {target}")
        # a private name of a module in another package (from fairshare.allocate import _result)
        for n in names:
            sub = f"{target}.{n}"
            if n.startswith("_") and sub not in MODULES and target_pkg != home and not home.startswith(target):
                bad.append(f"line {line}: {target}.{n}")
    assert bad == []


@pytest.mark.parametrize(("library", "allowed"), [("highspy", {"fairshare.solvers.highs"}),
                                                  ("pyomo", {"fairshare.solvers.pyomo"})])
def test_one_module_imports_each_solver_library(library, allowed):
    users = set()
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n == library or n.startswith(library + ".") for n in names):
                users.add(module)
    assert users <= allowed


def test_the_layer_checker_catches_an_upward_import(tmp_path):
    # the checker itself: a core module importing the simulator is reported
    assert layer_of("fairshare.formulation") < layer_of("fairshare.sim.simulator")
    assert layer_of("fairshare.methods.fast") > layer_of("fairshare.solvers")
    assert layer_of("fairshare.cli") == len(LAYERS) - 1


def _private_attributes(path: Path) -> set[str]:
    """Private attribute names a module's classes define: methods, fields, ``self._x = ...`` and
    ``object.__setattr__(self, "_x", ...)``."""
    out: set[str] = set()
    for cls in (n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            name = None
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = node.name
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                name = node.target.id
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            elif (isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str)):
                name = node.args[1].value
            if name and name.startswith("_") and not name.startswith("__"):
                out.add(name)
    return out


DEFINED: dict[str, set[str]] = {}
for _module, _path in MODULES.items():
    DEFINED.setdefault(_subpackage(_module), set()).update(_private_attributes(_path))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_attribute_is_read_across_a_package_boundary(module):
    """``obj._name`` where ``_name`` belongs to the classes of another package only (``problem._job_keys`` from
    fairshare.methods): the public name (``problem.job_keys``) is the way in."""
    home = _subpackage(module)
    mine = DEFINED.get(home, set())
    theirs = {name: pkg for pkg, names in DEFINED.items() if pkg != home for name in names}
    bad = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and node.attr not in mine and node.attr in theirs):
            bad.append(f"line {node.lineno}: .{node.attr} ({theirs[node.attr]})")
    assert bad == []


def test_only_the_solvers_package_imports_a_backend_module():
    """Above the solvers, a backend is reached through the contract (``fairshare.solvers``), never by module."""
    backends = {m for m in MODULES if m.startswith("fairshare.solvers.") and m != "fairshare.solvers.base"}
    users = {module: target for module in MODULES if not module.startswith("fairshare.solvers")
             for target, _, _ in _imports(MODULES[module], module) if target in backends}
    assert users == {}
