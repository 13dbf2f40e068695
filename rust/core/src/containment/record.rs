//! One finished wrap call, kept in completion order.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Llm,
    Tool,
}

impl Kind {
    pub fn from_code(code: u8) -> Option<Kind> {
        match code {
            0 => Some(Kind::Llm),
            1 => Some(Kind::Tool),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Llm => "llm",
            Kind::Tool => "tool",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Halted,
    Aborted,
    Timeout,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Halted => "halted",
            Status::Aborted => "aborted",
            Status::Timeout => "timeout",
            Status::Error => "error",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub node_id: String,
    pub parent_id: Option<String>,
    pub kind: Kind,
    pub name: String,
    /// Nanoseconds since the chain's epoch (monotonic clock).
    pub start_ns: u64,
    pub end_ns: u64,
    pub status: Status,
    pub cost_usd: f64,
    pub retries: u32,
}
