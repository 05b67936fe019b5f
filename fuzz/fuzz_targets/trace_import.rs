//! The readers of recorded sessions on arbitrary bytes: Mooncake-style
//! lines, TraceLab rows and a Claude Code conversation never panic, and
//! what they read goes through the model's own walks (conversations, the
//! theoretical hit rate, roots and subagents).
#![no_main]

use codendum_core::trace::{claude_code, mooncake, tracelab, Trace};
use libfuzzer_sys::fuzz_target;

fn walk(t: &Trace) {
    let _ = t.conversations();
    let _ = t.theoretical_hit_rate();
    let _ = t.roots();
    let _ = t.subagent_offsets();
}

fuzz_target!(|data: &[u8]| {
    for block in [1, 16, 64] {
        if let Ok(t) = mooncake::read_trace(data, block) {
            walk(&t);
        }
        if let Ok(t) = tracelab::read_rows(data, block, Some(8)) {
            walk(&t);
        }
    }
    if let Ok((c, _)) = claude_code::read_conversation(data, "fuzz.json") {
        walk(&claude_code::to_trace(vec![c.clone(), c]));
    }
});
