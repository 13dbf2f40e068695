//! The recorder's errors: each variant is one row of the core's registry (`RecorderCode` in `crate::codes`,
//! docs/design.md §28), raised as the class the row names (a `KeyError`, `RuntimeError` or `ValueError` as the
//! reference raises, under the package's root).

use std::fmt;

pub use crate::codes::RecorderCode;

use crate::value::Value;

#[derive(Clone, Debug, PartialEq)]
pub enum RecorderError {
    /// `mark_*` / `increment_retries` / `node` on an id that is not (or no longer) in the graph.
    NodeNotFound(String),
    /// `begin_node` under a parent that is not (or no longer) in the graph.
    ParentNotFound(String),
    RootExists(String),
    /// A number argument that is NaN, infinite, negative or otherwise out of range.
    InvalidNumber {
        field: &'static str,
        reason: String,
    },
    /// Metadata that cannot be written as strict JSON (docs/design.md §23).
    InvalidMetadata(String),
    /// A snapshot given to `from_snapshot` that is not one this recorder wrote.
    InvalidSnapshot(String),
    /// An argument of the right type whose value does not fit the others (a recorded call's
    /// status, its error class, its end before its start).
    InvalidArgument {
        field: &'static str,
        reason: String,
    },
    /// The error of row `index` of a batch (`record_calls`); the batch changed nothing.
    Row {
        index: usize,
        error: Box<RecorderError>,
    },
}

impl RecorderError {
    /// This error's row of the core's registry (`crate::codes`).
    pub fn code(&self) -> RecorderCode {
        match self {
            // A row's error is the error of that row's field.
            RecorderError::Row { error, .. } => error.code(),
            RecorderError::NodeNotFound(_) => RecorderCode::NodeNotFound,
            RecorderError::ParentNotFound(_) => RecorderCode::ParentNotFound,
            RecorderError::RootExists(_) => RecorderCode::RootExists,
            RecorderError::InvalidNumber { .. } => RecorderCode::InvalidNumber,
            RecorderError::InvalidMetadata(_) => RecorderCode::InvalidMetadata,
            RecorderError::InvalidSnapshot(_) => RecorderCode::InvalidSnapshot,
            RecorderError::InvalidArgument { .. } => RecorderCode::InvalidArgument,
        }
    }

    /// This error as the error of row `index` of a batch.
    pub fn in_row(self, index: usize) -> RecorderError {
        RecorderError::Row {
            index,
            error: Box::new(self),
        }
    }
}

impl fmt::Display for RecorderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecorderError::NodeNotFound(id) => write!(f, "Node not found: '{id}'"),
            RecorderError::ParentNotFound(id) => write!(f, "Parent node not found: '{id}'"),
            RecorderError::RootExists(id) => write!(
                f,
                "Root node already exists: {id}. ExecutionGraph supports exactly one root per chain."
            ),
            RecorderError::InvalidNumber { field, reason } => write!(f, "{field} {reason}"),
            RecorderError::InvalidMetadata(why) => write!(f, "metadata {why}"),
            RecorderError::InvalidSnapshot(why) => write!(f, "invalid snapshot: {why}"),
            RecorderError::InvalidArgument { field, reason } => write!(f, "{field} {reason}"),
            // Field errors start with the field's name: `rows[3].cost_usd must be ...`.
            RecorderError::Row { index, error } => match **error {
                RecorderError::ParentNotFound(_) | RecorderError::NodeNotFound(_) => {
                    write!(f, "rows[{index}].parent: {error}")
                }
                _ => write!(f, "rows[{index}].{error}"),
            },
        }
    }
}

impl std::error::Error for RecorderError {}

pub fn non_negative_finite(field: &'static str, v: f64) -> Result<f64, RecorderError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(RecorderError::InvalidNumber {
            field,
            reason: format!("must be a finite number >= 0; got {v}"),
        })
    }
}

pub fn positive_finite(field: &'static str, v: f64) -> Result<f64, RecorderError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(RecorderError::InvalidNumber {
            field,
            reason: format!("must be a positive finite float; got {v}"),
        })
    }
}

pub fn non_negative_int(field: &'static str, v: Option<i64>) -> Result<Option<u64>, RecorderError> {
    match v {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as u64)),
        Some(n) => Err(RecorderError::InvalidNumber {
            field,
            reason: format!("must be >= 0; got {n}"),
        }),
    }
}

/// Metadata must be strict JSON: no NaN or infinite float at any depth.
#[inline]
pub fn finite_metadata(metadata: Option<&Value>) -> Result<(), RecorderError> {
    match metadata {
        None => Ok(()),
        Some(m) => finite_tree(m),
    }
}

fn finite_tree(metadata: &Value) -> Result<(), RecorderError> {
    match Some(metadata).and_then(Value::non_finite_path) {
        None => Ok(()),
        Some(path) => Err(RecorderError::InvalidMetadata(format!(
            "must be strict JSON: NaN and infinite floats are not allowed (at {path})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant is a row of the registry and every recorder row is raised by a variant; a row's
    /// error keeps the code of the error it wraps.
    #[test]
    fn variants_and_rows_match() {
        let field = "cost_usd";
        let errors = [
            RecorderError::NodeNotFound("n".into()),
            RecorderError::ParentNotFound("p".into()),
            RecorderError::RootExists("r".into()),
            RecorderError::InvalidNumber {
                field,
                reason: String::new(),
            },
            RecorderError::InvalidMetadata(String::new()),
            RecorderError::InvalidSnapshot(String::new()),
            RecorderError::InvalidArgument {
                field,
                reason: String::new(),
            },
        ];
        let codes: Vec<RecorderCode> = errors.iter().map(RecorderError::code).collect();
        assert_eq!(codes, RecorderCode::ALL);
        let row = RecorderError::RootExists("r".into()).in_row(3);
        assert_eq!(row.code(), RecorderCode::RootExists);
    }
}
