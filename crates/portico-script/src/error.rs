//! Errors of loading scripts and of calling into them.

use std::fmt;

use portico_platform::MethodError;
use serde_json::Value;

/// A 1-based line and column in a script file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Line, from 1.
    pub line: u32,
    /// Column in characters, from 1.
    pub column: u32,
}

impl Position {
    /// The position of the byte `offset` of `source`.
    pub fn at_offset(source: &str, offset: usize) -> Position {
        let offset = offset.min(source.len());
        let before = source.get(..offset).unwrap_or(source);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Position {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why scripts could not be loaded: what `serve` stops on and `portico check` reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A file cannot be read.
    #[error("{file}: cannot read it: {reason}")]
    Read {
        /// The file, as the user named it.
        file: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A syntax error, a TypeScript construct that cannot be stripped, or a failed import, at
    /// a position.
    #[error("{file}:{position}: {message}")]
    At {
        /// The file (relative to the scripts' folder).
        file: String,
        /// Where.
        position: Position,
        /// What.
        message: String,
    },
    /// The main module threw while it was evaluated (with the script's stack when it had one).
    #[error("{0}")]
    Evaluation(String),
    /// A definition is malformed or collides with another (both places are named).
    #[error("{0}")]
    Definition(String),
    /// The engine could not start (out of memory at start-up, a thread that cannot be spawned).
    #[error("the script engine could not start: {0}")]
    Engine(String),
}

/// Why a call into a script did not return a value.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The script threw a `PorticoError` (or an object shaped like one): a client error with
    /// its code, reason, details and status.
    Portico {
        /// The error code.
        error: String,
        /// The human-readable reason.
        reason: Option<String>,
        /// Details.
        details: Option<Value>,
        /// The HTTP status the script chose (`statusCode`), if any.
        status: Option<u16>,
    },
    /// Anything else the script threw, or a value that cannot cross (a cycle, a BigInt, a
    /// function): logged with the script's stack, answered as an internal error.
    Failed {
        /// The message and the script's stack (for the log, never for the client).
        message: String,
    },
    /// The call ran past `timeout_ms`, or its runtime's heap passed `memory_mb`, or the engine
    /// stopped it otherwise.
    Stopped {
        /// Why (for the log).
        reason: String,
    },
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Portico { error, reason, .. } => {
                write!(f, "{error}")?;
                if let Some(reason) = reason {
                    write!(f, ": {reason}")?;
                }
                Ok(())
            }
            CallError::Failed { message } => f.write_str(message),
            CallError::Stopped { reason } => f.write_str(reason),
        }
    }
}

impl std::error::Error for CallError {}

/// The auto API's error for a failed script call. Anything but a `PorticoError` is logged
/// (message, script stack) and answered as an internal error that says nothing of it.
pub(crate) fn method_error(error: CallError, what: &str) -> MethodError {
    match error {
        CallError::Portico {
            error,
            reason,
            details,
            status,
        } => {
            let mut e = MethodError::new(error, reason.unwrap_or_default());
            if e.reason.as_deref() == Some("") {
                e.reason = None;
            }
            if let Some(details) = details {
                e = e.with_details(details);
            }
            if let Some(status) = status {
                e = e.with_status(status);
            }
            e
        }
        CallError::Failed { message } => MethodError::internal(format!("{what}: {message}")),
        CallError::Stopped { reason } => MethodError::internal(format!("{what}: {reason}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let s = "ab\ncdé\nf";
        assert_eq!(Position::at_offset(s, 0), Position { line: 1, column: 1 });
        assert_eq!(Position::at_offset(s, 3), Position { line: 2, column: 1 });
        assert_eq!(Position::at_offset(s, 7), Position { line: 2, column: 4 });
        assert_eq!(Position::at_offset(s, 8), Position { line: 3, column: 1 });
        assert_eq!(Position::at_offset(s, 99).line, 3);
    }
}
