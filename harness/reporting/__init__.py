"""Reporting: results files → tidy table, paper-style tables, HTML page, plots, paper comparison, Hub.

Reads: results files only (never the dataset or a model).
Writes: the leaderboard folder (md/csv/parquet, ``index.html``, figures) and Hub uploads.
May import: pqb.dataset, pqb.harness.errors, pqb.harness.evaluation.
"""
