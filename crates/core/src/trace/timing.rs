//! How recorded calls depend on each other, and a trace of more or fewer
//! sessions than recorded.
//!
//! [`link_dependencies`]: a call of a root session (an agent session with
//! its subagents) waits for the latest call of the same root that had
//! ended when it arrived, plus the recorded gap: the agent's next step
//! waits for the previous answer and the client's time, a subagent's first
//! step for the parent's `task` call, the parent's next step for the
//! subagent's last answer. Titles run beside a step: they keep their
//! arrival time and no call waits for them. A root's first call keeps its
//! arrival time (the session starts at its recorded offset).
//!
//! [`resize_sessions`]: the first `n` root sessions, or each root repeated
//! (with its own blocks but the shared prefixes kept) until there are `n`.

use std::collections::{HashMap, HashSet};

use super::{Dependency, Trace, TraceCall};
use crate::results::classroom_records::CallKind;

/// Sets every call's [`Dependency`] as the module says (calls without a
/// session keep theirs). Calls must be in arrival order and have their
/// recorded duration.
pub fn link_dependencies(trace: &mut Trace) {
    let roots = trace.roots();
    // Per root: the calls seen so far that a later one may wait for.
    let mut ended: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, root) in roots.into_iter().enumerate() {
        let Some(root) = root else {
            continue;
        };
        let at = trace.calls[i].at_s;
        let title = trace.calls[i].kind == Some(CallKind::Title);
        let candidates = ended.entry(root).or_default();
        let dep = (!title)
            .then(|| {
                candidates
                    .iter()
                    .filter_map(|&j| trace.calls[j].end_s().map(|e| (j, e)))
                    .filter(|&(_, e)| e <= at + 1e-9)
                    .max_by(|a, b| a.1.total_cmp(&b.1))
            })
            .flatten();
        trace.calls[i].after = dep.map(|(j, end)| Dependency::after(j, (at - end).max(0.0)));
        if !title {
            candidates.push(i);
        }
    }
}

