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

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: invalid value {:?} (allowed: {})", self.field, self.value, self.allowed)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Config(ConfigError),
    #[error("config: {0}")]
    Parse(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
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
            _ => None,
        }
    }

    pub fn from_serde(e: serde_json::Error) -> Self {
        Error::Parse(e.to_string())
    }
    pub fn io(path: &str, e: impl fmt::Display) -> Self {
        Error::Io { path: path.to_string(), message: e.to_string() }
    }
}
