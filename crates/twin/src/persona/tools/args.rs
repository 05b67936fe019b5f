//! Tool-call arguments that satisfy a tool's JSON schema: values coerced
//! to the declared type or enum, required parameters filled with valid
//! defaults, todo items shaped like the todo tool's item schema.

use serde_json::{Map, Value};

use super::has_any;

pub(super) fn required_names(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON type a schema asks for (first non-null of a type list; `object`
/// when it has properties; `string` when it says nothing).
pub(super) fn type_of(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "string",
    }
}

pub(super) fn coerce(value: Value, schema: &Value) -> Value {
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(&value) {
            return allowed.first().cloned().unwrap_or(value);
        }
    }
    match (type_of(schema), &value) {
        ("array", Value::Array(_)) | ("string", Value::String(_)) => value,
        ("array", _) => Value::Array(vec![value]),
        ("string", other) => Value::String(other.to_string()),
        ("integer", Value::String(s)) => s.parse::<i64>().map(Value::from).unwrap_or(value),
        _ => value,
    }
}

pub(super) fn fill_required(schema: &Value, args: &mut Map<String, Value>) {
    for name in required_names(schema) {
        if !args.contains_key(&name) {
            let prop = &schema["properties"][name.as_str()];
            args.insert(name.clone(), default_value(prop, &name));
        }
    }
}

/// A valid value for a schema, chosen by the parameter name when it helps.
fn default_value(schema: &Value, name: &str) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    let lname = name.to_ascii_lowercase();
    match type_of(schema) {
        "integer" => Value::from(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        "number" => Value::from(schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0)),
        "boolean" => Value::Bool(false),
        "null" => Value::Null,
        "array" => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema.get("items").unwrap_or(&Value::Null);
            Value::Array((0..min).map(|_| default_value(item, name)).collect())
        }
        "object" => {
            let mut obj = Map::new();
            fill_required(schema, &mut obj);
            Value::Object(obj)
        }
        _ if lname.contains("desc") || lname.contains("title") => {
            Value::from("Inspect the project")
        }
        _ if lname.contains("dir") || lname.contains("path") => Value::from("."),
        _ => Value::from("default"),
    }
}

/// Turns a list of todo texts into items of the todo tool's item schema.
pub(super) fn todo_items(value: &Value, schema: &Value) -> Value {
    let texts: Vec<String> = match value {
        Value::Array(a) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect(),
        other => vec![other.as_str().unwrap_or("Work on the task").to_string()],
    };
    let item = schema.get("items").unwrap_or(&Value::Null);
    if type_of(item) != "object" {
        return Value::Array(texts.into_iter().map(|t| coerce(t.into(), item)).collect());
    }
    let props = item.get("properties").and_then(Value::as_object);
    let items = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut obj = Map::new();
            for (name, prop) in props.into_iter().flatten() {
                let l = name.to_ascii_lowercase();
                let v = if has_any(&l, &["content", "text", "title", "desc", "task"]) {
                    Value::from(text.as_str())
                } else if l.contains("status") {
                    pick_enum(prop, if i == 0 { "in_progress" } else { "pending" })
                } else if l.contains("priority") {
                    pick_enum(prop, if i == 0 { "high" } else { "medium" })
                } else if l == "id" {
                    coerce(Value::from((i + 1).to_string()), prop)
                } else {
                    continue;
                };
                obj.insert(name.clone(), v);
            }
            fill_required(item, &mut obj);
            Value::Object(obj)
        })
        .collect();
    Value::Array(items)
}

fn pick_enum(schema: &Value, wanted: &str) -> Value {
    match schema.get("enum").and_then(Value::as_array) {
        Some(e) if !e.iter().any(|v| v == wanted) => e.first().cloned().unwrap_or(Value::Null),
        _ => Value::from(wanted),
    }
}
