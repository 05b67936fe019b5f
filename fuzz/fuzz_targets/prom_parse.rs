//! The Prometheus text parser and the vLLM snapshot on arbitrary text.
#![no_main]

use codendum_core::prom::{parse, ServerSnapshot};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(page) = parse(text) {
        for s in &page.samples {
            let _ = s.labels().count();
        }
        let snap = ServerSnapshot::from_exposition(&page);
        let _ = snap.prefix_hit_rate();
        let _ = snap.finished_total();
        let sum = ServerSnapshot::sum(&[snap.clone(), snap]);
        let _ = sum.has_vllm_metrics();
    }
    let _ = ServerSnapshot::from_text(text);
});
