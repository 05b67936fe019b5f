//! `[targets.capacity]`: the class a server must carry at a service tier,
//! judged on the answer of a capacity search (`codendum capacity`), not on
//! one class. The capacity suite turns each into a trial
//! `<profile>::capacity-<tier>::students`.
//!
//! ```toml
//! [targets.capacity]
//! students = 40        # carried at the profile's [targets.classroom]
//!
//! [targets.capacity.interactive]
//! students = 24        # carried at the tier's own targets:
//! ttft_p95_s = 10      # any [targets.classroom] key
//! output_speed_p50_tok_per_s = 10
//! ```
//!
//! A tier table without a `[targets.classroom]` key is judged by the mode's
//! `[targets.classroom]`; `students` directly under `[targets.capacity]` is
//! the tier `classroom`, judged by that table too. The tier's keys are read
//! by [`parse_classroom_targets`], the one definition every class is judged
//! by; the class size is judged by [`judge_students`].

use super::{check_value_kinds, parse_classroom_targets, ClassroomTargets, KeyKind};
use crate::bound::Outcome;
use crate::error::ConfigError;

/// The key naming the class size.
pub const STUDENTS_KEY: &str = "students";

/// The tier `students` directly under `[targets.capacity]` names.
pub const CLASSROOM_TIER: &str = "classroom";

/// One class size a server must carry at a tier.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityTarget {
    /// The tier's name: `classroom` or the table's name (`interactive`).
    pub tier: String,
    /// The least class the server must carry, students (at least 1).
    pub students: u32,
    /// The tier's own targets; `None`: the mode's `[targets.classroom]`.
    pub targets: Option<ClassroomTargets>,
}

impl CapacityTarget {
    /// The workload segment of its trial's name: `capacity-interactive`.
    pub fn group_name(&self) -> String {
        format!("capacity-{}", self.tier)
    }
}

/// Reads a `[targets.capacity]` table at `path` (`targets.capacity`,
/// `targets.quick.capacity`). Errors name the table and the key: a class
/// size that is not a whole number of at least one student, a tier without
/// `students`, an unknown key.
pub fn parse_capacity_targets(
    path: &str,
    value: &toml::Value,
) -> Result<Vec<CapacityTarget>, ConfigError> {
    let table = value
        .as_table()
        .ok_or_else(|| ConfigError::invalid(path, "must be a table"))?;
    let mut out = Vec::new();
    if let Some(v) = table.get(STUDENTS_KEY) {
        out.push(CapacityTarget {
            tier: CLASSROOM_TIER.to_string(),
            students: students(path, v)?,
            targets: None,
        });
    }
    for (key, v) in table {
        if key == STUDENTS_KEY {
            continue;
        }
        let Some(tier) = v.as_table() else {
            return Err(ConfigError::invalid(
                path,
                format!(
                    "unknown key `{key}` (known: {STUDENTS_KEY}, or a tier's table [{path}.NAME])"
                ),
            ));
        };
        let at = format!("{path}.{key}");
        if !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ConfigError::invalid(
                &at,
                format!("{key:?} is not a tier name (letters, digits, - and _)"),
            ));
        }
        if key == CLASSROOM_TIER && !out.is_empty() {
            return Err(ConfigError::invalid(
                &at,
                format!("tier {CLASSROOM_TIER} is given twice ({path}.{STUDENTS_KEY} names it)"),
            ));
        }
        let n = tier
            .get(STUDENTS_KEY)
            .ok_or_else(|| ConfigError::invalid(&at, "missing key `students`"))
            .and_then(|s| students(&at, s))?;
        let mut rest = tier.clone();
        rest.remove(STUDENTS_KEY);
        let targets = if rest.is_empty() {
            None
        } else {
            Some(parse_classroom_targets(&at, &toml::Value::Table(rest))?)
        };
        out.push(CapacityTarget {
            tier: key.clone(),
            students: n,
            targets,
        });
    }
    if out.is_empty() {
        return Err(ConfigError::invalid(
            path,
            "names no class to carry (students = 40, or [targets.capacity.NAME] with students)",
        ));
    }
    Ok(out)
}

/// `students = N`: a whole number of at least one student.
fn students(path: &str, value: &toml::Value) -> Result<u32, ConfigError> {
    check_value_kinds(
        path,
        &toml::Value::Table(toml::Table::from_iter([(
            STUDENTS_KEY.to_string(),
            value.clone(),
        )])),
        &[(STUDENTS_KEY, KeyKind::Count)],
    )?;
    value
        .as_integer()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n >= 1)
        .ok_or_else(|| {
            ConfigError::invalid(
                path,
                format!("students = {value} is not at least 1 student"),
            )
        })
}

/// Whether a search's answer carries `students`: the answer is the range
/// `carries..=upper` (the largest class met, and the largest not known to
/// miss). Met when `carries` reaches `students`, missed when `upper` is
/// below it, indeterminate when the range straddles it (the search could
/// not tell whether the server carries that class).
pub fn judge_students(carries: u32, upper: u32, students: u32) -> Outcome {
    if carries >= students {
        Outcome::Met
    } else if upper.max(carries) < students {
        Outcome::Missed
    } else {
        Outcome::Indeterminate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<CapacityTarget>, String> {
        let v: toml::Value = toml::from_str(text).expect("toml");
        parse_capacity_targets("targets.capacity", &v).map_err(|e| e.to_string())
    }

    #[test]
    fn a_class_size_and_tiers_with_their_own_targets() {
        let t = parse(
            "students = 40\n[interactive]\nstudents = 24\nttft_p95_s = 10\n[relaxed]\nstudents = 30\n",
        )
        .expect("parses");
        assert_eq!(t.len(), 3);
        assert_eq!((t[0].tier.as_str(), t[0].students), ("classroom", 40));
        assert_eq!(t[0].targets, None);
        assert_eq!((t[1].tier.as_str(), t[1].students), ("interactive", 24));
        assert_eq!(t[1].targets.as_ref().and_then(|c| c.ttft_p95_s), Some(10.0));
        assert_eq!(t[1].group_name(), "capacity-interactive");
        assert_eq!(
            (t[2].tier.as_str(), t[2].targets.clone()),
            ("relaxed", None)
        );
    }

    #[test]
    fn bad_values_name_the_key_on_one_line() {
        for (text, culprit) in [
            ("students = 0", "not at least 1 student"),
            ("students = 2.5", "is not a whole number"),
            ("students = \"forty\"", "is not a whole number"),
            ("students = -3", "is not a whole number"),
            (
                "[fast]\nttft_p95_s = 10",
                "targets.capacity.fast: missing key `students`",
            ),
            ("[fast]\nstudents = 4\nttft = 10", "targets.capacity.fast"),
            ("[fast]\nstudents = 4\nttft_p95_s = -1", "ttft_p95_s = -1"),
            ("seats = 4", "unknown key `seats`"),
            ("", "names no class"),
            ("students = 4\n[classroom]\nstudents = 5", "given twice"),
        ] {
            let e = parse(text).expect_err(text);
            assert!(e.contains(culprit) && !e.contains('\n'), "{text}: {e}");
        }
    }

    #[test]
    fn the_answer_range_decides() {
        assert_eq!(judge_students(40, 40, 40), Outcome::Met);
        assert_eq!(judge_students(42, 45, 40), Outcome::Met);
        assert_eq!(judge_students(38, 39, 40), Outcome::Missed);
        assert_eq!(judge_students(38, 41, 40), Outcome::Indeterminate);
        assert_eq!(judge_students(0, 0, 1), Outcome::Missed);
    }
}
