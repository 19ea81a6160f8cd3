"""Source wing: Amazon Reviews 2023 files → products, retrieval documents, reviews, users and links.

Reads: ``<Category>.jsonl[.gz]`` and ``meta_<Category>.jsonl[.gz]`` (local folder or the Hub,
``sources.yaml``); the work dir's ``reviews.parquet`` and ``products.parquet`` for the users stage.
Writes: ``products.parquet``, ``corpus.parquet``, ``reviews.parquet`` (ingest); ``sentences.parquet``,
``users.parquet``, ``links.parquet`` (users).
May import: pqb.dataset, pqb.builders.errors, pqb.builders.text, pqb.builders.nlp, pqb.builders.parses,
pqb.builders.executor, pqb.builders.workdir, pqb.builders.seeds, pqb.builders.kinds.
"""
