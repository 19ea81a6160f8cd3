"""Safe in shared folders, harness side (issue 45): results files that prove themselves, a leaderboard
that touches only its own files, names that cannot escape a folder, bounded sizes.

The dataset is the SYNTHETIC tiny one (tests/pqb_fixtures.py); the leaderboard fixtures are hand-made
(tests/data/leaderboard/README.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_harness_trust import run as _run  # (exit code, stderr) of pqb-harness

DATA = Path(__file__).parent / "data" / "leaderboard" / "results"
ERR = "pqb_error_video_games"


def _one_error_line(err: str, *fragments: str) -> str:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and all(f in errors[0] for f in fragments), err
    return errors[0]


def _results(tmp_path: Path, capsys, name: str = "a", *extra: str) -> Path:
    """A fresh results file of bm25 on the tiny dataset's syntactic and error tasks (50 replicates)."""
    from pqb_fixtures import make_tiny_dataset

    dataset = tmp_path / "ds"
    if not dataset.exists():
        make_tiny_dataset(dataset)
    argv = ["run", "--model", "bm25", "--tasks", "pqb", "--dataset_path", str(dataset), "--output_path",
            str(tmp_path / name), "--bootstrap_iters", "50", "--verbosity", "ERROR", "--no-progress", *extra]  # fmt: skip
    code, err = _run(capsys, *argv)
    assert code == 0, err
    [path] = (tmp_path / name).glob("bm25/results_*.json")
    return path


def _edit(path: Path, change, to: Path | None = None, *, unsealed: bool = False) -> Path:
    """``path`` rewritten by ``change(obj)`` (at ``to``): an edit after the run; ``unsealed``: as a file of
    schema 1.4, which carries no digest."""
    obj = json.loads(path.read_text(encoding="utf-8"))
    change(obj)
    if unsealed:
        obj.pop("content_digest", None)
        obj["schema_version"] = "1.4"
    to = to or path
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_text(json.dumps(obj), encoding="utf-8")
    return to


# -- a results file carries its digest ------------------------------------------------------------------


def test_a_fresh_results_file_verifies_and_names_the_part_an_edit_changed(tmp_path, capsys) -> None:
    from pqb.harness.errors import EditedResultsError
    from pqb.harness.evaluation.integrity import content_digest
    from pqb.harness.evaluation.results import load_results

    path = _results(tmp_path, capsys)
    obj = json.loads(path.read_text(encoding="utf-8"))
    assert obj["schema_version"] == "1.5" and obj["content_digest"] == content_digest(obj)
    load_results(path)
    assert "note:" not in capsys.readouterr().err
    _edit(path, lambda o: o["config"].update(model="bm25-tuned"))
    with pytest.raises(EditedResultsError, match=r"first disagreeing key: config\)"):
        load_results(path)
    _edit(path, lambda o: o.pop("content_digest"))  # stripping the digest is an edit too
    with pytest.raises(EditedResultsError, match=r"has no content_digest although its schema_version 1\.5"):
        load_results(path)


def test_files_older_than_the_digest_are_read_with_a_note(tmp_path, capsys, caplog) -> None:
    code, err = _run(
        capsys, "leaderboard", str(DATA), "--out", str(tmp_path / "lb"), "--no-plots", "--no-html"
    )
    assert code == 0
    assert caplog.text.count("carries no content digest") == 4 and "error:" not in err


# -- row 5: edited ranks in `compare` ----------------------------------------------------------------------


def _ranks_to_one(obj: dict) -> None:
    r = obj["ranks"][ERR]
    r["rank"] = [1 if q.endswith("_error") else x for q, x in zip(r["query_id"], r["rank"], strict=True)]


