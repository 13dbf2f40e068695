import pytest

from chainwarden.shield import Decision, SafetyEvent, ShieldPipeline, ToolCallContext

CTX = ToolCallContext(request_id="req-1", tool_name="search")


class Fixed:
    """A hook with a fixed answer at every boundary."""

    def __init__(self, answer: Decision | None) -> None:
        self.answer = answer
        self.seen: list[tuple[object, ...]] = []

    def before_llm_call(self, ctx: ToolCallContext) -> Decision | None:
        self.seen.append(("llm", ctx.request_id))
        return self.answer

    def before_tool_call(self, ctx: ToolCallContext) -> Decision | None:
        self.seen.append(("tool", ctx.tool_name))
        return self.answer

    def before_egress(self, ctx: ToolCallContext, url: str, method: str) -> Decision | None:
        self.seen.append(("egress", method, url))
        return self.answer

    def before_charge(self, ctx: ToolCallContext, cost_usd: float) -> Decision | None:
        self.seen.append(("charge", cost_usd))
        return self.answer

    def on_error(self, ctx: ToolCallContext, err: BaseException) -> Decision | None:
        self.seen.append(("error", type(err).__name__))
        return self.answer


def test_empty_pipeline_allows_everything_but_errors() -> None:
    pipeline = ShieldPipeline()
    assert pipeline.before_llm_call(CTX) is Decision.ALLOW
    assert pipeline.before_tool_call(CTX) is Decision.ALLOW
    assert pipeline.before_egress(CTX, "https://x", "GET") is Decision.ALLOW
    assert pipeline.before_charge(CTX, 0.5) is Decision.ALLOW
    assert pipeline.on_error(CTX, ValueError()) is Decision.HALT
    [event] = pipeline.get_events()
    assert (event.event_type, event.hook, event.decision) == (
        "RETRY_POLICY_APPLIED",
        "ShieldPipeline",
        "HALT",
    )


def test_on_error_policy_allow_records_nothing() -> None:
    pipeline = ShieldPipeline(on_error_policy=Decision.ALLOW)
    assert pipeline.on_error(CTX, ValueError()) is Decision.ALLOW
    assert pipeline.get_events() == []


def test_every_hook_point_is_consulted_and_halts_are_logged() -> None:
    hook = Fixed(Decision.HALT)
    pipeline = ShieldPipeline(pre_dispatch=hook, egress=hook, retry=hook, budget=hook, tool_dispatch=hook)
    assert pipeline.before_llm_call(CTX) is Decision.HALT
    assert pipeline.before_tool_call(CTX) is Decision.HALT
    assert pipeline.before_egress(CTX, "https://api", "POST") is Decision.HALT
    assert pipeline.before_charge(CTX, 0.25) is Decision.HALT
    assert pipeline.on_error(CTX, KeyError()) is Decision.HALT
    assert hook.seen == [
        ("llm", "req-1"),
        ("tool", "search"),
        ("egress", "POST", "https://api"),
        ("charge", 0.25),
        ("error", "KeyError"),
    ]
    events = pipeline.get_events()
    assert len(events) == 5
    assert all(isinstance(e, SafetyEvent) and e.hook == "Fixed" and e.event_type == "FIXED" for e in events)
    assert all(e.request_id == "req-1" for e in events)
    pipeline.clear_events()
    assert pipeline.get_events() == []


def test_no_opinion_means_allow_and_is_not_logged() -> None:
    hook = Fixed(None)
    pipeline = ShieldPipeline(pre_dispatch=hook, retry=hook)
    assert pipeline.before_llm_call(CTX) is Decision.ALLOW
    assert pipeline.on_error(CTX, ValueError()) is Decision.ALLOW
    assert pipeline.get_events() == []


def test_foreign_decision_values_are_normalised() -> None:
    class Foreign:
        def before_llm_call(self, ctx: ToolCallContext) -> str:
            return "DEGRADE"

    pipeline = ShieldPipeline(pre_dispatch=Foreign())  # type: ignore[arg-type]
    assert pipeline.before_llm_call(CTX) is Decision.DEGRADE


def test_rejects_non_decision_policy() -> None:
    with pytest.raises(TypeError):
        ShieldPipeline(on_error_policy="HALT")  # type: ignore[arg-type]