/// The trace with `n` root sessions: the first `n` by their first call, or
/// every root repeated in turn until there are `n` (copy `k` of a root
/// starts `k` × the mean gap between recorded root starts later; its
/// session ids get `-r<k>`; block ids used by one root only are renamed
/// per copy, ids several roots share are kept). Calls without a session
/// are kept as they are.
pub fn resize_sessions(trace: &Trace, n: usize) -> Trace {
    let roots = trace.roots();
    let mut order: Vec<String> = Vec::new();
    let mut first_at: HashMap<String, f64> = HashMap::new();
    for (c, r) in trace.calls.iter().zip(&roots) {
        if let Some(r) = r {
            if !first_at.contains_key(r) {
                first_at.insert(r.clone(), c.at_s);
                order.push(r.clone());
            }
        }
    }
    if order.is_empty() || n == order.len() {
        return trace.clone();
    }
    let keep: HashSet<&str> = order.iter().take(n).map(String::as_str).collect();
    // Which roots use each block id.
    let mut users: HashMap<u64, HashSet<&str>> = HashMap::new();
    for (c, r) in trace.calls.iter().zip(&roots) {
        if let Some(r) = r {
            for h in &c.hash_ids {
                users.entry(*h).or_default().insert(r.as_str());
            }
        }
    }
    let max_id = users.keys().copied().max().unwrap_or(0);
    let starts: Vec<f64> = order.iter().map(|r| first_at[r]).collect();
    let span = starts.last().copied().unwrap_or(0.0) - starts[0];
    let spacing = span / order.len() as f64;
    let copies = n.div_ceil(order.len());
    let mut out: Vec<TraceCall> = Vec::new();
    for k in 0..copies {
        // The roots this copy takes (the last copy may take fewer).
        let taken = (n - k * order.len()).min(order.len());
        let chosen: HashSet<&str> = order.iter().take(taken).map(String::as_str).collect();
        let base = out.len();
        let mut index_of: HashMap<usize, usize> = HashMap::new();
        for (i, (c, r)) in trace.calls.iter().zip(&roots).enumerate() {
            let Some(r) = r else {
                if k == 0 {
                    index_of.insert(i, base + index_of.len());
                    out.push(c.clone());
                }
                continue;
            };
            if !(chosen.contains(r.as_str()) && (k > 0 || keep.contains(r.as_str()))) {
                continue;
            }
            let mut c = c.clone();
            if k > 0 {
                let tag = |s: &String| format!("{s}-r{k}");
                c.session = c.session.as_ref().map(tag);
                c.parent = c.parent.as_ref().map(tag);
                c.at_s += k as f64 * spacing;
                let offset = (max_id + 1) * k as u64;
                for h in &mut c.hash_ids {
                    if users.get(h).is_some_and(|u| u.len() == 1) {
                        *h += offset;
                    }
                }
            }
            index_of.insert(i, base + index_of.len());
            out.push(c);
        }
        // Renumber this copy's dependencies; a dependency on a call left
        // out is dropped (the call keeps its arrival time).
        for c in &mut out[base..] {
            c.after = c
                .after
                .and_then(|d| index_of.get(&d.call).map(|&j| Dependency { call: j, ..d }));
        }
    }
    Trace {
        calls: super::mooncake::in_arrival_order(out),
        ..trace.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(session: &str, parent: Option<&str>, kind: CallKind, at: f64, dur: f64) -> TraceCall {
        let mut c = TraceCall::open(at, 32, 8, vec![1, 2]);
        c.session = Some(session.into());
        c.parent = parent.map(String::from);
        c.kind = Some(kind);
        c.duration_s = Some(dur);
        c
    }

    #[test]
    fn a_step_waits_for_the_latest_answer_of_its_root() {
        let mut t = Trace::new(
            16,
            vec![
                call("m", None, CallKind::Agent, 0.0, 2.0),
                call("m", None, CallKind::Title, 0.1, 5.0),
                call("s", Some("m"), CallKind::Subagent, 2.5, 1.0),
                call("m", None, CallKind::Agent, 4.0, 1.0),
                call("o", None, CallKind::Agent, 4.5, 1.0),
            ],
        );
        link_dependencies(&mut t);
        let deps: Vec<Option<(usize, f64)>> = t
            .calls
            .iter()
            .map(|c| c.after.map(|d| (d.call, (d.gap_s * 10.0).round() / 10.0)))
            .collect();
        assert_eq!(
            deps,
            vec![None, None, Some((0, 0.5)), Some((2, 0.5)), None],
            "the title neither waits nor is waited for"
        );
    }

    #[test]
    fn sessions_are_cut_or_repeated_with_their_own_blocks() {
        let mut a = call("a", None, CallKind::Agent, 0.0, 1.0);
        a.hash_ids = vec![1, 2];
        let mut a2 = call("a", None, CallKind::Agent, 2.0, 1.0);
        a2.hash_ids = vec![1, 2, 3];
        let mut b = call("b", None, CallKind::Agent, 10.0, 1.0);
        b.hash_ids = vec![1, 4];
        let mut t = Trace::new(16, vec![a, a2, b]);
        link_dependencies(&mut t);
        let one = resize_sessions(&t, 1);
        assert_eq!(one.calls.len(), 2);
        assert_eq!(one.calls[1].after.map(|d| d.call), Some(0));
        let five = resize_sessions(&t, 5);
        assert_eq!(five.sessions().len(), 5);
        assert_eq!(five.calls.len(), 8);
        let copy: Vec<&TraceCall> = five
            .calls
            .iter()
            .filter(|c| c.session.as_deref() == Some("a-r1"))
            .collect();
        assert_eq!(copy.len(), 2);
        assert!((copy[0].at_s - 5.0).abs() < 1e-9, "{}", copy[0].at_s);
        assert_eq!(copy[0].hash_ids[0], 1, "the shared block is kept");
        assert_ne!(copy[0].hash_ids[1], 2, "its own blocks are its own");
        let dep = copy[1].after.expect("still waits");
        assert_eq!(five.calls[dep.call].session.as_deref(), Some("a-r1"));
        assert_eq!(resize_sessions(&t, 2), t);
    }
}
