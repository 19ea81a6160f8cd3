"""The LLM judge: the study's items rated through any OpenAI-compatible chat endpoint (vLLM, llama.cpp's
server, OpenAI, DeepSeek, a local test server).

The judge reads exactly what a human annotator reads (:meth:`Item.shown`: task and texts, never the
source, the condition or the true author) and answers the rubric's questions
(:mod:`pqb.builders.study.rubric`) in a one-line JSON object. Properties the report relies on:

* **Every reply is counted.** A reply is parsed as the first JSON object in it, then, failing that, as
  ``name: value`` lines; a value outside the dimension's labels counts as unparsed. Unparsed replies
  are kept verbatim in the cache with their item, counted in the report, and left out of the means.
* **Bounded retries.** Connection errors, timeouts, HTTP 429 and 5xx are retried up to
  ``max_retries`` times with exponential backoff; any other HTTP status stops the run with one line
  (a wrong model name or API key would otherwise be retried for every item). Items still failing
  after their retries are counted as ``failed``.
* **Deterministic order, resumable cache.** Items are judged one at a time in the sheet's (seeded)
  order, at temperature 0 with a fixed ``seed`` field. Each judgment is appended to
  ``judgments.jsonl`` as soon as it arrives, keyed by a hash of everything that shapes it (endpoint,
  model, the full messages, temperature, max_tokens, seed); a rerun reuses a line only when its key
  matches, so a changed prompt or model re-asks. A torn last line (a killed run) is counted and skipped.
* **Offline by design.** Nothing downloads; the endpoint is whatever ``--endpoint`` names.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pqb.builders.errors import ResourceUnavailableError, UsageError
from pqb.builders.study.pool import Item
from pqb.builders.study.rubric import Dimension, dimensions_of
from pqb.dataset.io import atomic_write_text, canonical_json, stable_hash
from pqb.dataset.progress import bar

PROMPT_VERSION = "1"
JUDGMENTS = "judgments.jsonl"
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

SYSTEM_PROMPT = (
    "You are a careful linguist rating texts for a study of online shopping queries. Judge only what you "
    "are asked, from the texts shown. Answer with one line of JSON and nothing else."
)


def _question_block(dims: Sequence[Dimension]) -> str:
    parts = []
    for d in dims:
        parts.append(f'"{d.name}": {d.question}\n' + "\n".join(f"  {a}" for a in d.anchors))
    keys = ", ".join(f'"{d.name}": <{" | ".join(d.labels)}>' for d in dims)
    return "\n".join(parts) + f"\n\nReply with exactly one JSON object: {{{keys}}}"


def build_messages(item: Item) -> list[dict[str, str]]:
    """The judge's messages for one item: the system prompt and a user turn with the texts and questions."""
    if item.task == "syntactic":
        body = f"Text:\n{item.text}"
    elif item.task == "attribution":
        body = f"Text:\n{item.text}\n\nUser A writes:\n{item.sample_a}\n\nUser B writes:\n{item.sample_b}"
    elif item.task == "error":
        body = (
            f"Text with errors:\n{item.text}\n\nSame text without errors:\n{item.clean_text}\n\n"
            f"The user:\n{item.profile}"
        )
    else:
        raise UsageError(f"item {item.item_id}: unknown task {item.task!r}")
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"{body}\n\n{_question_block(dimensions_of(item.task))}"},
    ]


def prompt_templates() -> dict[str, list[dict[str, str]]]:
    """The full prompts, one per task, with placeholders for the texts (for the report)."""
    fake = {
        "text": "{text}",
        "clean_text": "{clean_text}",
        "sample_a": "{sample_a}",
        "sample_b": "{sample_b}",
        "profile": "{profile}",
    }
    return {
        t: build_messages(Item(task=t, domain="", source="", ref="", **fake))
        for t in ("syntactic", "attribution", "error")
    }


# -- reply parsing -----------------------------------------------------------------------------------

_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.S)


def _label(value: Any, dim: Dimension) -> str | None:
    v = str(value).strip().strip("\"'").lower()
    if v in ("no preference", "no_preference", "neither", "no-preference"):
        v = "none"
    try:
        f = float(v)
        v = str(int(f)) if f.is_integer() else v
    except ValueError:
        pass
    return next((lab for lab in dim.labels if lab.lower() == v), None)


def parse_reply(reply: str, dims: Sequence[Dimension]) -> dict[str, str] | None:
    """The labels of ``dims`` in ``reply`` (all of them, or ``None``: the reply does not answer)."""
    for m in _JSON_OBJECT.finditer(reply or ""):
        try:
            obj = json.loads(m.group())
        except ValueError:
            continue
        if isinstance(obj, dict):
            low = {str(k).strip().lower(): v for k, v in obj.items()}
            got = {d.name: _label(low[d.name], d) for d in dims if d.name in low}
            if len(got) == len(dims) and all(got.values()):
                return got  # type: ignore[return-value]
    got2: dict[str, str] = {}
    for d in dims:
        m = re.search(
            rf"{d.name.replace('_', '[ _]')}\W*[:=]\s*\"?([A-Za-z0-9 _-]+?)\"?\s*(?:[,}}\n]|$)",
            reply or "",
            re.I,
        )
        if m and (lab := _label(m.group(1), d)):
            got2[d.name] = lab
    return got2 if len(got2) == len(dims) else None


