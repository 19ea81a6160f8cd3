"""The annotators' HTML form in real headless Chromium: answer with real clicks, save, import the CSV.

The saved file is caught where the page hands its Blob to ``URL.createObjectURL`` (a download cannot be
read back through the DevTools pipe); the CSV the page built is then imported with the sheets' reader.
Skips without Chromium, as ``tests/test_leaderboard_browser.py`` does (whose DevTools client it uses).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_fixture import SEED, fixture_pool
from test_leaderboard_browser import Page, _chromium, _open_page

from pqb.builders.study.rubric import dimensions_of
from pqb.builders.study.sheet import SHEET_COLUMNS, export_sheet, load_key, read_filled

pytestmark = pytest.mark.browser


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    tools, tab = _open_page(_chromium(), tmp_path)
    try:
        yield tab
    finally:
        tools.close()


def test_form_saves_what_was_clicked_as_an_importable_sheet(page: Page, tmp_path: Path) -> None:
    items = fixture_pool()
    export_sheet(items, tmp_path / "sheet", tmp_path / "key.json", {"seed": SEED})
    page.goto((tmp_path / "sheet" / "form.html").resolve().as_uri())
    assert page.js("document.querySelectorAll('section').length") == len(items)
    answers: dict[str, dict[str, str]] = {}
    for n, it in enumerate(items):
        for d in dimensions_of(it.task):
            label = d.labels[n % len(d.labels)]
            page.click(f'input[name="{it.item_id}|{d.name}"][value="{label}"]')
            answers.setdefault(it.item_id, {})[d.name] = label
    page.js(
        "(() => { const a = document.getElementById('annotator'); a.value = 'reader one';"
        " a.dispatchEvent(new Event('change', {bubbles: true})); })()"
    )
    assert (
        page.js("document.getElementById('progress').textContent")
        == f"{len(items)} of {len(items)} items answered"
    )
    page.js(
        "window.__csv = null; URL.createObjectURL = b => { b.text().then(t => { window.__csv = t; }); return '#'; };"
        " HTMLAnchorElement.prototype.click = function () { window.__file = this.download; };"
    )
    page.click("#save")
    text = page.send(
        "Runtime.evaluate",
        {"expression": "new Promise(r => { const t = () => window.__csv ? r(window.__csv) : setTimeout(t, 20); t(); })",
         "awaitPromise": True, "returnByValue": True, "timeout": 10000},
    )["result"].get("value")  # fmt: skip
    assert text and page.js("window.__file") == "filled_reader_one.csv", page.js("String(window.__file)")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == SHEET_COLUMNS and len(rows) == len(items)
    saved = tmp_path / "filled.csv"
    saved.write_text(text, encoding="utf-8")
    got = read_filled([saved], load_key(tmp_path / "key.json"), strict=True)
    assert got.annotators == ["reader one"]
    back = {i: {d: got.values[d][i]["reader one"] for d in got.values if i in got.values[d]} for i in answers}
    assert back == answers
    # the texts came back as exported (multi-line samples quoted correctly)
    exported = {
        r["item_id"]: r for r in csv.DictReader((tmp_path / "sheet" / "sheet.csv").open(encoding="utf-8"))
    }
    assert all(r["sample_a"] == exported[r["item_id"]]["sample_a"] for r in rows)
    assert json.loads(page.js("JSON.stringify(Object.keys(localStorage))"))  # answers kept while working
