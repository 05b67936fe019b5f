//! Sizes a class asks for that the simulated project does not give by
//! itself: a session's first prompt (`agent.prompt_tokens`) and the tokens
//! each step's tool results add (`agent.appended_tokens`). What is missing
//! is made up with neutral lines of workspace notes, about
//! [`CHARS_PER_TOKEN`] characters a token, that name no file and report no
//! failure, so the agent reads the results as it would without them.

use super::compaction::CHARS_PER_TOKEN;

/// Lines of made-up workspace notes (no paths, no error words).
const NOTES: &[&str] = &[
    "note: the chat module keeps one handler thread per connected client",
    "note: messages are plain text lines, one command or message per line",
    "note: the course asks for short methods and a comment on each public one",
    "note: the server listens on one port and accepts clients until it is stopped",
    "note: names of online users are unique within one running server",
    "note: every change is reviewed by the teaching assistant before grading",
    "note: the client prints what the server sends, prefixed by the sender",
    "note: the tests start a server on a free port and connect real sockets",
];

/// About `tokens` tokens of notes, the same text for the same `tokens` and
/// `offset` (a longer text starts with a shorter one of the same offset, so
/// sessions padded from one offset share their prefix).
pub fn notes(tokens: u64, offset: usize) -> String {
    let want = tokens as usize * CHARS_PER_TOKEN;
    let mut out = String::with_capacity(want + 80);
    let mut i = 0;
    while out.len() < want {
        let line = NOTES[(offset + i) % NOTES.len()];
        out.push_str(&format!("{line} ({})\n", i + 1));
        i += 1;
    }
    out
}

/// About `tokens` tokens of notes that only a session tagged `tag` holds
/// (each line names the tag), so no two sessions share them.
pub fn own_notes(tokens: u64, tag: &str) -> String {
    let want = tokens as usize * CHARS_PER_TOKEN;
    let mut out = String::with_capacity(want + 80);
    let mut i = 0;
    while out.len() < want {
        let line = NOTES[i % NOTES.len()];
        out.push_str(&format!("{line} ({tag} {})\n", i + 1));
        i += 1;
    }
    out
}

/// Tokens of a text, estimated as the client estimates them.
pub fn estimate(text_len: usize) -> u64 {
    (text_len / CHARS_PER_TOKEN) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_have_their_size_share_prefixes_and_never_look_like_failures() {
        let short = notes(100, 0);
        let long = notes(400, 0);
        assert!(long.starts_with(&short[..short.len() - 8]));
        assert!(
            (estimate(long.len()) as i64 - 400).abs() < 20,
            "{}",
            long.len()
        );
        for bad in ["error", "fail", "not found", "/", ".java", ".py"] {
            assert!(!long.to_ascii_lowercase().contains(bad), "{bad}");
        }
        assert!(notes(0, 3).is_empty());
    }
}
