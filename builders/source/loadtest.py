"""LOAD TEST data: a review file of exactly N reviews resampled from a real category's reviews.

For builder benchmarks only (``bench/bench_builders.py``), never for a dataset: the output is a
source folder in the official layout whose every review is a *real* review of the slice, reassigned
to a synthetic user. Users are drawn with replacement (seeded); each draw copies that real user's
reviews (text, product, rating) under the new user id ``LOADTEST-<n>-<real id>``, so per-user
review counts, texts and products keep the real slice's distribution, and the meta file is the real
one, copied. Every user id carries the ``LOADTEST-`` prefix and the folder holds ``LOADTEST.md``, so a
build from it says what it is. Texts repeat (the slice has ~1.3K distinct reviews), so a parse cache
hit rate on this data is not the real data's: the benchmark reports spaCy's own throughput on
distinct texts separately.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from pqb.builders.source.amazon import ReadStats, iter_reviews
from pqb.dataset.io import atomic_path, atomic_write_text

LOAD_TEST_PREFIX = "LOADTEST-"
README = """# LOAD TEST DATA, not a dataset source

{n} reviews of `{category}.jsonl` resampled by `pqb.builders.source.loadtest` (seed {seed}) from the
{real} real reviews of {users} users in `{source}`. Each synthetic user `LOADTEST-<n>-<real id>` is a
copy of one real user's reviews; `meta_{category}.jsonl` is the real metadata file, copied.
Use it to measure the builders (time, memory), never to publish a benchmark.
"""


def generate_reviews(source: Path, category: str, n: int, out: Path, *, seed: int = 0) -> dict[str, int]:
    """Write ``out/<category>.jsonl`` (``n`` load-test reviews), the real meta file and ``LOADTEST.md``."""
    if n < 1:
        raise ValueError(f"a load test needs n >= 1 reviews, got {n}")
    source, out = Path(source), Path(out)
    stats = ReadStats()
    by_user: dict[str, list[dict]] = {}
    for r in iter_reviews(source / f"{category}.jsonl", stats):
        by_user.setdefault(r["user_id"], []).append({k: v for k, v in r.items() if v is not None})
    if not by_user:
        raise ValueError(f"{source / f'{category}.jsonl'} has no usable review to resample")
    users = sorted(by_user)
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    written = draws = 0
    with atomic_path(out / f"{category}.jsonl") as tmp, open(tmp, "w", encoding="utf-8") as f:
        while written < n:
            real = users[rng.randrange(len(users))]
            uid = f"{LOAD_TEST_PREFIX}{draws}-{real}"
            for r in by_user[real][: n - written]:
                f.write(json.dumps({**r, "user_id": uid}, ensure_ascii=False) + "\n")
                written += 1
            draws += 1
    with atomic_path(out / f"meta_{category}.jsonl") as tmp:
        shutil.copyfile(source / f"meta_{category}.jsonl", tmp)
    atomic_write_text(
        out / "LOADTEST.md",
        README.format(n=n, category=category, seed=seed, real=stats.records, users=len(users), source=source),
    )
    return {"reviews": written, "users": draws, "real_reviews": stats.records, "real_users": len(users)}
