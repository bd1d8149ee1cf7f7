//! Contract: every failure the engine reports is one line
//! `ccarena-flow: <attempt>: <object>: <cause>` on stderr, and the process exit code
//! says what kind of failure it was: 2 = the configuration is wrong (nothing ran),
//! 1 = something failed at run time. `Failure` carries the three parts and the class.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Config,
    Runtime,
}

#[derive(Debug)]
pub struct Failure {
    pub class: Class,
    pub attempt: String,
    pub object: String,
    pub cause: String,
}

impl Failure {
    pub fn config(attempt: &str, object: impl Into<String>, cause: impl Into<String>) -> Self {
        Failure { class: Class::Config, attempt: attempt.into(), object: object.into(), cause: cause.into() }
    }
    pub fn runtime(attempt: &str, object: impl Into<String>, cause: impl Into<String>) -> Self {
        Failure { class: Class::Runtime, attempt: attempt.into(), object: object.into(), cause: cause.into() }
    }
    pub fn os(attempt: &str, object: impl Into<String>, err: std::io::Error) -> Self {
        Failure::runtime(attempt, object, err.to_string())
    }
    pub fn exit_code(&self) -> i32 {
        match self.class {
            Class::Config => 2,
            Class::Runtime => 1,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ccarena-flow: {}: {}: {}", self.attempt, self.object, self.cause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn failure_prints_one_line_with_attempt_object_cause() {
        let f = Failure::config("read config", "/x/host.json", "flows[0].dst: missing");
        assert_eq!(f.to_string(), "ccarena-flow: read config: /x/host.json: flows[0].dst: missing");
        assert_eq!(f.exit_code(), 2);
        assert_eq!(Failure::runtime("a", "b", "c").exit_code(), 1);
    }
}
