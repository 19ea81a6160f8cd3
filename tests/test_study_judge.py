"""The LLM judge against a scripted OpenAI-compatible server on loopback: reply parsing, bounded retries,
deterministic order, blinding, the resumable cache, and the §06 LLM column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai_server import Scripted, serve
from study_fixture import SEED, fixture_pool

from pqb.builders.cli import main
from pqb.builders.study.judge import JUDGMENTS, ChatClient, EndpointError, judge_items, parse_reply
from pqb.builders.study.rubric import dimensions_of
from pqb.builders.study.sheet import export_sheet

SYN, ATT, ERR = (dimensions_of(t) for t in ("syntactic", "attribution", "error"))


@pytest.mark.parametrize(
    ("reply", "dims", "want"),
    [
        ('{"naturalness": 4, "syntactic_quality": 5}', SYN, {"naturalness": "4", "syntactic_quality": "5"}),
        ('Sure! {"naturalness": "4.0", "syntactic_quality": 2} hope it helps', SYN, {"naturalness": "4", "syntactic_quality": "2"}),
        ("Naturalness: 3\nSyntactic quality: 4", SYN, {"naturalness": "3", "syntactic_quality": "4"}),
        ('{"naturalness": 7, "syntactic_quality": 4}', SYN, None),  # out of the scale
        ('{"naturalness": 4}', SYN, None),  # half an answer
        ("I cannot tell.", SYN, None),
        ('{"attribution": "No preference"}', ATT, {"attribution": "none"}),
        ('{"attribution": "b"}', ATT, {"attribution": "B"}),
        ('{"error_consistency": "Strict"}', ERR, {"error_consistency": "strict"}),
    ],
)  # fmt: skip
def test_reply_parsing(reply, dims, want) -> None:
    assert parse_reply(reply, dims) == want


def _client(url: str, model: str = "judge-x", **kw) -> ChatClient:
    return ChatClient(url, model, sleep=lambda s: None, **kw)


def test_retries_order_blinding_and_counts(tmp_path: Path) -> None:
    items = fixture_pool()[:4]  # error, attribution, syntactic, syntactic (the sheet's seeded order)
    script = [503, '{"error_consistency": "strict"}', 'Answer: {"attribution": "no preference"}', "garbage", 429,
              "naturalness: 3, syntactic_quality: 4"]  # fmt: skip
    server = Scripted(script)
    with serve(server) as url:
        rep = judge_items(items, _client(url), tmp_path)
    assert rep["counts"] == {"asked": 4, "items": 4, "parsed": 3, "torn_cache_lines": 0, "unparsed": 1}
    assert rep["retries"] == {"HTTP 503": 1, "HTTP 429": 1}
    assert [j["status"] for j in rep["judgments"]] == ["parsed", "parsed", "unparsed", "parsed"]
    assert rep["judgments"][2]["reply"] == "garbage"  # kept verbatim, counted, never dropped
    users = [r["messages"][1]["content"] for r in server.requests]
    assert [items[0].text in users[0], items[1].text in users[2], items[2].text in users[3]] == [True] * 3
    sent = json.dumps(server.requests)
    for it in items:  # the judge sees what an annotator sees: never the source, reference or true author
        assert f'"{it.source}"' not in sent and it.ref not in sent.replace(it.text, "")
    assert all(r["temperature"] == 0 and r["seed"] == 0 for r in server.requests)
    assert rep["prompts"]["attribution"][1]["content"].startswith("Text:\n{text}")


def test_cache_resumes_and_rekeys_on_what_shapes_a_judgment(tmp_path: Path) -> None:
    items = fixture_pool()[:3]
    replies = [
        '{"error_consistency": "fail"}',
        '{"attribution": "A"}',
        '{"naturalness": 2, "syntactic_quality": 2}',
    ]
    first = Scripted(list(replies))
    with serve(first) as url:
        judge_items(items, _client(url), tmp_path)
        second = judge_items(items, _client(url), tmp_path)  # same endpoint and model: all cached
    assert second["counts"]["cached"] == 3 and "asked" not in second["counts"] and len(first.requests) == 3
    assert [j["labels"] for j in second["judgments"]][1] == {"attribution": "A"}
    with (tmp_path / JUDGMENTS).open("a", encoding="utf-8") as f:
        f.write('{"key": "torn')  # a run killed mid-line
    other = Scripted(list(replies))
    with serve(other) as url:
        third = judge_items(items, _client(url, model="judge-y"), tmp_path)  # another model: asked again
    assert third["counts"]["asked"] == 3 and third["counts"]["torn_cache_lines"] == 1
    assert len((tmp_path / JUDGMENTS).read_text(encoding="utf-8").splitlines()) == 6


def test_retries_are_bounded_and_hard_errors_stop(tmp_path: Path) -> None:
    items = fixture_pool()[:2]
    server = Scripted([500, 500, 500, '{"attribution": "B"}'])
    with serve(server) as url:
        rep = judge_items(items, _client(url, max_retries=2), tmp_path / "a")
    assert rep["counts"]["failed"] == 1 and len(server.requests) == 4  # 3 tries, then the next item
    assert rep["judgments"][1]["labels"] == {"attribution": "B"}
    refused = Scripted([401])
    with serve(refused) as url, pytest.raises(EndpointError, match="HTTP 401"):
        judge_items(items, _client(url), tmp_path / "b")
    assert len(refused.requests) == 1


def test_judge_and_report_through_the_cli(tmp_path: Path, capsys) -> None:
    export_sheet(fixture_pool(), tmp_path / "sheet", tmp_path / "key.json", {"seed": SEED})
    answers = {"syntactic": '{"naturalness": 4, "syntactic_quality": 3}', "attribution": '{"attribution": "A"}',
               "error": '{"error_consistency": "acceptable"}'}  # fmt: skip
    script = [answers[it.task] for it in fixture_pool()]
    with serve(Scripted(script, model="served-name")) as url:
        rc = main(["study", "judge", "--key", str(tmp_path / "key.json"), "--endpoint", url, "--model", "judge-x",
                   "--out", str(tmp_path / "judge"), "--no-progress"])  # fmt: skip
    assert rc == 0
    assert main(["study", "report", "--key", str(tmp_path / "key.json"), "--judge", str(tmp_path / "judge"),
                 "--n-boot", "100"]) == 0  # fmt: skip
    rep = json.loads((tmp_path / "study_report.json").read_text(encoding="utf-8"))
    pqb = rep["llm"]["by_source"]["pqb"]
    assert pqb["naturalness"]["value"] == 4.0 and pqb["error_acceptable"]["value"] == 1.0
    # "A" every time: right on the one PQB item whose author is A, wrong on the one whose author is B
    assert pqb["attribution"]["value"] == 0.5
    assert rep["judge"]["model"] == "judge-x" and rep["judge"]["served_models"] == ["served-name"]
    assert "You are a careful linguist" in rep["judge"]["prompts"]["syntactic"][0]["content"]
    md = (tmp_path / "study_report.md").read_text(encoding="utf-8")
    assert "LLM judge `judge-x`" in md and "| Naturalness (1–5) | 4.00" in md
    # every source of the pool has its columns, rated or not (an all-unparsed judge once printed none)
    assert "| Dimension | pqb LLM | pqb Human | authors LLM | authors Human | real LLM | real Human |" in md