def test_compare_refuses_ranks_edited_after_the_run(tmp_path, capsys, caplog) -> None:
    """Every error-side rank of B edited to 1: `compare` showed B's Deg@1 as −1.90 (p = 0.005) where B's
    own results said +1.90, exit 0."""
    a = _results(tmp_path, capsys, "a")
    b = _results(tmp_path, capsys, "b", "--model_args", "k1=0.5")
    cmp = ["compare", str(a), "--bootstrap_iters", "20", "--permutations", "20"]
    edited = _edit(b, _ranks_to_one, tmp_path / "edited" / b.name)
    code, err = _run(capsys, *cmp, str(edited))
    assert code == 1
    _one_error_line(err, str(edited), f"first disagreeing key: ranks/{ERR}", "--allow-edited")
    old = _edit(b, _ranks_to_one, tmp_path / "old" / b.name, unsealed=True)  # no digest to catch it
    code, err = _run(capsys, *cmp, str(old))
    assert code == 1
    _one_error_line(err, str(old), f"results/{ERR}/", "but its stored ranks give")
    code, err = _run(capsys, *cmp, str(edited), "--allow-edited")  # a loud note, then the comparison
    assert code == 0 and f"{edited}: read with --allow-edited" in caplog.text and "error:" not in err


# -- row 11: ranks that cannot be paired ------------------------------------------------------------------


def test_compare_of_a_rank_list_shorter_than_its_query_ids_is_one_line(tmp_path, capsys) -> None:
    """A bare ``ValueError`` traceback from ``zip`` once."""
    a = _results(tmp_path, capsys, "a")
    short = _edit(a, lambda o: o["ranks"][ERR]["rank"].pop(), tmp_path / "short" / a.name)
    for extra in ([], ["--allow-edited"]):  # not a matter of trust: nothing can pair these
        code, err = _run(capsys, "compare", str(a), str(short), *extra)
        assert code == 1
        _one_error_line(err, str(short), f"ranks/{ERR} holds", "ranks for")


# -- row 6: an edited metric in `leaderboard` ---------------------------------------------------------------


def test_leaderboard_refuses_a_metric_edited_after_the_run(tmp_path, capsys, caplog) -> None:
    """``deg@1`` edited to −0.5: the domain table showed −50.00 bold ("most robust") with a CI (−0.48–4.30)
    that did not contain it, beside a one-domain average that still said 1.90."""
    a = _results(tmp_path, capsys, "a")
    lb = ["leaderboard", "--out", str(tmp_path / "lb"), "--no-plots", "--no-html", "--no-paper"]
    set_deg = lambda v: lambda o: o["results"][ERR].update({"deg@1": v})  # noqa: E731
    edited = _edit(a, set_deg(-0.5), tmp_path / "edited" / "bm25" / a.name)
    code, err = _run(capsys, *lb, str(edited.parent.parent))
    assert code == 1
    _one_error_line(err, str(edited), f"first disagreeing key: results/{ERR}")
    assert not (tmp_path / "lb").exists()
    old = _edit(a, set_deg(-0.5), tmp_path / "old" / "bm25" / a.name, unsealed=True)
    code, err = _run(capsys, *lb, str(old.parent.parent))
    assert code == 1
    _one_error_line(err, f"results/{ERR}/deg@1 = -0.5 lies outside its own 95% CI")
    obj = json.loads(a.read_text(encoding="utf-8"))  # inside its CI, but not what its one-domain group says
    cis = obj["confidence_intervals"][ERR].items()
    metric, (lo, hi) = next((m, ci) for m, ci in cis if None not in ci and ci[0] < ci[1] and "ratio" not in m)
    moved = (lo + hi) / 2 if obj["results"][ERR][metric] != (lo + hi) / 2 else (lo + 3 * hi) / 4
    change = lambda o: o["results"][ERR].update({metric: moved})  # noqa: E731
    inside = _edit(a, change, tmp_path / "inside" / "bm25" / a.name, unsealed=True)
    code, err = _run(capsys, *lb, str(inside.parent.parent))
    assert code == 1
    _one_error_line(err, f"/{metric} = ", f"but its one task {ERR} says")
    code, err = _run(capsys, *lb, str(edited.parent.parent), "--allow-edited")
    assert code == 0 and "read with --allow-edited" in caplog.text


