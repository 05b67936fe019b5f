//! Shared helpers of the report tests: fixtures and a tiny markup checker.
#![allow(dead_code)]

use std::path::PathBuf;

use codendum_report::{BenchReport, ClassroomReport};

/// Path of a file under fixtures/report/.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/report")
        .join(name)
}

/// A benchmark report fixture.
pub fn bench(name: &str) -> BenchReport {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture readable");
    serde_json::from_str(&text).expect("fixture is a BenchReport")
}

/// A classroom report fixture.
pub fn classroom(name: &str) -> ClassroomReport {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture readable");
    serde_json::from_str(&text).expect("fixture is a ClassroomReport")
}

/// HTML elements that never have a closing tag.
const VOID: [&str; 4] = ["meta", "br", "hr", "img"];

/// Checks that every tag is closed in order, that quotes in tags are
/// balanced, and that no raw `<` or `&` without entity appears in text.
/// Returns the first problem found.
pub fn check_markup(text: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(start) = rest.find(['<', '&']) {
        let at = offset + start;
        let tail = &rest[start..];
        if tail.starts_with('&') {
            let end = tail.find(';').ok_or(format!("bare & at {at}"))?;
            let name = &tail[1..end];
            let ok = !name.is_empty()
                && name.len() <= 8
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '#');
            if !ok {
                return Err(format!("bad entity at {at}: {}", &tail[..end.min(20)]));
            }
            rest = &tail[end + 1..];
            offset = at + end + 1;
            continue;
        }
        let end = tail.find('>').ok_or(format!("unclosed tag at {at}"))?;
        let tag = &tail[1..end];
        if tag.matches('"').count() % 2 != 0 {
            return Err(format!("unbalanced quotes in tag at {at}: {tag}"));
        }
        if tag.contains('<') {
            return Err(format!("'<' inside tag at {at}"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> at {at} closes {other:?}")),
            }
        } else if !tag.starts_with('!') && !tag.ends_with('/') {
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if name.is_empty() {
                return Err(format!("raw '<' in text at {at}"));
            }
            if !VOID.contains(&name.as_str()) {
                stack.push(name);
            }
        }
        rest = &tail[end + 1..];
        offset = at + end + 1;
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed elements: {stack:?}"))
    }
}

/// The values of every `src=` and `href=` attribute.
pub fn references(text: &str) -> Vec<String> {
    let mut refs = Vec::new();
    for attr in ["src=\"", "href=\"", "src='", "href='"] {
        let quote = attr.chars().last().unwrap_or('"');
        let mut rest = text;
        while let Some(i) = rest.find(attr) {
            let value = &rest[i + attr.len()..];
            let end = value.find(quote).unwrap_or(value.len());
            refs.push(value[..end].to_string());
            rest = &value[end..];
        }
    }
    refs
}

/// Fails when the output shows a non-finite number.
pub fn assert_no_nan(text: &str) {
    for bad in ["NaN", "inf\"", "inf ", "-inf"] {
        assert!(!text.contains(bad), "output contains {bad:?}");
    }
}

/// Snapshot settings: snapshots/report/ at the crate root.
pub fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots/report"));
    s.set_prepend_module_to_snapshot(false);
    s
}

#[test]
fn checker_rejects_broken_markup() {
    assert!(check_markup("<svg><g></g></svg>").is_ok());
    assert!(check_markup("<a b=\"1\"/><p>x &amp; y</p>").is_ok());
    assert!(check_markup("<svg><g></svg>").is_err());
    assert!(check_markup("<p>a < b</p>").is_err());
    assert!(check_markup("<p>a & b</p>").is_err());
    assert!(check_markup("<a b=\"1></a>").is_err());
    assert_eq!(references("<a href=\"x\"><img src='y'>"), vec!["x", "y"]);
}
