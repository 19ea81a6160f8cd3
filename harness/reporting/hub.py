"""Publish results and the leaderboard to a Hugging Face Hub dataset repository.

The layout follows lm-evaluation-harness's results: one folder per model (the sanitized name the
results writer uses) holding only ``results_<timestamp>.json`` files, whose ``config`` carries
lm-eval's ``model_name``, ``model_sha``, ``model_dtype`` and ``model_args`` string; the per-sample
"details" files ``samples_<task>_<timestamp>.jsonl`` go to ``details/<model>/``, out of the model
folder, because the Hugging Face Demo Leaderboard's reader skips any folder holding a non-JSON file
(``tests/test_lm_eval_compat.py`` runs a reimplementation of that reader and lm-eval's ``make_table``
on our files). The leaderboard (tables, parquet, plots, page) goes under ``leaderboard/``, which
is what the Gradio Space (``leaderboard/app.py``) reads.

The token is handed to ``HfApi`` and nowhere else: it is never logged, printed, written to a file or
put into an exception message. ``token=None`` lets huggingface_hub use ``HF_TOKEN`` or the cached
login, as every huggingface tool does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pqb.harness.errors import HubPublishError, PublishError

logger = logging.getLogger(__name__)

LEADERBOARD_DIR_IN_REPO = "leaderboard"
"""Where ``push_leaderboard`` puts the leaderboard folder inside the results repository."""


def _api(token: str | None) -> Any:
    from huggingface_hub import HfApi

    return HfApi(token=token)


def _validate_repo_id(repo_id: str) -> None:
    from huggingface_hub.utils import validate_repo_id

    validate_repo_id(repo_id)
    if "/" not in repo_id:
        raise HubPublishError(
            f"Hub repo id must be 'namespace/name' (e.g. 'my-org/pqb-results'): {repo_id!r}. "
            "Results are published to a dataset repository of that namespace."
        )


def path_in_repo(output_dir: Path, file: Path) -> str:
    """A file's path in the repository: its path under ``output_dir`` (the run's ``--output_path``):
    ``<model_sanitized>/results_<ts>.json``, ``details/<model_sanitized>/samples_<task>_<ts>.jsonl``.

    ``output_dir`` may also be a model folder itself (a file directly in it keeps the folder's name).
    """
    output_dir, file = Path(output_dir).resolve(), Path(file).resolve()
    if not file.is_file():
        raise HubPublishError(f"File to publish does not exist: {str(file)!r}.")
    try:
        rel = file.relative_to(output_dir)
    except ValueError:
        raise HubPublishError(
            f"{str(file)!r} is not inside the output folder {str(output_dir)!r}; pass the folder the run wrote to."
        ) from None
    if len(rel.parts) == 1:
        return f"{output_dir.name}/{rel.as_posix()}"
    return rel.as_posix()


def _url(info: Any, fallback: str) -> str:
    url = getattr(info, "commit_url", None)
    return url if isinstance(url, str) and url else fallback


def push_results(
    output_dir: Path,
    result_file: Path,
    repo_id: str,
    *,
    samples: Sequence[Path] = (),
    token: str | None = None,
    private: bool | None = None,
) -> str:
    """Upload one run's results file (and its samples) to the dataset repo ``repo_id``.

    Creates the repository if needed (``repo_type="dataset"``, ``exist_ok=True``), then uploads
    ``<model_sanitized>/results_<ts>.json`` and each ``details/<model_sanitized>/samples_<task>_<ts>.jsonl``
    (see the module docstring for why the samples are not beside the results). Returns the URL of the results-file commit, or of the repository when the
    Hub client does not report one. Called by ``pqb-harness run --hub_results_repo``.
    """
    _validate_repo_id(repo_id)
    results_path = path_in_repo(output_dir, result_file)
    sample_paths = [(Path(s), path_in_repo(output_dir, s)) for s in samples]
    try:
        return _upload_results(_api(token), repo_id, result_file, results_path, sample_paths, private)
    except (OSError, ValueError) as exc:  # HTTP, connection, offline mode, auth: all OSError/ValueError
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise PublishError(
            f"pushing {result_file} to Hub dataset {repo_id!r} failed ({type(exc).__name__}: {first}); "
            "the results are kept locally. Check the network and your token (huggingface-cli login), then "
            "re-run with --overwrite only-missing --hub_results_repo to push without recomputing"
        ) from exc


def _upload_results(api: Any, repo_id: str, result_file: Path, results_path: str,
                    sample_paths: Sequence[tuple[Path, str]], private: bool | None) -> str:  # fmt: skip
    """The uploads themselves, apart so :func:`push_results` translates their failures in one place."""
    repo_url = api.create_repo(repo_id=repo_id, repo_type="dataset", private=private, exist_ok=True)
    model_folder = results_path.split("/", 1)[0]
    logger.info("uploading %s to dataset %s", results_path, repo_id)
    info = api.upload_file(
        path_or_fileobj=str(Path(result_file)),
        path_in_repo=results_path,
        repo_id=repo_id,
        repo_type="dataset",
        commit_message=f"Add PQB results for {model_folder}",
    )
    for local, remote in sample_paths:
        logger.info("uploading %s to dataset %s", remote, repo_id)
        api.upload_file(
            path_or_fileobj=str(local),
            path_in_repo=remote,
            repo_id=repo_id,
            repo_type="dataset",
            commit_message=f"Add PQB per-sample details for {model_folder}",
        )
    return _url(info, str(repo_url))


def push_leaderboard(
    out_dir: Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool | None = None,
) -> str:
    """Upload the leaderboard folder written by ``pqb-harness leaderboard`` to ``leaderboard/``.

    The remote folder mirrors what the leaderboard wrote (the files its ``manifest.json`` lists, and the
    manifest): files no longer produced are deleted in the same commit, so the Space never reads a stale
    table beside a fresh one, and nothing else a user keeps in ``out_dir`` is uploaded. Returns the
    commit URL (or repo URL).
    """
    from pqb.harness.reporting.leaderboard import MANIFEST, recorded_outputs

    _validate_repo_id(repo_id)
    out_dir = Path(out_dir)
    if not (out_dir / "leaderboard.parquet").is_file():
        raise HubPublishError(
            f"{str(out_dir)!r} holds no leaderboard.parquet; run `pqb-harness leaderboard <results> --out {out_dir}` first."
        )
    api = _api(token)
    repo_url = api.create_repo(repo_id=repo_id, repo_type="dataset", private=private, exist_ok=True)
    logger.info("uploading leaderboard folder to dataset %s/%s", repo_id, LEADERBOARD_DIR_IN_REPO)
    info = api.upload_folder(
        folder_path=str(out_dir),
        path_in_repo=LEADERBOARD_DIR_IN_REPO,
        repo_id=repo_id,
        repo_type="dataset",
        commit_message="Update PQB leaderboard",
        allow_patterns=[*recorded_outputs(out_dir), MANIFEST],
        delete_patterns=["*"],
    )
    return _url(info, str(repo_url))
