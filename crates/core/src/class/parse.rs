//! Reading a class file: TOML walked table by table, so that every error
//! names the file and the field (`agent.output_tokens.title.quantiles[2]`)
//! and an unknown key is refused instead of ignored.

use std::collections::BTreeSet;
use std::path::Path;

use toml::{Table, Value};

use super::dist::{Distribution, Shape};
use super::sessions::RequestPrompt;
use super::{
    AgentSpread, ByCall, Class, OutputTokens, Person, SessionShapes, ToolTimes,
    CLASS_SCHEMA_VERSION,
};
use crate::error::ConfigError;

/// One table being read: its path for messages and the keys taken so far.
struct Fields<'a> {
    table: &'a Table,
    path: String,
    taken: BTreeSet<&'static str>,
}

type Res<T> = Result<T, String>;

impl<'a> Fields<'a> {
    fn new(table: &'a Table, path: &str) -> Self {
        Fields {
            table,
            path: path.to_string(),
            taken: BTreeSet::new(),
        }
    }

    fn name(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.taken.insert(key);
        self.table.get(key)
    }

    fn required(&mut self, key: &'static str) -> Res<&'a Value> {
        let name = self.name(key);
        self.get(key).ok_or_else(|| format!("{name} is missing"))
    }

    fn text(&mut self, key: &'static str) -> Res<Option<String>> {
        let name = self.name(key);
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{name} must be a string")),
        }
    }

    fn number(&mut self, key: &'static str) -> Res<f64> {
        let name = self.name(key);
        number(self.required(key)?).ok_or_else(|| format!("{name} must be a number"))
    }

    /// An optional boolean, `false` when absent.
    fn flag(&mut self, key: &'static str) -> Res<bool> {
        let name = self.name(key);
        match self.get(key) {
            None => Ok(false),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(_) => Err(format!("{name} must be true or false")),
        }
    }

    fn fraction(&mut self, key: &'static str) -> Res<f64> {
        let name = self.name(key);
        let v = self.number(key)?;
        if !(0.0..=1.0).contains(&v) {
            return Err(format!("{name} = {v} is not a fraction between 0 and 1"));
        }
        Ok(v)
    }

