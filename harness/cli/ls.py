"""``pqb-harness ls tasks|models|groups``: list what can be run (imports no retriever back-end)."""

from __future__ import annotations

import argparse
import sys

HELP = "List tasks, groups or models."
EPILOG = """examples:
  pqb-harness ls tasks
  pqb-harness ls groups
  pqb-harness ls models
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=("tasks", "models", "groups", "tags"), help="what to list")
    p.add_argument("--include_path", action="append", default=[], help="extra folder of task YAMLs")


def _tasks(include: list[str]) -> list[str]:
    """One row per task, marking whether its rows and corpus are in the local dataset it would read
    (``no`` when that dataset is the Hub or lacks them); a ``note:`` on stderr names those without."""
    from pqb.harness.evaluation.data import local_configs
    from pqb.harness.evaluation.task_registry import TaskRegistry

    reg = TaskRegistry(include)
    lines = ["| task | pair type | dataset | tags | main score | local data |", "|---|---|---|---|---|---|"]
    found: dict[str, set[str] | None] = {}
    missing: list[str] = []
    for name, c in sorted(reg.tasks.items()):
        path = c.resolved_dataset_path()
        have = found.setdefault(path, local_configs(path)) or set()
        local = c.dataset_name in have and c.corpus in have
        missing += [] if local else [name]
        lines.append(f"| {name} | {c.pair_type} | {c.dataset_name} | {','.join(c.tag)} | {c.main_score} | "
                     f"{'yes' if local else 'no'} |")  # fmt: skip
    if missing:
        where = ", ".join(sorted(found))
        print(f"note: {len(missing)} of {len(reg.tasks)} tasks have no local data in {where}: "
              f"{', '.join(missing)} (run skips them; build them with pqb-build all --domain <domain>)",
              file=sys.stderr)  # fmt: skip
    return lines


def _groups(include: list[str]) -> list[str]:
    from pqb.harness.evaluation.task_registry import TaskRegistry

    reg = TaskRegistry(include)
    lines = ["| group | members | tasks |", "|---|---|---|"]
    for name, g in sorted(reg.groups.items()):
        lines.append(f"| {name} | {','.join(g.task)} | {len(reg.expand(name))} |")
    return lines


def _tags(include: list[str]) -> list[str]:
    from pqb.harness.evaluation.task_registry import TaskRegistry

    return [f"{tag}: {', '.join(names)}" for tag, names in TaskRegistry(include).tags().items()]


def _models() -> list[str]:
    """Every model and preset with the one ``pip install`` line for what it needs (the same text its
    missing-piece error gives)."""
    from pqb.harness.model_presets import PRESETS
    from pqb.harness.registry import MODEL_REGISTRY, install_line

    lines = ["| model | kind | class / base | needs |", "|---|---|---|---|"]
    for name in MODEL_REGISTRY.names():
        lines.append(f"| {name} | model | {MODEL_REGISTRY.target(name)} | {install_line(name) or 'base install'} |")
    for name, p in sorted(PRESETS.items()):
        args = ",".join(f"{k}={v}" for k, v in p.get("args", {}).items())
        lines.append(f"| {name} | preset | {p['model']} {args} | {install_line(name) or 'base install'} |")
    return lines


def run(args: argparse.Namespace) -> int:
    if args.what == "models":
        lines = _models()
    else:
        lines = {"tasks": _tasks, "groups": _groups, "tags": _tags}[args.what](args.include_path)
    print("\n".join(lines))
    return 0