def test_compare_paper_refuses_an_edited_file_too(tmp_path, capsys) -> None:
    a = _results(tmp_path, capsys, "a")
    edited = _edit(a, lambda o: o["results"][ERR].update({"deg@1": 0.5}), tmp_path / "e" / "bm25" / a.name)
    code, err = _run(capsys, "compare-paper", str(edited.parent.parent))
    assert code == 1
    _one_error_line(err, str(edited), "--allow-edited")


# -- row 4: names from file content ---------------------------------------------------------------------------


def _rename_task(obj: dict, new: str) -> None:
    for section in obj.values():
        if isinstance(section, dict) and ERR in section:
            section[new] = section.pop(ERR)
    obj["configs"][new]["task"] = new


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda o: _rename_task(o, "x/../../../escaped_plot"), "x/../../../escaped_plot"),
        (lambda o: o["configs"][ERR].update(dataset_name="../../escaped_plot"), "dataset_name"),
        (lambda o: _rename_task(o, "t" * 301), "too long"),
        (lambda o: o["config"].update(model="bm25\n| forged | row |"), "config/model"),
    ],
    ids=["task", "dataset_name", "long_task", "model_with_newline"],
)
def test_a_name_from_a_results_file_cannot_escape_the_out_folder(tmp_path, capsys, change, where) -> None:
    """A task or ``dataset_name`` holding ``/../`` made the leaderboard write its plots outside ``--out``:
    a results file from a colleague or a Hub results repo could overwrite any image the user can write."""
    a = _results(tmp_path, capsys, "a")
    bad = _edit(a, change, tmp_path / "in" / "bm25" / a.name, unsealed=True)
    before = {p for p in tmp_path.rglob("*") if p.is_file()}
    code, err = _run(capsys, "leaderboard", str(bad.parent.parent), "--out", str(tmp_path / "x" / "lb"),
                     "--allow-edited")  # fmt: skip
    assert code == 1
    _one_error_line(err, str(bad), where)
    assert {p for p in tmp_path.rglob("*") if p.is_file()} == before  # nothing written anywhere


# -- row 3: the user's files in --out --------------------------------------------------------------------------


def test_leaderboard_removes_only_what_its_earlier_call_wrote(tmp_path, capsys, monkeypatch) -> None:
    """`leaderboard --out <a folder holding the user's files>` deleted ``plots/figure_1.png``,
    ``plots/my_diagram.svg``, ``significance.md`` and ``significance.csv`` (and ``index.html`` with
    ``--no-html``), none of which it wrote; no message."""
    from test_leaderboard_hub import Recorder

    out = tmp_path / "shared"
    mine = {"plots/figure_1.png": b"\x89PNG mine", "plots/my_diagram.svg": b"<svg/>", "significance.md": b"mine",
            "significance.csv": b"a,b\n", "index.html": b"<html>mine</html>", "notes.txt": b"mine"}  # fmt: skip
    for name, data in mine.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    outside = tmp_path / "beside.png"
    outside.write_bytes(b"not under --out")
    code, err = _run(capsys, "leaderboard", str(DATA), "--out", str(out), "--no-html", "--no-paper")
    assert code == 0, err
    ours = json.loads((out / "manifest.json").read_text())["files"]
    assert any(n.startswith("plots/") for n in ours) and not set(ours) & set(mine)
    code, err = _run(capsys, "leaderboard", str(DATA), "--out", str(out), "--no-html", "--no-plots")
    assert code == 0, err
    assert {n: (out / n).read_bytes() for n in mine} == mine and outside.read_bytes() == b"not under --out"
    assert not [n for n in ours if n.startswith("plots/") and (out / n).exists()]  # its own plots went
    recorder = Recorder()
    recorder.install(monkeypatch)
    code, _ = _run(capsys, "leaderboard", str(DATA), "--out", str(out), "--no-html", "--no-plots",
                   "--push", "org/pqb-results")  # fmt: skip
    assert code == 0
    allowed = recorder.calls[1][1]["allow_patterns"]  # the push uploads the leaderboard's files only
    assert "manifest.json" in allowed and "leaderboard.parquet" in allowed and not set(allowed) & set(mine)


