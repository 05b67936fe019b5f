//! What a server derives from a request's tool definitions, kept for the
//! last few sets: an agent sends the same tools at every step, so deriving
//! them once per set (rendering them into the prompt, mapping them to the
//! persona's roles) saves doing it at every call.

use std::sync::Mutex;

use serde_json::Value;

/// Tool sets kept (an agent and its subagents each send one set).
pub const TOOL_SETS: usize = 8;

/// The values derived from the last [`TOOL_SETS`] sets of tool definitions,
/// most recent last.
#[derive(Debug)]
pub struct ToolSets<T> {
    sets: Mutex<Vec<(Vec<Value>, T)>>,
}

impl<T> Default for ToolSets<T> {
    fn default() -> Self {
        ToolSets {
            sets: Mutex::new(Vec::new()),
        }
    }
}

impl<T: Clone> ToolSets<T> {
    /// The value derived from `tools`: the one kept when this set was seen
    /// before, else `derive(tools)`, then kept.
    pub fn get_or_derive(&self, tools: &[Value], derive: impl FnOnce(&[Value]) -> T) -> T {
        let Ok(mut sets) = self.sets.lock() else {
            return derive(tools);
        };
        // Newest first: the set of the conversation that called last is the
        // likeliest, and each set tried before the match is compared for as
        // long as it agrees with `tools`.
        if let Some((_, value)) = sets.iter().rev().find(|(set, _)| set.as_slice() == tools) {
            return value.clone();
        }
        let value = derive(tools);
        if sets.len() >= TOOL_SETS {
            sets.remove(0);
        }
        sets.push((tools.to_vec(), value.clone()));
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_set_is_derived_once_and_the_oldest_is_forgotten() {
        let sets = ToolSets::default();
        let derived = std::cell::Cell::new(0);
        let get = |n: usize| {
            sets.get_or_derive(&[json!({ "n": n })], |t| {
                derived.set(derived.get() + 1);
                t[0]["n"].as_u64()
            })
        };
        assert_eq!(get(1), Some(1));
        assert_eq!(get(1), Some(1));
        assert_eq!(derived.get(), 1);
        for n in 2..=TOOL_SETS + 1 {
            get(n);
        }
        assert_eq!(derived.get(), TOOL_SETS + 1);
        get(1);
        assert_eq!(
            derived.get(),
            TOOL_SETS + 2,
            "set 1 was the oldest and was dropped"
        );
    }
}
