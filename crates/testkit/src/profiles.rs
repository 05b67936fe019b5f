//! Server profiles the tests write: the lab's GB10 hardware with another
//! seat count, so a class meets its limits with a few students.

use std::path::{Path, PathBuf};

/// A profile's TOML: the lab's GB10 serving Qwen3-Coder with `seats`
/// sequences at once (`max_num_seqs`).
pub fn gb10_with_seats(seats: u32) -> String {
    format!(
        "[server]\nserved_model_name = \"qwen3-coder\"\n\
         model = \"Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8\"\nmax_model_len = 65536\n\
         max_num_seqs = {seats}\nmax_num_batched_tokens = 8192\nblock_size = 16\n\
         kv_cache_tokens = 1362640\nhardware = \"gb10-qwen3-coder-30b-a3b-fp8\"\n\
         enable_prefix_caching = true\n"
    )
}

/// Writes [`gb10_with_seats`] as `dir/name` and returns its path.
pub fn write_gb10_with_seats(dir: &Path, name: &str, seats: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, gb10_with_seats(seats)).expect("profile written");
    path
}