def test_leaderboard_refuses_a_plots_folder_that_is_a_symlink(tmp_path, capsys) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "plots").symlink_to(elsewhere, target_is_directory=True)
    code, err = _run(capsys, "leaderboard", str(DATA), "--out", str(tmp_path / "out"))
    assert code == 2
    _one_error_line(err, "plots is a symbolic link")
    assert not list(elsewhere.iterdir()) and not (tmp_path / "out" / "leaderboard.csv").exists()


# -- the Space reads only the parquet the leaderboard wrote ----------------------------------------------------


def test_the_space_refuses_a_parquet_its_manifest_does_not_describe(
    app, tmp_path, capsys, monkeypatch
) -> None:
    import pandas as pd

    from pqb.harness.reporting.leaderboard import write_leaderboard

    write_leaderboard([DATA], tmp_path / "lb", plots=False, html=False, paper=False)
    path = tmp_path / "lb" / "leaderboard.parquet"
    assert len(app.load_leaderboard(path)) and "note:" not in capsys.readouterr().err
    frame = pd.read_parquet(path)
    frame.loc[frame["metric"] == "deg@1", "value"] = -0.5  # "most robust", outside every CI
    frame.to_parquet(path, index=False)
    with pytest.raises(app.EditedLeaderboardError, match=r"not the .* its manifest .* records"):
        app.load_leaderboard(path)
    monkeypatch.setenv("PQB_ALLOW_EDITED", "1")
    assert len(app.load_leaderboard(path)) and "read anyway" in capsys.readouterr().err
    shutil.copy(path, tmp_path / "alone.parquet")  # no manifest beside it: a note, as for older folders
    app.load_leaderboard(tmp_path / "alone.parquet")
    assert "read unverified" in capsys.readouterr().err


# -- row 7: every size that becomes memory has a bound --------------------------------------------------------


def _task_yaml(folder: Path, name: str, extra: str) -> Path:
    template = Path(__file__).parent.parent / "tasks" / "pqb" / "_default_template_yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name[:40]}.yaml"
    path.write_text(
        f"include: {template}\ntask: {name}\ndataset_name: video_games\npair_type: error\n{extra}\n"
    )
    return path


def _run_task(tmp_path: Path, capsys, name: str, extra: str, *args: str) -> tuple[int, str]:
    from pqb_fixtures import make_tiny_dataset

    if not (tmp_path / "ds").exists():
        make_tiny_dataset(tmp_path / "ds")
    _task_yaml(tmp_path / "inc", name, extra)
    return _run(capsys, "run", "--model", "bm25", "--tasks", name, "--include_path", str(tmp_path / "inc"),
                "--dataset_path", str(tmp_path / "ds"), "--bootstrap_iters", "0", "--verbosity", "ERROR",
                "--no-progress", *args)  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("k_values: [1, 10, 1000000000]", "k_values"),
        ("run_depth: 1000000000", "run_depth"),
        ("rr_cutoff: 1000000000", "rr_cutoff"),
        (f"k_values: {list(range(1, 101))}", "k_values"),
    ],
    ids=["k", "run_depth", "rr_cutoff", "100_cutoffs"],
)
def test_a_cut_off_no_memory_holds_is_one_line_before_loading(
    tmp_path, capsys, monkeypatch, extra, key
) -> None:
    """A task YAML with ``k_values: [1, 10, 1000000000]`` or a huge ``run_depth``/``rr_cutoff`` passed the
    range checks, then a ``MemoryError`` traceback after loading."""
    import pqb.harness.evaluation.evaluator as ev

    monkeypatch.setattr(ev, "load_tasks", lambda *a, **k: pytest.fail("the data was loaded"))
    code, err = _run_task(tmp_path, capsys, "big", extra, "--output_path", str(tmp_path / "out"))
    assert code == 2
    _one_error_line(err, f"{key} must", "at most 100,000")


