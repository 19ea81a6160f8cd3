"""Groups never mix pair types: ``syntactic`` and ``error`` are means over one pair type, ``pqb`` reports
the two side by side (never their mean), and schema 1.1 rejects a group that averages both."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.errors import ResultsSchemaError
from pqb.harness.evaluation.results import group_entries, load_results, validate_results

METRICS = ("flip@10", "rrstd", "hit@10", "mrr")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    ds = make_tiny_dataset(tmp_path_factory.mktemp("ds"), ("video_games", "baby_products"))
    out = tmp_path_factory.mktemp("res")
    assert main(["run", "--model", "random", "--tasks", "pqb", "--dataset_path", str(ds), "--output_path", str(out),
                 "--bootstrap_iters", "50", "--no-progress"]) == 0  # fmt: skip
    return load_results(next((out / "random").glob("results_*.json")))




def test_every_group_holds_one_pair_type(results):
    for name, entry in results["groups"].items():
        members = results["group_subtasks"][name]
        types = {results["configs"][t]["pair_type"] for t in members}
        assert types == {entry["pair_type"]}
        flat = {k: v for k, v in entry.items() if k not in ("saturated_at", "too_few_pairs_at")}  # lists of K
        assert all(isinstance(v, int | float | str) or v is None for v in flat.values())  # flat
    assert "pqb" not in results["groups"]  # both pair types: never one cross-type mean


def test_pqb_reports_the_subgroups_side_by_side(results):
    pqb = {pt: results["groups"][f"pqb/{pt}"] for pt in ("syntactic", "error")}
    for pair_type in ("syntactic", "error"):
        sub, group = pqb[pair_type], results["groups"][pair_type]
        assert {k: v for k, v in sub.items() if k != "alias"} == {
            k: v for k, v in group.items() if k != "alias"
        }
        members = [t for t in results["group_subtasks"][pair_type]]
        assert sub["flip@10"] == pytest.approx(np.mean([results["results"][t]["flip@10"] for t in members]))
    assert any(pqb["syntactic"][m] != pqb["error"][m] for m in ("flip@1", "flip@5", "rrstd"))  # they differ


def test_schema_rejects_a_group_that_averages_both_pair_types(results, tmp_path):
    from pqb.harness.evaluation.results import lm_eval_shape

    good = lm_eval_shape(results)  # the file's shape again, from the flat view
    validate_results(good)
    bad = copy.deepcopy(good)
    bad["groups"]["pqb"] = dict(good["groups"]["error"], alias="pqb")
    bad["task_info"]["pqb"] = {**good["task_info"]["error"], "pair_type": "mixed"}
    with pytest.raises(ResultsSchemaError, match="task_info/pqb"):
        validate_results(bad)


def test_schema_1_0_files_keep_loading():
    old = json.loads((Path(__file__).parent / "data" / "results_example_bm25_tiny.json").read_text())
    assert old["schema_version"] == "1.0" and "flip@10" in old["groups"]["pqb"]
    validate_results(old)


def test_group_entry_splits_by_pair_type():
    res = {"s": {"alias": "s", "flip@10": 0.1, "n_pairs": 2, "n_queries": 4},
           "e": {"alias": "e", "flip@10": 0.02, "n_pairs": 3, "n_queries": 6}}  # fmt: skip
    mixed = group_entries("g", ["s", "e"], res, {}, {"s": "syntactic", "e": "error"})
    assert set(mixed) == {"g/syntactic", "g/error"} and mixed["g/syntactic"]["flip@10"] == 0.1
    assert mixed["g/error"]["flip@10"] == 0.02  # not 0.06, the old mean


def test_group_mean_of_an_undefined_member_is_undefined_whether_computed_or_reused():
    """A member's undefined metric (flip@10_ratio when every side hit) is NaN when computed now and null
    when reused from a file (``--overwrite only-missing``). Both leave the group mean undefined, as the
    members' all-NaN replicates leave its CI: dropping the null averaged one domain under a two-domain
    label (1.03 in a resumed run, null in an uninterrupted one)."""
    reps = {"a": {"flip@10_ratio": np.full(40, np.nan)}, "b": {"flip@10_ratio": np.full(40, 1.03)}}
    computed = {"a": {"alias": "a", "flip@10_ratio": float("nan"), "flip@10_ratio_ci_lower": float("nan")},
                "b": {"alias": "b", "flip@10_ratio": 1.03, "flip@10_ratio_ci_lower": 1.0}}  # fmt: skip
    reused = {**computed, "a": {**computed["a"], "flip@10_ratio": None, "flip@10_ratio_ci_lower": None}}
    types = {"a": "error", "b": "error"}
    for res in (computed, reused):
        entry = group_entries("g", ["a", "b"], res, reps, types)["g"]
        assert np.isnan(entry["flip@10_ratio"])  # not 1.03, b's value alone
        assert entry["flip@10_ratio_ci_lower"] is None or np.isnan(entry["flip@10_ratio_ci_lower"])
