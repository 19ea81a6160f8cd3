"""Guards on the project's shape: import direction, packaging, and the newcomer's two commands."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imported_top_levels(package: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        out[str(path.relative_to(ROOT))] = names
    return out


def test_builders_never_import_harness() -> None:
    offenders = [p for p, names in _imported_top_levels("builders").items() if "harness" in names]
    assert offenders == [], f"builders must depend on pqb_dataset only, not harness: {offenders}"


def test_harness_never_imports_builders() -> None:
    offenders = [p for p, names in _imported_top_levels("harness").items() if "builders" in names]
    assert offenders == [], f"harness must depend on pqb_dataset only, not builders: {offenders}"


def test_schema_package_imports_neither() -> None:
    bad = {p: n & {"harness", "builders"} for p, n in _imported_top_levels("pqb_dataset").items()}
    assert not any(bad.values()), bad


def test_every_python_package_is_declared_in_pyproject() -> None:
    """The package list is explicit (tasks/ is mapped to pqb.harness.tasks); a new subpackage must be added."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(config["packages"])
    mapped = {str(Path(v)): k for k, v in config.get("package-dir", {}).items()}
    found = set()
    for init in ROOT.glob("**/__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts[0] in {".venv", "tests", "work", "build"} or rel.parts[0].startswith("."):
            continue
        found.add(mapped.get(str(rel), ".".join(rel.parts)))
    assert found == declared, f"undeclared: {sorted(found - declared)}, stale: {sorted(declared - found)}"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(r"```(?:bash|sh)\n(.*?)```", readme, flags=re.S)
    test_cmds = [c.strip() for c in commands if "scripts/test.sh" in c]
    assert test_cmds, "README must show the test command (bash scripts/test.sh)"
    assert "scripts/test.sh" in ci
