//! Errors the core reports. A bad config names the field, the value and what
//! is allowed; nothing in the core panics on user input.

use std::fmt;

pub type Result<T> = std::result::Result<T, Error>;

/// A field of the configuration holds a value outside its allowed range.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub value: String,
    pub allowed: String,
}

impl ConfigError {
    pub fn new(field: &str, value: String, allowed: &str) -> Self {
        ConfigError { field: field.to_string(), value, allowed: allowed.to_string() }
    }
}

/// An allowed range of whole numbers in words, as every message says one:
/// `1 to 64`, or `1` when it holds one number.
pub fn range_text(lo: u64, hi: u64) -> String {
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo} to {hi}")
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: invalid value '{}' (allowed: {})", self.field, self.value, self.allowed)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Config(ConfigError),
    #[error("config: {0}")]
    Parse(String),
    /// The contract's JSON has a field of the wrong shape (type, unknown
    /// variant, unknown or missing field): its dotted path and serde's words.
    #[error("{field}: {message}")]
    Field { field: String, message: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// The run was asked to stop (`engine::cancel`), at this simulated time.
    #[error("interrupted at {0} ps of simulated time")]
    Interrupted(u64),
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Config(e)
    }
}

impl Error {
    /// The config field a `Config` error names.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Config(c) => Some(&c.field),
            Error::Field { field, .. } => Some(field),
            _ => None,
        }
    }

    pub fn from_serde(e: serde_json::Error) -> Self {
        Error::Parse(e.to_string())
    }

    /// A deserialisation error with the dotted path of the field it is in.
    pub fn from_serde_path(e: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let field = e.path().to_string();
        let inner = e.into_inner();
        if field.is_empty() || field == "." {
            return Error::Parse(inner.to_string());
        }
        // serde's words without its position in the text (the path says where).
        let text = inner.to_string();
        let message = text.split(" at line ").next().unwrap_or(&text).to_string();
        Error::Field { field, message }
    }
    pub fn io(path: &str, e: impl fmt::Display) -> Self {
        Error::Io { path: path.to_string(), message: e.to_string() }
    }
}

/// Whether the user set the field `key` (a dotted contract key,
/// `host.pmd.burst`): named in `given` (`SimConfig::given`, whatever its
/// value) or, for a config built without that record (in Rust), `changed`
/// from its default. Every "ignored" warning decides by this; it lives
/// here, below every part that warns.
pub fn user_set(given: &[String], key: &str, changed: bool) -> bool {
    changed || given.iter().any(|g| g == key)
}