# -- the endpoint ------------------------------------------------------------------------------------


class EndpointError(ResourceUnavailableError):
    """The endpoint refused the request in a way a retry cannot fix (bad model, key, or URL)."""


@dataclass
class ChatClient:
    """``POST {endpoint}/chat/completions`` over the standard library, with bounded retries."""

    endpoint: str
    model: str
    api_key: str = ""
    temperature: float = 0.0
    max_tokens: int = 64
    seed: int = 0
    timeout: float = 120.0
    max_retries: int = 3
    backoff: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    retries: Counter[str] = field(default_factory=Counter)

    def payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def complete(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The reply's text, the served model id and the attempts it took; raises after the last retry."""
        url = self.endpoint.rstrip("/") + "/chat/completions"
        data = json.dumps(self.payload(messages)).encode("utf-8")
        headers = {"Content-Type": "application/json"} | (
            {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        )
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                req = urllib.request.Request(url, data=data, headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    body = json.loads(resp.read().decode("utf-8"))
                text = body["choices"][0]["message"]["content"]
                return {
                    "reply": text if isinstance(text, str) else "",
                    "served_model": body.get("model"),
                    "attempts": attempt + 1,
                }
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRY_STATUS:
                    detail = exc.read().decode("utf-8", "replace")[:200]
                    raise EndpointError(
                        f"{url} answered HTTP {exc.code} ({' '.join(detail.split())}); check --endpoint, --model and the API key"
                    ) from exc
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = type(exc).__name__ + ": " + str(getattr(exc, "reason", exc))
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                last = f"malformed response ({type(exc).__name__})"
            self.retries[last.split(":")[0]] += 1
        raise TransientFailure(last)


class TransientFailure(Exception):
    """Retries ran out on a retryable failure; the item is counted as failed and the run goes on."""


def cache_key(client: ChatClient, messages: list[dict[str, str]]) -> str:
    return stable_hash(PROMPT_VERSION, client.endpoint.rstrip("/"), client.payload(messages), length=32)


def read_cache(path: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """Cached judgments by key, and the number of unreadable lines (a torn last line of a killed run)."""
    found: dict[str, dict[str, Any]] = {}
    bad = 0
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
                found[rec["key"]] = rec
            except (ValueError, KeyError, TypeError):
                bad += 1
    return found, bad


def _append(path: Path, record: Mapping[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(canonical_json(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def judge_items(
    items: Sequence[Item], client: ChatClient, out_dir: str | Path, *, limit: int | None = None
) -> dict[str, Any]:
    """Judge ``items`` in order (the first ``limit``), reusing cached judgments; returns the judge's report."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / JUDGMENTS
    cached, torn = read_cache(path)
    if torn:  # rewrite without the unreadable lines, so appends start on a clean line
        atomic_write_text(path, "".join(canonical_json(r) + "\n" for r in cached.values()))
    todo = list(items[:limit] if limit is not None else items)
    counts: Counter[str] = Counter({"items": len(todo), "torn_cache_lines": torn})
    judgments: list[dict[str, Any]] = []
    seconds: list[float] = []
    for item in bar(todo, desc="judge", unit="item"):
        messages = build_messages(item)
        key = cache_key(client, messages)
        rec = cached.get(key)
        if rec is not None:
            counts["cached"] += 1
        else:
            t0 = time.perf_counter()
            try:
                got = client.complete(messages)
            except TransientFailure as exc:
                counts["failed"] += 1
                judgments.append(
                    {"item_id": item.item_id, "task": item.task, "status": "failed", "error": str(exc)}
                )
                continue
            dims = dimensions_of(item.task)
            labels = parse_reply(got["reply"], dims)
            rec = {
                "key": key,
                "item_id": item.item_id,
                "task": item.task,
                "reply": got["reply"],
                "labels": labels,
                "served_model": got["served_model"],
                "attempts": got["attempts"],
                "seconds": round(time.perf_counter() - t0, 3),
            }
            seconds.append(rec["seconds"])
            _append(path, rec)
            cached[key] = rec
            counts["asked"] += 1
        counts["parsed" if rec["labels"] else "unparsed"] += 1
        judgments.append({"item_id": item.item_id, "task": item.task, "status": "parsed" if rec["labels"] else "unparsed",
                          "labels": rec["labels"], "reply": rec["reply"]})  # fmt: skip
    return {
        "endpoint": client.endpoint,
        "model": client.model,
        "served_models": sorted(
            {str(r.get("served_model")) for r in cached.values() if r.get("served_model")}
        ),
        "sampling": {"temperature": client.temperature, "max_tokens": client.max_tokens, "seed": client.seed},
        "prompt_version": PROMPT_VERSION,
        "prompts": prompt_templates(),
        "counts": dict(sorted(counts.items())),
        "retries": dict(sorted(client.retries.items())),
        "seconds_per_asked_item": round(sum(seconds) / len(seconds), 3) if seconds else None,
        "judgments": judgments,
    }


def api_key_from_env(name: str) -> str:
    """The key in ``$name`` (empty: none sent, as local servers expect)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UsageError(f"--api-key-env {name!r} is not an environment variable name")
    return os.environ.get(name, "")
