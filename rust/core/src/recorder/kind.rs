//! Node kinds and lifecycle statuses.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Llm,
    Tool,
    System,
    MemoryRead,
    MemoryWrite,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Llm,
        Kind::Tool,
        Kind::System,
        Kind::MemoryRead,
        Kind::MemoryWrite,
    ];

    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "llm" => Kind::Llm,
            "tool" => Kind::Tool,
            "system" => Kind::System,
            "memory_read" => Kind::MemoryRead,
            "memory_write" => Kind::MemoryWrite,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Llm => "llm",
            Kind::Tool => "tool",
            Kind::System => "system",
            Kind::MemoryRead => "memory_read",
            Kind::MemoryWrite => "memory_write",
        }
    }

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Created,
    Running,
    Success,
    Fail,
    Halt,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Created,
        Status::Running,
        Status::Success,
        Status::Fail,
        Status::Halt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Running => "running",
            Status::Success => "success",
            Status::Fail => "fail",
            Status::Halt => "halt",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Success | Status::Fail | Status::Halt)
    }
}
