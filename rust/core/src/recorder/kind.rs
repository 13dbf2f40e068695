//! Node kinds and lifecycle statuses.

use crate::vocab::vocab;

vocab!(Kind, "kind", {
    Llm => "llm",
    Tool => "tool",
    System => "system",
    MemoryRead => "memory_read",
    MemoryWrite => "memory_write",
});

impl Kind {
    /// Trailing repeats of one (kind, name) that signal a loop. System nodes never do.
    pub fn consecutive_threshold(self) -> usize {
        match self {
            Kind::Llm => 5,
            Kind::System => 999,
            Kind::Tool | Kind::MemoryRead | Kind::MemoryWrite => 3,
        }
    }

    /// Occurrences anywhere in the window that signal an alternating loop (A, B, A, B, …).
    pub fn frequency_threshold(self) -> usize {
        match self {
            Kind::Llm => 7,
            Kind::System => 999,
            Kind::Tool | Kind::MemoryRead | Kind::MemoryWrite => 5,
        }
    }
}

vocab!(Status, "status", {
    Created => "created",
    Running => "running",
    Success => "success",
    Fail => "fail",
    Halt => "halt",
});

impl Status {
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Success | Status::Fail | Status::Halt)
    }
}
