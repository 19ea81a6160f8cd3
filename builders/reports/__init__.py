"""Reports wing: studies off the build path (syntactic attribution, error sampling, release comparison).

Reads: finished work dirs (embeddings, error profiles, pairs) and the authors' release files.
Writes: ``validation/`` files of a work dir; prints tables.
May import: pqb.dataset, pqb.builders.errors, pqb.builders.linalg, pqb.builders.nlp, pqb.builders.workdir,
pqb.builders.seeds, pqb.builders.source, pqb.builders.syntax, pqb.builders.writing_errors.
"""