    fn table(&mut self, key: &'static str) -> Res<Fields<'a>> {
        let name = self.name(key);
        match self.required(key)? {
            Value::Table(t) => Ok(Fields::new(t, &name)),
            _ => Err(format!("{name} must be a table")),
        }
    }

    /// A distribution whose values lie in `min..=max`.
    fn dist(&mut self, key: &'static str, min: f64, max: f64) -> Res<Distribution> {
        let name = self.name(key);
        match self.required(key)? {
            Value::Table(t) => distribution(t, &name, min, max),
            _ => Err(format!(
                "{name} must be a table with source, count and one of value, quantiles or samples"
            )),
        }
    }

    fn optional_dist(
        &mut self,
        key: &'static str,
        min: f64,
        max: f64,
    ) -> Res<Option<Distribution>> {
        if self.table.contains_key(key) {
            self.dist(key, min, max).map(Some)
        } else {
            self.taken.insert(key);
            Ok(None)
        }
    }

    /// Refuses keys that were never asked for.
    fn done(self) -> Res<()> {
        match self.table.keys().find(|k| !self.taken.contains(k.as_str())) {
            Some(k) => {
                let known: Vec<&str> = self.taken.iter().copied().collect();
                Err(format!(
                    "unknown key {} (known here: {})",
                    self.name(k),
                    known.join(", ")
                ))
            }
            None => Ok(()),
        }
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn distribution(t: &Table, name: &str, min: f64, max: f64) -> Res<Distribution> {
    let mut f = Fields::new(t, name);
    let source = f.text("source")?.unwrap_or_default();
    let count = match f.get("count") {
        None => 0,
        Some(Value::Integer(n)) if *n >= 0 => *n as u64,
        Some(_) => return Err(format!("{name}.count must be a whole number ≥ 0")),
    };
    let forms = ["value", "quantiles", "samples"];
    let given: Vec<&str> = forms
        .iter()
        .copied()
        .filter(|k| t.contains_key(*k))
        .collect();
    if given.len() != 1 {
        return Err(format!(
            "{name} needs exactly one of value, quantiles or samples (has {})",
            if given.is_empty() {
                "none".to_string()
            } else {
                given.join(" and ")
            }
        ));
    }
    let shape = match given[0] {
        "value" => Shape::Value(f.number("value")?),
        "quantiles" => {
            let Some(Value::Array(rows)) = f.get("quantiles") else {
                return Err(format!(
                    "{name}.quantiles must be an array of [p, value] pairs"
                ));
            };
            let mut points = Vec::with_capacity(rows.len());
            for (i, row) in rows.iter().enumerate() {
                let pair = match row {
                    Value::Array(a) if a.len() == 2 => number(&a[0]).zip(number(&a[1])),
                    _ => None,
                };
                let Some(p) = pair else {
                    return Err(format!(
                        "{name}.quantiles[{i}] must be a [p, value] pair of numbers"
                    ));
                };
                points.push(p);
            }
            Shape::Quantiles(points)
        }
        _ => {
            let Some(Value::Array(items)) = f.get("samples") else {
                return Err(format!("{name}.samples must be an array of numbers"));
            };
            let mut samples = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                samples.push(
                    number(item).ok_or_else(|| format!("{name}.samples[{i}] must be a number"))?,
                );
            }
            samples.sort_by(f64::total_cmp);
            Shape::Samples(samples)
        }
    };
    f.done()?;
    let d = Distribution {
        source,
        count,
        shape,
    };
    d.check(min, max).map_err(|e| format!("{name}: {e}"))?;
    Ok(d)
}

const ANY: f64 = f64::INFINITY;

fn person(mut f: Fields<'_>) -> Res<Person> {
    let p = Person {
        pause_s: f.dist("pause_s", 0.0, ANY)?,
        follow_ups: f.dist("follow_ups", 0.0, 1000.0)?,
        session_s: f.optional_dist("session_s", 0.0, ANY)?,
        next_session: f.flag("next_session")?,
    };
    f.done()?;
    Ok(p)
}

/// `agent.prompt_tokens_by_call`: an array of distribution tables, each
/// with its `from_call`, rising strictly from 0.
fn by_call(f: &mut Fields<'_>, version: u32) -> Res<Vec<ByCall>> {
    let name = f.name("prompt_tokens_by_call");
    let Some(v) = f.get("prompt_tokens_by_call") else {
        return Ok(Vec::new());
    };
    if version < 2 {
        return Err(format!("{name} needs schema_version 2"));
    }
    let Value::Array(rows) = v else {
        return Err(format!("{name} must be an array of tables ([[{name}]])"));
    };
    let mut out: Vec<ByCall> = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let at = format!("{name}[{i}]");
        let Value::Table(t) = row else {
            return Err(format!("{at} must be a table"));
        };
        let from_call = match t.get("from_call") {
            Some(Value::Integer(n)) if (0..=i64::from(u32::MAX)).contains(n) => *n as u32,
            Some(_) => return Err(format!("{at}.from_call must be a whole number ≥ 0")),
            None => return Err(format!("{at}.from_call is missing")),
        };
        let expected_first = i > 0 || from_call == 0;
        if !expected_first {
            return Err(format!(
                "{at}.from_call must be 0 (the session's first call)"
            ));
        }
        if out.last().is_some_and(|b| b.from_call >= from_call) {
            return Err(format!("{at}.from_call must rise above the one before it"));
        }
        let mut rest = t.clone();
        rest.remove("from_call");
        out.push(ByCall {
            from_call,
            tokens: distribution(&rest, &at, 1.0, ANY)?,
        });
    }
    if out.is_empty() {
        return Err(format!("{name} is empty"));
    }
    Ok(out)
}

/// `agent.sessions`: a table with its `source` and `calls`, an array of
/// rows (one per session) of whole numbers ≥ 1 (calls per request).
fn sessions(f: &mut Fields<'_>, version: u32) -> Res<Option<SessionShapes>> {
    let name = f.name("sessions");
    let Some(v) = f.get("sessions") else {
        return Ok(None);
    };
    if version < 3 {
        return Err(format!("{name} needs schema_version 3"));
    }
    let Value::Table(t) = v else {
        return Err(format!("{name} must be a table ([{name}])"));
    };
    let known = |k: &str| {
        matches!(
            k,
            "source" | "calls" | "first_prompt_tokens" | "last_prompt_tokens"
        )
    };
    if let Some(k) = t.keys().find(|k| !known(k)) {
        return Err(format!("{name}.{k} is not a field of a class file"));
    }
    let source = match t.get("source") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(format!("{name}.source must be text")),
        None => String::new(),
    };
    let Some(Value::Array(rows)) = t.get("calls") else {
        return Err(format!(
            "{name}.calls must be an array of rows ([[12, 4], [3]])"
        ));
    };
    let mut calls = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let Value::Array(row) = row else {
            return Err(format!("{name}.calls[{i}] must be an array of counts"));
        };
        let mut r = Vec::with_capacity(row.len());
        for (j, c) in row.iter().enumerate() {
            match c {
                Value::Integer(n) if (1..=i64::from(u32::MAX)).contains(n) => r.push(*n as u32),
                _ => return Err(format!("{name}.calls[{i}][{j}] must be a whole number ≥ 1")),
            }
        }
        calls.push(r);
    }
    let first = sizes(t, &name, "first_prompt_tokens")?;
    let last = sizes(t, &name, "last_prompt_tokens")?;
    let prompt_tokens = match (first, last) {
        (None, None) => None,
        (Some(first), Some(last)) => {
            if first.len() != last.len() || first.iter().zip(&last).any(|(f, l)| f.len() != l.len())
            {
                return Err(format!(
                    "{name}.first_prompt_tokens and {name}.last_prompt_tokens must have the same rows and lengths"
                ));
            }
            Some(
                first
                    .into_iter()
                    .zip(last)
                    .map(|(f, l)| {
                        f.into_iter()
                            .zip(l)
                            .map(|(first, last)| RequestPrompt { first, last })
                            .collect()
                    })
                    .collect(),
            )
        }
        (Some(_), None) => return Err(format!("{name}.last_prompt_tokens is missing")),
        (None, Some(_)) => return Err(format!("{name}.first_prompt_tokens is missing")),
    };
    let shapes = SessionShapes {
        source,
        calls,
        prompt_tokens,
    };
    shapes.check().map_err(|e| format!("{name}: {e}"))?;
    Ok(Some(shapes))
}

