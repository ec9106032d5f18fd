"""The package's imports follow its layers (docs/architecture.md): a module imports from its own layer
and the layers below it only, so no import runs up a layer and no two layers import each other.

Read from the source (every `import` and `from ... import`, relative ones resolved, those inside
functions and under TYPE_CHECKING included): an import placed where it runs late is still an import.
"""

from __future__ import annotations

import ast
from pathlib import Path

from paths import PACKAGE, ROOT

# Lowest first. A layer is a subpackage of otelguard, or a module at its top.
LAYERS = (
    "errors", "_version", "runtime", "model", "conventions", "detectors", "guards", "engine", "otlp", "replay",
    "reactions", "report", "live", "integrations", "hooks", "analyzer", "service", "demo",
    "__init__",  # the package's face: the public names, from the layers that define them
    "records", "actions",  # import aliases of moved modules, kept one release
    "cli", "entry", "__main__",
)
MAX_TOP_LEVEL_MODULES = 8
# The drivers share the layers below them, not each other's modules; the two ties that are part of
# what a driver is: integrations build on the live API, and serve answers the hooks' protocol.
DRIVERS = ("live", "integrations", "hooks", "analyzer", "service")
DRIVER_TIES = {("integrations", "live"), ("service", "hooks")}


def _layer(module: str) -> str:
    """`otelguard.engine.agents` -> `engine`; `otelguard` (the package itself) -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_of(path: Path) -> tuple[str, str]:
    """(the module's dotted name, the package its relative imports start from)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        name = ".".join(parts[:-1])
        return name, name
    name = ".".join(parts)
    return name, name.rsplit(".", 1)[0]


def _exists(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> set[str]:
    return _imports_of(path.read_text(), _module_of(path)[1])


def _imports_of(source: str, package: str) -> set[str]:
    """The otelguard modules `source` imports, its relative imports read from `package` (a name
    imported from a package counts as its module when it is one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "otelguard")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "otelguard":
                continue
            submodules = {f"{target}.{alias.name}" for alias in node.names if _exists(f"{target}.{alias.name}")}
            found.update(submodules or {target})
    return found


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted({_layer(_module_of(path)[0]) for path in _modules()} - set(LAYERS))
    assert not unplaced, f"not in LAYERS (place them, lowest first): {unplaced}"


def _upward(module: str, imported: set[str]) -> list[str]:
    """The imports of `module` that run up a layer."""
    rank = {layer: index for index, layer in enumerate(LAYERS)}
    return [f"{module} -> {target}" for target in sorted(imported)
            if rank.get(_layer(target), -1) > rank.get(_layer(module), -1)]


def test_no_import_runs_up_a_layer() -> None:
    upward = [line for path in _modules() for line in _upward(_module_of(path)[0], _imports(path))]
    assert not upward, "imports running up a layer:\n" + "\n".join(upward)


def test_no_driver_reaches_into_another() -> None:
    sideways = []
    for path in _modules():
        module = _module_of(path)[0]
        layer = _layer(module)
        for imported in sorted(_imports(path)):
            other = _layer(imported)
            if layer in DRIVERS and other in DRIVERS and other != layer and (layer, other) not in DRIVER_TIES:
                sideways.append(f"{module} -> {imported}")
    assert not sideways, "drivers importing another driver:\n" + "\n".join(sideways)


def test_the_package_top_holds_few_modules() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_the_check_sees_an_upward_import_inside_a_function() -> None:
    imported = _imports_of("def late():\n    from ..engine import GuardEngine\n    return GuardEngine\n",
                           "otelguard.model")
    assert imported == {"otelguard.engine"}
    assert _upward("otelguard.model.records", imported) == ["otelguard.model.records -> otelguard.engine"]
    assert _upward("otelguard.guards.base", {"otelguard.model.records"}) == []
