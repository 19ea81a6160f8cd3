"""``pqb-harness ls tasks|models|groups``: list what can be run (imports no retriever back-end)."""

from __future__ import annotations

import argparse

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
    from pqb.harness.task_registry import TaskRegistry

    reg = TaskRegistry(include)
    lines = ["| task | pair type | dataset | tags | main score |", "|---|---|---|---|---|"]
    for name, c in sorted(reg.tasks.items()):
        lines.append(f"| {name} | {c.pair_type} | {c.dataset_name} | {','.join(c.tag)} | {c.main_score} |")
    return lines


def _groups(include: list[str]) -> list[str]:
    from pqb.harness.task_registry import TaskRegistry

    reg = TaskRegistry(include)
    lines = ["| group | members | tasks |", "|---|---|---|"]
    for name, g in sorted(reg.groups.items()):
        lines.append(f"| {name} | {','.join(g.task)} | {len(reg.expand(name))} |")
    return lines


def _tags(include: list[str]) -> list[str]:
    from pqb.harness.task_registry import TaskRegistry

    return [f"{tag}: {', '.join(names)}" for tag, names in TaskRegistry(include).tags().items()]


def _models() -> list[str]:
    from pqb.harness.model_presets import PRESETS
    from pqb.harness.registry import MODEL_REGISTRY, model_extra

    lines = ["| model | kind | class / base | needs |", "|---|---|---|---|"]
    for name in MODEL_REGISTRY.names():
        extra = model_extra(name)
        lines.append(
            f"| {name} | model | {MODEL_REGISTRY.target(name)} | {f'pqb[{extra}]' if extra else 'base install'} |"
        )
    for name, p in sorted(PRESETS.items()):
        extra = model_extra(name)
        args = ",".join(f"{k}={v}" for k, v in p.get("args", {}).items())
        lines.append(
            f"| {name} | preset | {p['model']} {args} | {f'pqb[{extra}]' if extra else 'base install'} |"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    if args.what == "models":
        lines = _models()
    else:
        lines = {"tasks": _tasks, "groups": _groups, "tags": _tags}[args.what](args.include_path)
    print("\n".join(lines))
    return 0
