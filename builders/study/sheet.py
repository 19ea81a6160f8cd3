"""The human annotation sheet: export (CSV + a self-contained HTML form + a separate key) and import.

The sheet folder goes to the annotators; the key stays with the study's owner. The sheet holds, per
item, its opaque id, its task and the texts to read (:data:`pqb.builders.study.pool.SHOWN_FIELDS`), then
one empty column per dimension (:data:`pqb.builders.study.rubric.RATING_COLUMNS`), ``annotator`` and
``comment``. The HTML form embeds the same items and the rubric, needs no network, keeps its answers in
the browser's local storage while the annotator works, and saves a filled CSV with exactly the
sheet's columns; a spreadsheet program filling the CSV directly is equally fine.

Import (:func:`read_filled`) checks every row against the key: an unknown or repeated item id, a value
outside the dimension's labels, or an answer to a dimension its task does not ask is counted with its
``file:line`` (or refused under ``strict``); a blank answer is "not rated", not an error.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pqb.builders.errors import DataError, UsageError
from pqb.builders.study.pool import SHOWN_FIELDS, Item
from pqb.builders.study.rubric import BY_NAME, DIMENSIONS, RATING_COLUMNS, TASKS, dimensions_of
from pqb.dataset.io import atomic_write_json, atomic_write_text, canonical_json, sha256_bytes

SHEET_COLUMNS = ("item_id", "task", *SHOWN_FIELDS, *RATING_COLUMNS, "annotator", "comment")
KEY_VERSION = 1


def sheet_csv(items: Sequence[Item]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=SHEET_COLUMNS, lineterminator="\n")
    w.writeheader()
    for it in items:
        w.writerow({**{c: "" for c in SHEET_COLUMNS}, **it.shown()})
    return buf.getvalue()


def rubric_markdown() -> str:
    lines = ["# How to rate", ""]
    for task in TASKS:
        lines.append(f"## Task `{task}`")
        for d in dimensions_of(task):
            lines += ["", f"**{d.name}**: {d.question}", "", *(f"- {a}" for a in d.anchors)]
        lines.append("")
    lines += [
        "Rate each item on its own; do not guess where a text comes from. Leave an answer blank if you",
        "cannot give one; use the comment column for anything odd.",
        "",
    ]
    return "\n".join(lines)


def export_sheet(
    items: Sequence[Item], sheet_dir: str | Path, key_path: str | Path, info: Mapping[str, Any]
) -> dict[str, Any]:
    """Write ``sheet.csv``, ``form.html`` and ``instructions.md`` into ``sheet_dir``, the key to ``key_path``."""
    sheet_dir, key_path = Path(sheet_dir), Path(key_path)
    if key_path.resolve().parent == sheet_dir.resolve():
        raise UsageError(
            f"the key ({key_path}) must not sit in the sheet folder sent to annotators ({sheet_dir})"
        )
    sheet_dir.mkdir(parents=True, exist_ok=True)
    key_path.parent.mkdir(parents=True, exist_ok=True)
    text = sheet_csv(items)
    digest = sha256_bytes(text.encode("utf-8"))[:16]
    atomic_write_text(sheet_dir / "sheet.csv", text)
    atomic_write_text(sheet_dir / "form.html", form_html(items, digest))
    atomic_write_text(sheet_dir / "instructions.md", rubric_markdown())
    key = {
        "version": KEY_VERSION,
        "sheet_sha256": digest,
        **info,
        "items": [it.key_row() | {"shown": it.shown()} for it in items],
    }
    atomic_write_json(key_path, key)
    return key


def load_key(path: str | Path) -> dict[str, Any]:
    try:
        key = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(
            f"no study key at {path}; pass --key the key.json written by `pqb-build study export`"
        ) from exc
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from exc
    if key.get("version") != KEY_VERSION or not isinstance(key.get("items"), list):
        raise DataError(f"{path}: not a study key of version {KEY_VERSION}")
    return key


def key_items(key: Mapping[str, Any]) -> list[Item]:
    return [
        Item(**{**{k: v for k, v in it.items() if k != "shown"}, **{f: it["shown"][f] for f in SHOWN_FIELDS}})
        for it in key["items"]
    ]


# -- import -----------------------------------------------------------------------------------------


@dataclass
class Ratings:
    """Every answer read: ``values[dimension][item_id][annotator] = label``, and what was refused."""

    values: dict[str, dict[str, dict[str, str]]] = field(
        default_factory=lambda: {d.name: {} for d in DIMENSIONS}
    )
    annotators: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def flag(self, kind: str, where: str, what: str, strict: bool) -> None:
        if strict:
            raise DataError(
                f"{where}: {what}; fix the sheet, or rerun without --strict to count it and go on"
            )
        self.counts[kind] += 1
        if len(self.problems) < 20:
            self.problems.append(f"{where}: {what}")


def read_filled(
    paths: Sequence[str | Path], key: Mapping[str, Any], *, strict: bool = False, into: Ratings | None = None
) -> Ratings:
    """Read filled sheets (one annotator each: the ``annotator`` column, else the file's stem)."""
    tasks = {it["item_id"]: it["task"] for it in key["items"]}
    out = into if into is not None else Ratings()
    for path in paths:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8-sig")
        except FileNotFoundError as exc:
            raise UsageError(f"no filled sheet at {p}") from exc
        except UnicodeDecodeError as exc:
            raise DataError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in ("item_id", *RATING_COLUMNS) if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{p}: not a study sheet (no column {', '.join(missing)})")
        seen: dict[tuple[str, str], int] = {}
        for row in reader:
            line = reader.line_num
            where = f"{p.name}:{line}"
            item = (row.get("item_id") or "").strip()
            annotator = (row.get("annotator") or "").strip() or p.stem
            out.counts["rows"] += 1
            if item not in tasks:
                out.flag("unknown_item", where, f"item id {item!r} is not in the key", strict)
                continue
            if (item, annotator) in seen:
                out.flag(
                    "duplicate",
                    where,
                    f"{annotator} rated {item} already (line {seen[item, annotator]})",
                    strict,
                )
                continue
            seen[item, annotator] = line
            if annotator not in out.annotators:
                out.annotators.append(annotator)
            for dim in RATING_COLUMNS:
                value = (row.get(dim) or "").strip()
                if not value:
                    continue
                d = BY_NAME[dim]
                if d.task != tasks[item]:
                    out.flag("wrong_task", where, f"{dim} answered for a {tasks[item]} item", strict)
                    continue
                label = _label(value, d.labels)
                if label is None:
                    out.flag(
                        "bad_value", where, f"{dim}={value!r} is not one of {', '.join(d.labels)}", strict
                    )
                    continue
                out.values[dim].setdefault(item, {})[annotator] = label
                out.counts["answers"] += 1
    return out


def _label(value: str, labels: Sequence[str]) -> str | None:
    """``value`` as one of ``labels``: case-insensitive; ``4.0`` reads as ``4``; ``no preference`` as ``none``."""
    v = value.strip().lower()
    if v in ("no preference", "no_preference", "neither", "n"):
        v = "none"
    try:
        f = float(v)
        if f.is_integer():
            v = str(int(f))
    except ValueError:
        pass
    return next((lab for lab in labels if lab.lower() == v), None)


# -- the HTML form ----------------------------------------------------------------------------------

_FORM_SCRIPT = r"""
const ITEMS = JSON.parse(document.getElementById('items').textContent);
const DIMS = JSON.parse(document.getElementById('dims').textContent);
const COLUMNS = JSON.parse(document.getElementById('columns').textContent);
const STORE = 'pqb-study-' + document.body.dataset.sheet;
const saved = JSON.parse(localStorage.getItem(STORE) || '{}');
function esc(s) { const d = document.createElement('div'); d.textContent = s; return d.innerHTML; }
function block(label, text) {
  return text ? '<div class="blk"><div class="lab">' + label + '</div><pre>' + esc(text) + '</pre></div>' : '';
}
const root = document.getElementById('items-root');
ITEMS.forEach(function (it, n) {
  let h = '<section id="' + it.item_id + '"><h3>' + (n + 1) + ' / ' + ITEMS.length + ' <small>' + it.item_id + '</small></h3>';
  if (it.task === 'error') {
    h += block('Text with errors', it.text) + block('Same text without errors', it.clean_text) + block('The user', it.profile);
  } else if (it.task === 'attribution') {
    h += block('Text', it.text) + block('User A writes', it.sample_a) + block('User B writes', it.sample_b);
  } else {
    h += block('Text', it.text);
  }
  DIMS.filter(function (d) { return d.task === it.task; }).forEach(function (d) {
    h += '<fieldset><legend>' + esc(d.question) + '</legend>';
    d.labels.forEach(function (lab, i) {
      const name = it.item_id + '|' + d.name;
      const chk = (saved[name] === lab) ? ' checked' : '';
      h += '<label><input type="radio" name="' + name + '" value="' + lab + '"' + chk + '> ' + esc(d.anchors[i]) + '</label>';
    });
    h += '</fieldset>';
  });
  const cname = it.item_id + '|comment';
  h += '<input class="comment" name="' + cname + '" placeholder="comment (optional)" value="' + esc(saved[cname] || '') + '">';
  root.insertAdjacentHTML('beforeend', h + '</section>');
});
document.getElementById('annotator').value = saved['annotator'] || '';
document.addEventListener('change', function (e) {
  if (e.target.name) { saved[e.target.name] = e.target.value; }
  if (e.target.id === 'annotator') { saved['annotator'] = e.target.value; }
  localStorage.setItem(STORE, JSON.stringify(saved));
  progress();
});
function progress() {
  const done = ITEMS.filter(function (it) {
    return DIMS.filter(function (d) { return d.task === it.task; }).every(function (d) { return saved[it.item_id + '|' + d.name]; });
  }).length;
  document.getElementById('progress').textContent = done + ' of ' + ITEMS.length + ' items answered';
}
progress();
function cell(v) { v = String(v == null ? '' : v); return /[",\n\r]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v; }
document.getElementById('save').addEventListener('click', function () {
  const who = document.getElementById('annotator').value.trim();
  if (!who) { alert('Enter your annotator name first.'); return; }
  const lines = [COLUMNS.join(',')];
  ITEMS.forEach(function (it) {
    const row = COLUMNS.map(function (c) {
      if (c === 'annotator') { return who; }
      if (c === 'comment') { return saved[it.item_id + '|comment'] || ''; }
      if (c in it) { return it[c]; }
      return saved[it.item_id + '|' + c] || '';
    });
    lines.push(row.map(cell).join(','));
  });
  const blob = new Blob([lines.join('\n') + '\n'], {type: 'text/csv'});
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = 'filled_' + who.replace(/[^A-Za-z0-9_-]/g, '_') + '.csv';
  a.click();
});
"""

_FORM_STYLE = """
body { font-family: sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; }
section { border-top: 1px solid #999; padding: .5rem 0 1rem; }
pre { white-space: pre-wrap; background: #f4f4f4; padding: .5rem; margin: .2rem 0; font-family: inherit; }
.lab { font-weight: bold; font-size: .9rem; }
fieldset { margin: .5rem 0; } label { display: block; } .comment { width: 100%; }
header { position: sticky; top: 0; background: white; padding: .5rem 0; border-bottom: 2px solid #333; }
"""


def _json_script(obj: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no HTML comment openers)."""
    return canonical_json(obj).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def form_html(items: Sequence[Item], digest: str) -> str:
    """One HTML file, no network assets: the items, the rubric, and a button that saves the filled CSV."""
    dims = [
        {
            "name": d.name,
            "task": d.task,
            "labels": list(d.labels),
            "question": d.question,
            "anchors": list(d.anchors),
        }
        for d in DIMENSIONS
    ]
    rubric = html.escape(rubric_markdown())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>PQB validation study</title>'
        f'<style>{_FORM_STYLE}</style></head>\n<body data-sheet="{digest}">\n'
        '<header><label>Annotator name: <input id="annotator"></label> <button id="save">Save filled CSV'
        '</button> <span id="progress"></span></header>\n'
        f"<details><summary>How to rate</summary><pre>{rubric}</pre></details>\n"
        '<div id="items-root"></div>\n'
        f'<script type="application/json" id="items">{_json_script([it.shown() for it in items])}</script>\n'
        f'<script type="application/json" id="dims">{_json_script(dims)}</script>\n'
        f'<script type="application/json" id="columns">{_json_script(list(SHEET_COLUMNS))}</script>\n'
        f"<script>{_FORM_SCRIPT}</script>\n</body></html>\n"
    )


def adjudication_items(key: Mapping[str, Any], disagreements: Iterable[str]) -> list[Item]:
    """The key's items whose ids are in ``disagreements``, in key order (the third annotator's sheet)."""
    wanted = set(disagreements)
    return [it for it in key_items(key) if it.item_id in wanted]
