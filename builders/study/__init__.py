"""Study wing: the paper's validation study (its §06) as software: a blinded pool of PQB queries, the
authors' released queries and real review sentences; an LLM judge over any OpenAI-compatible endpoint;
a human annotation sheet (CSV + a self-contained HTML form) and its import, with agreement statistics.

Reads: a built dataset folder, the authors' release, a local Amazon Reviews 2023 copy (users' own
sentences, real sentences), filled-in sheets, an OpenAI-compatible chat endpoint.
Writes: the blinded sheet, its key (kept apart), the judge's judgments cache and the study's report.
May import: pqb.dataset, pqb.builders.errors, pqb.builders.seeds, pqb.builders.source, pqb.builders.reports,
pqb.builders.publish.
"""
