//! The twin's chat/completions body parsing and validation on arbitrary bytes.
#![no_main]

use codendum_twin::request_body::parse_generation_body;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (flags, body) = match data.split_first() {
        Some((f, rest)) => (*f, rest),
        None => (0, data),
    };
    let chat = flags & 1 == 1;
    let max_model_len = [16u32, 4096, 65_536, u32::MAX][usize::from(flags >> 1) % 4];
    if let Ok(b) = parse_generation_body(body, chat, "qwen3-coder", max_model_len) {
        assert!(!b.prompt_ids.is_empty());
        assert!(b.params.max_tokens >= 1);
        assert!(
            b.prompt_ids.len() as u64 + u64::from(b.params.max_tokens) <= u64::from(max_model_len)
        );
        let _ = (b.messages().len(), b.tools().len(), b.seed());
    }
});