/// One of `agent.sessions`' prompt sizes (`first_prompt_tokens`,
/// `last_prompt_tokens`): rows of whole numbers ≥ 1, `None` when absent.
fn sizes(t: &Table, name: &str, key: &str) -> Res<Option<Vec<Vec<u64>>>> {
    let Some(v) = t.get(key) else {
        return Ok(None);
    };
    let Value::Array(rows) = v else {
        return Err(format!(
            "{name}.{key} must be an array of rows ([[9000, 31000], [8000]])"
        ));
    };
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let Value::Array(row) = row else {
            return Err(format!(
                "{name}.{key}[{i}] must be an array of token counts"
            ));
        };
        let mut r = Vec::with_capacity(row.len());
        for (j, c) in row.iter().enumerate() {
            match c {
                Value::Integer(n) if *n >= 1 => r.push(*n as u64),
                _ => return Err(format!("{name}.{key}[{i}][{j}] must be a whole number ≥ 1")),
            }
        }
        out.push(r);
    }
    Ok(Some(out))
}

fn agent(mut f: Fields<'_>, version: u32) -> Res<AgentSpread> {
    let calls_per_request = f.dist("calls_per_request", 1.0, 10_000.0)?;
    let subagent_share = f.fraction("subagent_share")?;
    let subagent_calls = f.dist("subagent_calls", 1.0, 10_000.0)?;
    let first_test_fails = f.fraction("first_test_fails")?;
    let appended_tokens = f.optional_dist("appended_tokens", 0.0, ANY)?;
    let prompt_tokens = f.optional_dist("prompt_tokens", 1.0, ANY)?;
    let compact_at_tokens = f.optional_dist("compact_at_tokens", 1.0, ANY)?;
    let prompt_tokens_by_call = by_call(&mut f, version)?;
    let sessions = sessions(&mut f, version)?;
    let shared_prompt_tokens = f.optional_dist("shared_prompt_tokens", 0.0, ANY)?;
    if version < 2 && shared_prompt_tokens.is_some() {
        return Err("agent.shared_prompt_tokens needs schema_version 2".into());
    }
    let mut o = f.table("output_tokens")?;
    let output_tokens = OutputTokens {
        title: o.dist("title", 1.0, ANY)?,
        agent_step: o.dist("agent_step", 1.0, ANY)?,
        subagent_step: o.dist("subagent_step", 1.0, ANY)?,
        final_answer: o.dist("final_answer", 1.0, ANY)?,
        compaction: o.dist("compaction", 1.0, ANY)?,
    };
    o.done()?;
    let mut t = f.table("tool_s")?;
    let tool_s = ToolTimes {
        file_tool: t.dist("file_tool", 0.0, ANY)?,
        after_edit: t.dist("after_edit", 0.0, ANY)?,
        build_test: t.dist("build_test", 0.0, ANY)?,
        bash: t.dist("bash", 0.0, ANY)?,
        other_tool: t.dist("other_tool", 0.0, ANY)?,
    };
    t.done()?;
    f.done()?;
    Ok(AgentSpread {
        calls_per_request,
        subagent_share,
        subagent_calls,
        output_tokens,
        tool_s,
        first_test_fails,
        appended_tokens,
        prompt_tokens,
        compact_at_tokens,
        prompt_tokens_by_call,
        shared_prompt_tokens,
        sessions,
    })
}

