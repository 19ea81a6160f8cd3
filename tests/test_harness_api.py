"""The public Python API (``pqb.harness.evaluate``, ``Retriever``, ``register_model``), used as a notebook would.

Issue 44: ``dir(pqb.harness)`` was empty and the only ways in were ``dense pretrained=<path>`` or a TREC
run. These tests build a retriever class in a few lines, evaluate it through the API, and check that the
dict equals the file ``pqb-harness run`` writes for the same class registered by name.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pqb_fixtures import make_tiny_dataset

import pqb.harness as ph
from pqb.harness.cli import main

TASKS = ["pqb_syntactic_video_games", "pqb_error_video_games"]
TIMING = ("date", "total_evaluation_time_seconds", "content_digest")  # the digest covers the timings too
REGISTERED = "word-overlap-test"  # the README example registers "word-overlap"


# -- the notebook: a retriever in 20 lines ---------------------------------------------------------------
class WordOverlap(ph.Retriever):
    """Scores a document by the number of query words it contains (title + text)."""

    name = "word-overlap"

    def index(self, corpus, *, cache_dir=None):
        self.corpus = corpus
        self.docs = [set(d.lower().split()) for d in corpus.documents()]

    def score(self, queries):
        words = [set(q.lower().split()) for q in queries]
        return np.array([[len(w & d) for d in self.docs] for w in words], dtype=np.float32)


class SearchOnly(ph.Retriever):
    """The same system through ``search`` only (a reranker's contract): a target beyond k is a miss."""

    name = "word-overlap"
    full_scoring = False

    def index(self, corpus):  # no cache_dir: the evaluator passes it only where it is accepted
        self.inner = WordOverlap()
        self.inner.index(corpus)
        self.corpus = corpus

    def search(self, queries, k):
        return self.inner.search(queries, k)


# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_dataset(tmp_path_factory.mktemp("tiny"))


def test_the_package_lists_its_api() -> None:
    names = dir(ph)
    for name in ("evaluate", "Retriever", "register_model", "SearchResult", "Corpus", "__version__"):
        assert name in names and getattr(ph, name) is not None, name


def test_a_retriever_object_gives_what_run_writes_for_the_registered_class(
    tiny: Path, tmp_path: Path
) -> None:
    got = ph.evaluate(
        model=WordOverlap(), name=REGISTERED, tasks=TASKS, dataset_path=str(tiny), bootstrap_iters=50
    )
    ph.register_model(REGISTERED)(WordOverlap)
    argv = ["run", "--model", REGISTERED, "--tasks", ",".join(TASKS), "--dataset_path", str(tiny),
            "--output_path", str(tmp_path), "--bootstrap_iters", "50", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    (path,) = (tmp_path / REGISTERED).glob("results_*.json")
    written = json.loads(path.read_text())
    for key in TIMING:
        got.pop(key), written.pop(key)
    cache = written["config"].pop("stats")  # the second run read the run cache the first one filled
    assert got["config"].pop("stats")["run_cache_hits"] == 0 and cache["run_cache_hits"] > 0
    assert got == json.loads(json.dumps(got))  # the API returns strict JSON values
    assert got["results"]["pqb_error_video_games"]["deg@1"] is not None
    assert got == written
    # and by name through the API, written to a file as run does; the folder a pathlib.Path, as Python
    # callers name one (it failed: "Path.replace() takes 2 positional arguments")
    again = ph.evaluate(model=REGISTERED, tasks=TASKS, dataset_path=tiny, bootstrap_iters=50,
                        output_path=tmp_path / "api.json")  # fmt: skip
    assert (
        json.loads((tmp_path / "api.json").read_text())["results"] == again["results"] == written["results"]
    )


def test_a_search_only_retriever_runs(tiny: Path) -> None:
    full = ph.evaluate(model=WordOverlap(), tasks=TASKS, dataset_path=str(tiny), bootstrap_iters=0)
    listed = ph.evaluate(model=SearchOnly(), tasks=TASKS, dataset_path=str(tiny), bootstrap_iters=0)
    for task in TASKS:  # the tiny corpus is shallower than the 200 documents asked for: same ranks
        assert listed["ranks"][task] == full["ranks"][task]


EDITABLE = """
import numpy as np
import pqb.harness as ph


class Mine(ph.Retriever):
    name = "mine"

    def index(self, corpus):
        self.corpus = corpus

    def score(self, queries):
        return np.tile(np.arange(len(self.corpus), dtype=np.float32) * SIGN, (len(queries), 1))
"""


def _load(path: Path, sign: int) -> type:
    import importlib.util
    import sys

    path.write_text(EDITABLE + f"\nSIGN = {sign}\n")
    spec = importlib.util.spec_from_file_location("mine_module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["mine_module"] = module
    spec.loader.exec_module(module)
    return module.Mine


def test_editing_your_class_is_never_served_from_the_run_cache(
    tiny: Path, tmp_path: Path, monkeypatch
) -> None:
    """The run cache and the resume key hold ``cache_settings()``; a class of your own adds its code's
    digest, so the edited class (same name, same describe()) ranks again instead of reading the old ranks."""
    import sys

    monkeypatch.setitem(sys.modules, "mine_module", None)
    first = ph.evaluate(model=_load(tmp_path / "mine.py", 1)(), tasks=TASKS[:1], dataset_path=str(tiny),
                        bootstrap_iters=0)  # fmt: skip
    edited = _load(tmp_path / "mine.py", -1)()
    second = ph.evaluate(model=edited, tasks=TASKS[:1], dataset_path=str(tiny), bootstrap_iters=0)
    assert second["ranks"] != first["ranks"]
    assert second["config"]["model_info"] == first["config"]["model_info"] == {"name": "mine"}


def test_bad_api_arguments_are_one_usage_error(tiny: Path) -> None:
    from pqb.harness.errors import UsageError

    for kwargs, fragment in [
        ({"model": object()}, "pqb.harness.Retriever"),
        ({"model": WordOverlap(), "model_args": "k1=1"}, "model_args apply to a model name"),
        ({"model": "bm25", "limit": 0}, "limit=0"),
        ({"model": "bm25", "limit": 1.5}, "limit=1.5"),
        ({"model": "bm25", "bootstrap_iters": -1}, "n_boot=-1"),
        ({"model": "bm25", "bootstrap_unit": "row"}, "unit='row'"),
        ({"model": "bm25", "log_samples": True}, "needs an output_path"),
    ]:
        with pytest.raises(UsageError, match=None) as exc:
            ph.evaluate(tasks=TASKS, dataset_path=str(tiny), **kwargs)
        assert fragment in str(exc.value), (kwargs, str(exc.value))


def test_the_readme_example_runs(monkeypatch, capsys) -> None:
    """README, "Python API": the block runs as printed, on the embedded dataset of the checkout."""
    import re

    from pqb.dataset import settings

    readme = (settings.REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    monkeypatch.chdir(settings.REPO_ROOT)
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)
    assert capsys.readouterr().out.startswith("Deg@1 ")
    assert namespace["results"]["n-samples"]["pqb_syntactic_video_games"]["effective"] == 10  # 10% of the embedded build's 96 syntactic pairs
    assert namespace["bm25"]["config"]["model_args"] == "k1=0.9"
