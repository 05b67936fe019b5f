//! The words every plan sentence shares: a check with its interval, the
//! missed checks of a cell, "n students" and the verb agreeing with it
//! (plain functions).

use super::limit::floors;
use super::verdicts::{Check, JudgedCell};
use codendum_core::bound::Outcome;
use codendum_report::format::{fixed, opt_fixed};

/// A check as people read it: `ttft_p95_s 80.5 [72.4–90.1] (target ≤
/// 75)`, the figure's 95 % interval in brackets when it has one, and
/// `indeterminate` said when that interval straddles the target.
pub fn check_text(c: &Check) -> String {
    let interval = match c.interval.filter(|_| c.measured.is_some()) {
        Some(i) => {
            let b = |v: Option<f64>, open: &str| v.map_or(open.to_string(), |v| fixed(v, 1));
            format!(" [{}–{}]", b(i.lo, "…"), b(i.hi, "…"))
        }
        None => String::new(),
    };
    let undecided = if c.outcome == Outcome::Indeterminate {
        ", indeterminate"
    } else {
        ""
    };
    format!(
        "{} {}{interval} (target {} {}{undecided})",
        c.key,
        opt_fixed(c.measured, 1),
        c.bound.sign(),
        fixed(c.target, 1)
    )
}

/// The missed checks of a cell, joined: `ttft_p95_s 80.5 (target ≤ 75), …`.
pub fn missed_text(cell: &JudgedCell) -> String {
    let missed: Vec<String> = cell
        .checks
        .iter()
        .filter(|c| !c.met)
        .map(check_text)
        .collect();
    missed.join(", ")
}

/// `n students`, `1 student`.
pub fn students(n: u32) -> String {
    if n == 1 {
        "1 student".to_string()
    } else {
        format!("{n} students")
    }
}

/// `n students` and the verb agreeing with it: `students_do(1, "meets",
/// "meet")` is `1 student meets`, `students_do(40, "meets", "meet")` is
/// `40 students meet`.
pub fn students_do(n: u32, one: &str, several: &str) -> String {
    format!("{} {}", students(n), agree(n, one, several))
}

/// The verb for `n` students: `one` for 1, `several` otherwise.
pub fn agree<'a>(n: u32, one: &'a str, several: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        several
    }
}

/// The floors (`Min` targets) `checks` missed, as `key value (target ≥
/// floor)`, comma-separated.
pub fn missed_floors(checks: &[Check]) -> String {
    floors(checks)
        .filter(|k| !k.met)
        .map(check_text)
        .collect::<Vec<_>>()
        .join(", ")
}