def test_a_depth_past_the_corpus_ranks_the_corpus_not_the_depth(tmp_path, capsys) -> None:
    """At the cap, K, run_depth and rr_cutoff past the tiny corpus (36 documents) keep its 36 a query."""
    from pqb_fixtures import make_tiny_dataset

    from pqb.harness.evaluation.evaluator import Ranker, load_tasks
    from pqb.harness.evaluation.task_registry import TaskRegistry
    from pqb.harness.retrievers.lexical.bm25 import BM25Retriever

    extra = "k_values: [1, 10, 100000]\nrun_depth: 100000\nrr_cutoff: 100000"
    code, err = _run_task(
        tmp_path, capsys, "deep", extra, "--output_path", str(tmp_path / "out"), "--log_samples"
    )
    assert code == 0, err
    [trec] = (tmp_path / "out" / "details" / "bm25").glob("run_deep_*.trec")
    per_query: dict[str, int] = {}
    for line in trec.read_text().splitlines():
        per_query[line.split()[0]] = per_query.get(line.split()[0], 0) + 1
    cfg = TaskRegistry([tmp_path / "inc"]).tasks["deep"]
    data = load_tasks([cfg], str(make_tiny_dataset(tmp_path / "ds")))[0]["deep"]
    assert max(per_query.values()) == len(data.corpus.ids) == 36
    ranker = Ranker(BM25Retriever(), depth=100_000, cutoff=100_000, use_cache=False)
    entries = ranker.rank(data.corpus, [(data.pairs.queries[0], data.pairs.targets[0])])
    assert {len(e.top_idx) for e in entries.values()} == {36}  # once: 100,000 slots a query


# -- row 8: a name too long for a file ---------------------------------------------------------------------------


def test_a_task_name_too_long_for_a_file_name_is_one_line_before_any_work(
    tmp_path, capsys, monkeypatch
) -> None:
    """A 301-character task name with ``--log_samples`` was evaluated, then an ``ENAMETOOLONG`` traceback;
    nothing was written."""
    import pqb.harness.evaluation.evaluator as ev

    monkeypatch.setattr(ev, "load_tasks", lambda *a, **k: pytest.fail("the data was loaded"))
    code, err = _run_task(
        tmp_path, capsys, "t" * 301, "", "--output_path", str(tmp_path / "out"), "--log_samples"
    )
    assert code == 2
    _one_error_line(err, "(301 characters) is too long for a file name: at most 128")


def test_a_run_tag_too_long_for_a_folder_name_is_one_line(tmp_path, capsys) -> None:
    from pqb_fixtures import make_tiny_dataset

    run = tmp_path / "long.trec"
    run.write_text(f"q1 Q0 d1 1 1.0 {'x' * 200}\n")
    code, err = _run(capsys, "score", "--run", str(run), "--tasks", ERR, "--dataset_path",
                     str(make_tiny_dataset(tmp_path / "ds")), "--output_path", str(tmp_path / "out"))  # fmt: skip
    assert code == 2
    _one_error_line(err, "is too long", "--name")


# -- row 10: --output_path x.json, as in lm-eval --------------------------------------------------------------------


def test_output_path_naming_a_file_works_on_every_run(tmp_path, capsys) -> None:
    """`--output_path out.json` (the README's lm-eval habit), run twice: the second run was refused, "is not a
    folder"."""
    from pqb.harness.evaluation.results import load_results

    out = tmp_path / "out.json"
    for _ in range(2):
        code, err = _run_task(tmp_path, capsys, "named", "", "--output_path", str(out))
        assert code == 0, err
        assert "named" in load_results(out)["results"]
    code, err = _run_task(tmp_path, capsys, "named", "", "--output_path", str(out), "--overwrite", "never")
    assert code == 2  # never: the named file is an earlier result too
    _one_error_line(err, "already exists")
    (tmp_path / "dir.json").mkdir()
    code, err = _run_task(tmp_path, capsys, "named", "", "--output_path", str(tmp_path / "dir.json"))
    assert code == 2
    _one_error_line(err, "is a folder")
