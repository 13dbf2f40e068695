"""Context that travels (user, session, tags, attributes) and opt-in content capture of ExecutionContext."""

from __future__ import annotations

import asyncio
import json
import logging
import math

import pytest

from chainwarden import ExecutionGraph
from chainwarden.cli.export import context_snapshot_json
from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions

SECRET = "sk-live-0123456789"


def _meta(**kwargs: object) -> ChainMetadata:
    return ChainMetadata(request_id="req-1", chain_id="chain-1", **kwargs)  # type: ignore[arg-type]


def _calls(ctx: ExecutionContext) -> list[dict[str, object]]:
    return [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] != "system"]


def test_tags_are_a_list_or_a_dict_and_are_frozen() -> None:
    given = ["beta", "eu"]
    meta = _meta(tags=given, user_id="u-1", session_id="s-1", attributes={"plan": "pro", "seats": [1, 2]})
    given.append("late")
    assert meta.tags == ("beta", "eu")
    assert _meta(tags=("a",)).tags == ("a",)
    assert dict(_meta(tags={"env": "prod"}).tags) == {"env": "prod"}
    assert _meta().tags == ()
    assert meta.attributes is not None and meta.attributes["seats"] == [1, 2]
    with pytest.raises(TypeError):
        meta.attributes["plan"] = "free"  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"tags": "beta"}, TypeError, "tags"),
        ({"tags": ["ok", 3]}, TypeError, "tags[1]"),
        ({"tags": {"env": 1}}, TypeError, "tags"),
        ({"session_id": 7}, TypeError, "session_id"),
        ({"attributes": ["a"]}, TypeError, "attributes"),
        ({"attributes": {"when": {1, 2}}}, TypeError, "attributes['when']"),
        ({"attributes": {"x": {"y": math.nan}}}, ValueError, "attributes['x']['y']"),
        ({"attributes": {1: "x"}}, TypeError, "attributes"),
    ],
)
def test_bad_context_is_a_typed_error_naming_the_argument(
    kwargs: dict[str, object], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names.replace("[", r"\[").replace("]", r"\]")):
        _meta(**kwargs)


def test_context_reaches_the_root_and_both_snapshot_formats() -> None:
    meta = _meta(user_id="u-1", session_id="s-9", tags={"env": "prod"}, attributes={"plan": "pro", "n": 2})
    with ExecutionContext(ExecutionConfig(1.0, 5, 1), metadata=meta) as ctx:
        ctx.wrap_llm_call(lambda: None, WrapOptions("plan"))
    graph = ctx.get_graph_snapshot()
    root = graph["nodes"][graph["root_id"]]
    expected = {
        "user_id": "u-1",
        "session_id": "s-9",
        "tags": {"env": "prod"},
        "attributes": {"plan": "pro", "n": 2},
    }
    assert root["metadata"] == {"request_id": "req-1", **expected}
    # The graph snapshot loads back with its context, byte for byte.
    loaded = ExecutionGraph.from_snapshot(ctx.get_graph_snapshot_json())
    assert loaded.node(graph["root_id"])["metadata"] == root["metadata"]
    saved = json.loads(context_snapshot_json(ctx.get_snapshot()))
    assert {k: saved["metadata"][k] for k in expected} == expected
    assert ctx.get_snapshot().metadata is meta


def test_a_list_of_tags_stays_a_list() -> None:
    with ExecutionContext(ExecutionConfig(1.0, 5, 1), metadata=_meta(tags=["a", "b"])) as ctx:
        pass
    graph = ctx.get_graph_snapshot()
    assert graph["nodes"][graph["root_id"]]["metadata"]["tags"] == ["a", "b"]
    assert json.loads(context_snapshot_json(ctx.get_snapshot()))["metadata"]["tags"] == ["a", "b"]


def test_no_content_is_kept_by_default() -> None:
    ctx = ExecutionContext(ExecutionConfig(1.0, 5, 1))
    ctx.wrap_llm_call(lambda: SECRET)
    assert _calls(ctx)[0]["metadata"] == {}
    assert SECRET.encode() not in ctx.get_graph_snapshot_json()


def test_captured_content_is_masked_then_cut() -> None:
    seen: list[str] = []

    def mask(text: str) -> str:
        seen.append(text)
        return text.replace(SECRET, "[key]")

    config = ExecutionConfig(1.0, 5, 1, capture_content=True, max_content_chars=24, mask=mask)
    ctx = ExecutionContext(config)

    @ctx.llm_call("ask")
    def ask(question: str, *, key: str) -> str:
        return f"answer to {question} with {key} and a long tail of words"

    ask("why", key=SECRET)
    [call] = _calls(ctx)
    assert call["metadata"]["content_input"] == "test_captured_content_i…"[:24]
    assert call["metadata"]["content_output"] == "answer to why with [key…"
    assert all(len(v) <= 24 for v in call["metadata"].values())
    assert SECRET.encode() not in ctx.get_graph_snapshot_json()
    assert any(SECRET in text for text in seen)  # the mask saw the whole text before it was cut


def test_inputs_of_failed_calls_and_async_calls_are_kept() -> None:
    ctx = ExecutionContext(ExecutionConfig(1.0, 5, 3, capture_content=True))

    def broken() -> None:
        raise RuntimeError("down")

    ctx.wrap_tool_call(broken, WrapOptions("fetch"))

    async def answer() -> dict[str, str]:
        return {"role": "assistant", "content": "hi"}

    async def main() -> None:
        await ctx.wrap_llm_call_async(answer, WrapOptions("chat"))

    asyncio.run(main())
    fetch, chat = _calls(ctx)
    assert "broken" in fetch["metadata"]["content_input"] and "content_output" not in fetch["metadata"]
    assert chat["metadata"]["content_output"] == '{"role": "assistant", "content": "hi"}'


@pytest.mark.parametrize("mask", [lambda text: 1 / 0, lambda text: None])
def test_a_failing_mask_keeps_nothing_and_never_logs_the_text(
    mask: object, caplog: pytest.LogCaptureFixture
) -> None:
    config = ExecutionConfig(1.0, 5, 1, capture_content=True, mask=mask)  # type: ignore[arg-type]
    ctx = ExecutionContext(config)
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        decision = ctx.wrap_llm_call(lambda: SECRET)
    assert decision.value == "ALLOW"
    assert _calls(ctx)[0]["metadata"] == {}
    assert "not kept" in caplog.text and SECRET not in caplog.text


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"capture_content": 1}, TypeError),
        ({"max_content_chars": -1}, ValueError),
        ({"max_content_chars": 1.5}, TypeError),
        ({"max_content_chars": 2**30}, ValueError),
        ({"mask": "redact"}, TypeError),
    ],
)
def test_capture_settings_are_checked(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error, match=next(iter(kwargs))):
        ExecutionConfig(1.0, 5, 1, **kwargs)  # type: ignore[arg-type]
