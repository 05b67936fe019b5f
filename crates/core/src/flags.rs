//! Flag values as typed values: the one list parser, whole numbers, router
//! names and replica counts, each error naming the flag. The binary's
//! command layer turns clap's strings into checked configurations with
//! these; nothing below parses a flag's text again.

use crate::error::ConfigError;
use crate::profile::fleet::{check_replicas, RouterPolicy};

/// Largest concurrency level accepted (`--concurrency`, bench targets).
pub const MAX_CONCURRENCY: u32 = 4096;

/// The items of a comma-separated value (`1,8,16`, `a, b`), trimmed, empty
/// items skipped, in order.
pub fn list(raw: &str) -> impl Iterator<Item = &str> {
    raw.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// Each item of a comma-separated value parsed by `parse`; an item it
/// refuses is an error of `flag` with its reason.
pub fn parse_list<T>(
    flag: &str,
    raw: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, ConfigError> {
    list(raw)
        .map(|item| parse(item).map_err(|reason| ConfigError::invalid(flag, reason)))
        .collect()
}

/// A whole number (`8`), or why not.
pub fn whole_number(item: &str) -> Result<u32, String> {
    item.parse::<u32>()
        .map_err(|_| format!("{item:?} is not a whole number"))
}

/// Comma-separated whole numbers (`--users 10,20`).
pub fn whole_numbers(flag: &str, raw: &str) -> Result<Vec<u32>, ConfigError> {
    parse_list(flag, raw, whole_number)
}

/// Comma-separated names (`--profile a,b`).
pub fn names(raw: &str) -> Vec<String> {
    list(raw).map(String::from).collect()
}

/// One router name (`--router session`); the error lists the valid ones.
pub fn router(flag: &str, raw: &str) -> Result<RouterPolicy, ConfigError> {
    raw.parse::<RouterPolicy>()
        .map_err(|e| ConfigError::invalid(flag, e))
}

/// Comma-separated router names (`plan --router a,b`).
pub fn routers(flag: &str, raw: &str) -> Result<Vec<RouterPolicy>, ConfigError> {
    parse_list(flag, raw, str::parse::<RouterPolicy>)
}

/// A replica count in 1..=[`crate::profile::fleet::MAX_REPLICAS`].
pub fn replicas(flag: &str, n: u32) -> Result<u32, ConfigError> {
    check_replicas(n).map_err(|e| ConfigError::invalid(flag, e))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_trimmed_and_skip_empty_items() {
        assert_eq!(list(" 1, 8,,16 ,").collect::<Vec<_>>(), ["1", "8", "16"]);
        assert_eq!(list("").count(), 0);
        assert_eq!(names("a , b"), ["a", "b"]);
    }

    #[test]
    fn errors_name_the_flag_and_the_item() {
        let e = whole_numbers("--users", "10,x").unwrap_err().to_string();
        assert!(e.contains("--users") && e.contains("\"x\""), "{e}");
        let e = routers("--router", "session,sticky")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--router") && e.contains("round-robin"), "{e}");
        assert_eq!(
            router("--router", " session ").ok(),
            Some(RouterPolicy::Session)
        );
        assert!(replicas("--replicas", 0).is_err());
        assert!(replicas("--replicas", 65).is_err());
        assert_eq!(replicas("--replicas", 64).ok(), Some(64));
    }
}
