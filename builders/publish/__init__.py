"""Publish wing: work dirs → ``pqb_dataset/`` (parquet per config, the card, checks) → optionally the Hub.

Reads: every finished work dir (``pairs.parquet``, ``corpus.parquet``, profiles, stats) and the
authors' release for ``<domain>-release`` configs.
Writes: ``pqb_dataset/data/<config>/*.parquet`` and ``pqb_dataset/README.md``.
May import: pqb.dataset, pqb.builders.errors, pqb.builders.workdir, pqb.builders.seeds, pqb.builders.source,
pqb.builders.syntax, pqb.builders.writing_errors, pqb.builders.queries, pqb.builders.reports.
"""
