"""Task YAML registry: shipped tasks, include templates, strict keys, names and groups."""

from __future__ import annotations

import pytest

from pqb.harness.cli import main
from pqb.harness.errors import TaskConfigError, UnknownTaskError
from pqb.harness.evaluation.task_registry import (
    TASK_KEYS,
    TaskRegistry,
    load_yaml_with_includes,
    task_from_dict,
)

DOMAINS = ("baby_products", "musical_instruments", "video_games")


def test_shipped_tasks_and_groups():
    reg = TaskRegistry()
    tasks, groups = reg.resolve(["pqb"])
    assert tasks == sorted(f"pqb_{p}_{d}" for p in ("syntactic", "error") for d in DOMAINS)
    assert groups == ["pqb", "syntactic", "error"]
    assert reg.expand("release") == sorted(
        f"pqb_release_{p}_{d}" for p in ("syntactic", "error") for d in DOMAINS
    )
    c = reg.tasks["pqb_release_error_video_games"]
    assert (c.dataset_name, c.corpus, c.rr_cutoff) == (
        "video_games-release",
        "video_games-release-corpus",
        200,
    )
    assert reg.tasks["pqb_syntactic_video_games"].corpus == "video_games-corpus"
    tasks3, groups3 = reg.resolve(["error3"])
    assert tasks3 == sorted(f"pqb_error3_{d}" for d in DOMAINS) and groups3 == ["error3"]
    assert all(reg.tasks[t].error_dose == 3 and reg.tasks[t].pair_type == "error" for t in tasks3)


def test_error_dose_is_validated_and_redoses_rows():
    from pqb.harness.evaluation.pairs import dosed_rows, error_pairs

    base = {"task": "t", "dataset_name": "video_games", "pair_type": "error"}
    for bad in (0, 4, "3", True):  # YAML `true` is a bool, which Python counts as the int 1: it ran dose 1
        with pytest.raises(TaskConfigError, match="error_dose"):
            task_from_dict({**base, "error_dose": bad})
    with pytest.raises(TaskConfigError, match="error_dose"):
        task_from_dict({**base, "pair_type": "syntactic", "error_dose": 2})
    assert task_from_dict({**base, "error_dose": 2}).error_dose == 2
    q = "red wireless gaming mouse"
    chain = [
        {"start": 4, "end": 12, "original": "wireless", "edited": "wireles", "mechanism": "deletion"},
        {"start": 20, "end": 25, "original": "mouse", "edited": "muose", "mechanism": "transposition"},
        {"start": 13, "end": 19, "original": "gaming", "edited": "gamign", "mechanism": "transposition"},
    ]
    row = {"id": "r", "asin": "A", "user_id": "u", "query": q, "error_query": "red wireles gaming mouse",
           "error_edits": chain[:1], "error_chain": chain}  # fmt: skip
    for k, want in (
        (1, "red wireles gaming mouse"),
        (2, "red wireles gaming muose"),
        (3, "red wireles gamign muose"),
    ):
        (r,) = dosed_rows([row], k)
        assert r["error_query"] == want and r["error_edits"] == chain[:k]
    short = {**row, "error_chain": chain[:2]}
    assert dosed_rows([short], 3)[0]["error_query"] is None  # a chain too short is not evaluated
    pairs = error_pairs(dosed_rows([row, short], 3), dose=3)
    assert len(pairs.pair_a) == 1 and pairs.n_short_chain == 1  # skipped and counted
    assert pairs.query_ids == ("r", "r_error3")  # the dosed text has its own id, never the published r_error
    assert error_pairs([row]).query_ids == ("r", "r_error") and error_pairs([row]).n_short_chain is None


def test_error_side_ids():
    from pqb.harness.evaluation.pairs import error_side_suffix, is_error_side_id

    assert error_side_suffix() == "_error" and error_side_suffix(3) == "_error3"
    assert is_error_side_id("a:b_error") and is_error_side_id("a:b_error3")
    assert not is_error_side_id("a:b") and not is_error_side_id("a_error_x")


