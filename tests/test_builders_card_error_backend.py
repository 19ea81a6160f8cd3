"""The card's slip-detector paragraph must name the back-end the errors stage ran.

``detector_quality.json`` measures the symspell back-end only. Before the fix the card always said
"Slip detector behind the profiles (symspell back-end)" and quoted its precision and recall, also for
``pqb-build all --error-backend quire`` (or ``errors --backend quire``, then ``pair`` and ``publish``),
whose profiles no symspell flag went into. SYNTHETIC work dirs: only the errors stage's manifest record.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pqb.builders.publish.card import _error_section
from pqb.builders.reports.detector_eval import quality
from pqb.builders.workdir import WorkDir


def _workdir(root: Path, domain: str, backend: str) -> WorkDir:
    wd = WorkDir(root, domain)
    wd.stage("errors", [], {"backend": backend}, []).done({"backend": backend})
    return wd


@pytest.mark.skipif(quality() is None, reason="needs the committed detector_quality.json")
def test_the_card_quotes_symspell_figures_only_for_symspell_profiles(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ds.mkdir()
    sym = _workdir(tmp_path / "work", "video_games", "symspell:0123456789abcdef")
    assert "(symspell back-end)" in _error_section(ds, [sym])

    other = _workdir(tmp_path / "work", "software", "quire:0.3.2")
    for workdirs in ([other], [sym, other]):
        text = _error_section(ds, workdirs)
        assert "(symspell back-end)" not in text and "precision 75" not in text
        assert "the quire back-end" in text
