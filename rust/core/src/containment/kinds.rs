//! What containment does for each kind of contained call (docs/design.md §43,
//! docs/containment.md "Memory calls and memory governance").

use crate::recorder::Kind;

/// Whether the pipeline's per-call hooks (`before_llm_call` / `before_tool_call`, `on_error`) see a
/// call of this kind. Memory reads and writes skip them: they count as steps and pass every chain
/// limit, the circuit breaker and the memory governor, but no LLM or tool hook.
pub fn consults_pipeline(kind: Kind) -> bool {
    matches!(kind, Kind::Llm | Kind::Tool)
}

/// Whether a call of this kind is an LLM call: `before_charge` and pricing by token usage apply.
pub fn is_llm(kind: Kind) -> bool {
    kind == Kind::Llm
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_calls_are_calls_that_skip_the_pipeline() {
        for kind in [Kind::MemoryRead, Kind::MemoryWrite] {
            assert!(!consults_pipeline(kind));
            assert!(!is_llm(kind));
        }
        assert!(consults_pipeline(Kind::Llm) && consults_pipeline(Kind::Tool));
        assert!(is_llm(Kind::Llm) && !is_llm(Kind::Tool));
    }
}
