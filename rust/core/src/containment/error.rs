//! Containment's error registry: each variant has one stable code in the naming scheme every engine shares
//! (`<engine>.<reason>`, `<engine>.<operation>.<reason>`: docs/design.md §28). Errors of the chain's call graph
//! keep their own `recorder.*` code. The bindings map each variant to the exception type the reference raises.

use std::fmt;

use crate::recorder::RecorderError;

#[derive(Clone, Debug, PartialEq)]
pub enum ContainmentError {
    /// A call id that is not (or no longer) open in this chain.
    NotOpen(String),
    /// A reported number out of range, or a total that would overflow (docs/design.md §23).
    InvalidNumber { field: &'static str, reason: String },
    /// The chain's call graph refused.
    Graph(RecorderError),
}

impl ContainmentError {
    /// Every code containment adds to the recorder's.
    pub const CODES: &'static [&'static str] =
        &["containment.not_open", "containment.invalid_number"];

    pub fn code(&self) -> &'static str {
        match self {
            ContainmentError::NotOpen(_) => Self::CODES[0],
            ContainmentError::InvalidNumber { .. } => Self::CODES[1],
            ContainmentError::Graph(e) => e.code(),
        }
    }
}

impl From<RecorderError> for ContainmentError {
    fn from(e: RecorderError) -> Self {
        ContainmentError::Graph(e)
    }
}

impl fmt::Display for ContainmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContainmentError::NotOpen(id) => write!(f, "Node not found: '{id}'"),
            ContainmentError::InvalidNumber { field, reason } => write!(f, "{field} {reason}"),
            ContainmentError::Graph(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ContainmentError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_naming_scheme() {
        for code in ContainmentError::CODES.iter().chain(RecorderError::CODES) {
            let parts: Vec<&str> = code.split('.').collect();
            assert!(matches!(parts[0], "containment" | "recorder"), "{code}");
            assert!((2..=3).contains(&parts.len()), "{code}");
            assert!(parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
        }
        let graph = ContainmentError::from(RecorderError::RootExists("r".into()));
        assert_eq!(graph.code(), "recorder.create_root.root_exists");
        assert_eq!(
            ContainmentError::NotOpen("n1".into()).code(),
            "containment.not_open"
        );
    }
}