def test_include_template_merges_and_file_overrides(tmp_path):
    (tmp_path / "_tmpl_yaml").write_text("k_values: [1, 3]\nrr_cutoff: 100\npair_type: syntactic\n")
    (tmp_path / "t.yaml").write_text("include: _tmpl_yaml\ntask: t1\ndataset_name: d\nrr_cutoff: 50\n")
    data = load_yaml_with_includes(tmp_path / "t.yaml")
    assert data == {
        "k_values": [1, 3],
        "rr_cutoff": 50,
        "pair_type": "syntactic",
        "task": "t1",
        "dataset_name": "d",
    }
    cfg = task_from_dict(data)
    assert cfg.k_values == (1, 3) and cfg.main_score == "flip@1"
    assert "hit@3" in cfg.metric_names()


def test_unknown_key_lists_valid_keys():
    with pytest.raises(TaskConfigError) as exc:
        task_from_dict({"task": "x", "dataset_name": "d", "pair_type": "error", "rr_cuttoff": 10})
    assert "rr_cuttoff" in str(exc.value) and "rr_cutoff" in str(exc.value)
    assert all(k in str(exc.value) for k in TASK_KEYS)


def test_bad_pair_type_and_main_score():
    with pytest.raises(TaskConfigError, match="pair_type"):
        task_from_dict({"task": "x", "dataset_name": "d", "pair_type": "typo"})
    with pytest.raises(TaskConfigError, match="deg@10"):
        task_from_dict({"task": "x", "dataset_name": "d", "pair_type": "syntactic", "main_score": "deg@10"})


def test_malformed_yaml_and_missing_include(tmp_path):
    (tmp_path / "bad.yaml").write_text("task: [unclosed\n")
    with pytest.raises(TaskConfigError, match="not valid YAML"):
        TaskRegistry([tmp_path])
    (tmp_path / "bad.yaml").write_text("include: nowhere_yaml\ntask: t\n")
    with pytest.raises(TaskConfigError, match="include 'nowhere_yaml' not found"):
        TaskRegistry([tmp_path])


def test_include_path_adds_task_and_duplicates_fail(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "task: my_task\ndataset_name: video_games\npair_type: error\ntag: mine\n"
    )
    reg = TaskRegistry([tmp_path])
    assert reg.expand("mine") == ["my_task"]
    (tmp_path / "dup.yaml").write_text("task: pqb_error_video_games\ndataset_name: x\npair_type: error\n")
    with pytest.raises(TaskConfigError, match="already defined"):
        TaskRegistry([tmp_path])


def test_unknown_task_did_you_mean():
    with pytest.raises(UnknownTaskError) as exc:
        TaskRegistry().expand("syntatic")
    assert "Did you mean 'syntactic'" in str(exc.value) and "Available:" in str(exc.value)


def test_cli_unknown_names_exit_2_one_line(capsys, tmp_path):
    assert (
        main(["run", "--model", "bm25", "--tasks", "pqb_eror_video_games", "--output_path", str(tmp_path)])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Did you mean 'pqb_error_video_games'" in err
    assert main(["--model", "bm52", "--tasks", "pqb", "--output_path", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Did you mean 'bm25'" in err


def test_cli_malformed_yaml_exit_2(capsys, tmp_path):
    (tmp_path / "bad.yaml").write_text("task: x\ndataset_name: d\npair_type: error\nbogus: 1\n")
    assert main(["ls", "tasks", "--include_path", str(tmp_path)]) == 2
    assert "unknown task key(s) bogus" in capsys.readouterr().err
    assert main(["validate", "--tasks", "pqb", "--include_path", str(tmp_path)]) == 2


def test_ls_tasks_and_groups(capsys):
    assert main(["ls", "tasks"]) == 0
    out = capsys.readouterr().out
    assert "pqb_error_video_games" in out and "pqb_release_syntactic_baby_products" in out
    assert main(["ls", "groups"]) == 0
    assert "| pqb | syntactic,error | 6 |" in capsys.readouterr().out


@pytest.mark.parametrize("variant", [{"similarity_gate": 0.9}, {"macro_average": True}])
def test_authors_variants_are_rejected_on_error_tasks(variant: dict) -> None:
    """The error breakdown and Deg@K must cover the same pairs; the variants are syntactic-only."""
    with pytest.raises(TaskConfigError, match="syntactic tasks only"):
        task_from_dict({"task": "x", "dataset_name": "d", "pair_type": "error", **variant})
    assert task_from_dict({"task": "x", "dataset_name": "d", "pair_type": "syntactic", **variant})