fn class(table: &Table) -> Res<Class> {
    let mut f = Fields::new(table, "");
    let version = match f.get("schema_version") {
        Some(Value::Integer(v)) if (1..=i64::from(CLASS_SCHEMA_VERSION)).contains(v) => *v as u32,
        Some(Value::Integer(v)) => {
            return Err(format!(
                "schema_version {v} is not a version this build reads (1 to {CLASS_SCHEMA_VERSION})"
            ))
        }
        Some(_) => return Err("schema_version must be a whole number".into()),
        None => return Err("schema_version is missing".into()),
    };
    let name = f.text("name")?.ok_or("name is missing")?;
    if name.trim().is_empty() {
        return Err("name is empty".into());
    }
    let description = f.text("description")?.unwrap_or_default();
    let person = person(f.table("person")?)?;
    let agent = agent(f.table("agent")?, version)?;
    f.done()?;
    Ok(Class {
        name,
        description,
        person,
        agent,
    })
}

/// Parses a class file's text; errors are one line naming `path` and the
/// field.
pub(super) fn parse(text: &str, path: &Path) -> Result<Class, ConfigError> {
    let bad = |reason: String| ConfigError::BadFile {
        what: "class file",
        path: path.to_path_buf(),
        reason,
    };
    let table: Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
        bad(format!(
            "not valid TOML{at}: {}",
            e.message().replace('\n', " ")
        ))
    })?;
    class(&table).map_err(bad)
}
