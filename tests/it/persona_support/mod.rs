//! Shared by the persona tests: fixture loading and a small JSON-schema
//! checker for tool-call arguments (required parameters and types).

#![allow(dead_code)]

use std::path::PathBuf;

use codendum_twin::answer::{AnswerPart, PlannedAnswer};
use serde_json::Value;

/// Loads a JSON file from fixtures/conversations.
pub fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/conversations")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// The tool definitions of a fixture file, as a vector.
pub fn tools(name: &str) -> Vec<Value> {
    fixture(name).as_array().cloned().unwrap_or_default()
}

fn type_matches(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// Checks a value against a schema: type, enum, required properties, item
/// schemas and property schemas. Returns the first problem found.
pub fn check_schema(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(t)) if !type_matches(value, t) => {
            return Err(format!("{at}: expected {t}, got {value}"))
        }
        Some(Value::Array(ts))
            if !ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_matches(value, t)) =>
        {
            return Err(format!("{at}: expected one of {ts:?}, got {value}"))
        }
        _ => {}
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            return Err(format!("{at}: {value} not in {allowed:?}"));
        }
    }
    if let Some(obj) = value.as_object() {
        for req in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = req.as_str().unwrap_or("");
            if !obj.contains_key(name) {
                return Err(format!("{at}: missing required `{name}`"));
            }
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (k, v) in obj {
                match props.get(k) {
                    Some(p) => check_schema(p, v, &format!("{at}.{k}"))?,
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return Err(format!("{at}: unknown property `{k}`"))
                    }
                    None => {}
                }
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), value.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            check_schema(items, v, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// Checks every tool call of an answer: the name is offered, the arguments
/// parse as a JSON object and satisfy the tool's parameter schema.
pub fn check_calls(answer: &PlannedAnswer, tools: &[Value]) -> Result<(), String> {
    for part in &answer.parts {
        if let AnswerPart::ToolCall { name, arguments } = part {
            let def = tools
                .iter()
                .find(|t| t["function"]["name"] == name.as_str())
                .ok_or_else(|| format!("tool `{name}` was not offered"))?;
            let args: Value = serde_json::from_str(arguments)
                .map_err(|e| format!("{name}: arguments are not JSON: {e}: {arguments}"))?;
            if !args.is_object() {
                return Err(format!("{name}: arguments are not an object"));
            }
            check_schema(&def["function"]["parameters"], &args, name)?;
        }
    }
    Ok(())
}

/// The tool calls of an answer as (name, parsed arguments).
pub fn calls(answer: &PlannedAnswer) -> Vec<(String, Value)> {
    answer
        .parts
        .iter()
        .filter_map(|p| match p {
            AnswerPart::ToolCall { name, arguments } => Some((
                name.clone(),
                serde_json::from_str(arguments).unwrap_or(Value::Null),
            )),
            AnswerPart::Text(_) => None,
        })
        .collect()
}

/// Output size of an answer in characters (text plus tool names and arguments).
pub fn output_chars(answer: &PlannedAnswer) -> usize {
    answer
        .parts
        .iter()
        .map(|p| match p {
            AnswerPart::Text(t) => t.len(),
            AnswerPart::ToolCall { name, arguments } => name.len() + arguments.len(),
        })
        .sum()
}

/// A persona whose coding requests end at the step they are at (two calls,
/// the least a request past its first step makes), with final answers of
/// 150–300 tokens: what a conversation fixture looks like at its last step.
pub fn ending_persona(seed: u64) -> codendum_twin::persona::AgentPersona {
    use codendum_core::class::{Class, Distribution};
    let mut spread = Class::lab().agent.clone();
    spread.calls_per_request = Distribution::value("test", 2.0);
    spread.output_tokens.final_answer = Distribution::uniform("test", 150.0, 300.0);
    codendum_twin::persona::AgentPersona::with_spread(seed, std::sync::Arc::new(spread))
}
