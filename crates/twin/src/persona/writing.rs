//! The prose the persona writes: a sentence of reasoning before a tool call,
//! final summaries, subagent findings, titles, compaction summaries and chat.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::paths::{basename, is_test_path};

fn pick<'a>(rng: &mut ChaCha8Rng, pool: &[&'a str]) -> &'a str {
    pool.choose(rng).copied().unwrap_or("")
}

fn quoted(files: &[String]) -> String {
    let q: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
    match q.as_slice() {
        [] => "the project".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

const AFTERTHOUGHTS: &[&str] = &[
    " That should tell me where the change belongs.",
    " I want to keep the existing style of the code.",
    " Then I can decide what to change.",
    " This keeps the change small and easy to review.",
    " I'll keep the public interface as it is.",
    " That way the tests cover the new behaviour too.",
];

fn maybe_more(rng: &mut ChaCha8Rng, s: String) -> String {
    if rng.gen_bool(0.45) {
        s + pick(rng, AFTERTHOUGHTS)
    } else {
        s
    }
}

/// Before listing the project.
pub fn before_listing(rng: &mut ChaCha8Rng) -> String {
    let s = pick(
        rng,
        &[
            "Let me look at the project structure first.",
            "I'll start by listing the files in the project.",
            "First I'll get an overview of the repository layout.",
        ],
    );
    maybe_more(rng, s.to_string())
}

/// Before reading files.
pub fn before_reading(rng: &mut ChaCha8Rng, files: &[String], topic: &str) -> String {
    let s = match rng.gen_range(0..4) {
        0 => format!(
            "I'll read {} to see how {topic}s are handled now.",
            quoted(files)
        ),
        1 => format!("Let me read {} first.", quoted(files)),
        2 => format!("Next I need the contents of {}.", quoted(files)),
        _ => format!("I'll check {} before changing anything.", quoted(files)),
    };
    maybe_more(rng, s)
}

/// Before searching the code.
pub fn before_search(rng: &mut ChaCha8Rng, pattern: &str) -> String {
    let s = format!(
        "{} `{pattern}` in the code.",
        pick(
            rng,
            &[
                "I'll search for",
                "Let me look for uses of",
                "Searching for"
            ]
        )
    );
    maybe_more(rng, s)
}

/// Before an edit or a write.
pub fn before_change(rng: &mut ChaCha8Rng, file: &str, topic: &str, new_file: bool) -> String {
    let s = if new_file {
        format!("I'll create `{file}` with the {topic} handling in one place.")
    } else if is_test_path(file) {
        format!("Now I'll add tests for the {topic} behaviour to `{file}`.")
    } else {
        match rng.gen_range(0..3) {
            0 => format!("Now I'll add the {topic} logic to `{file}`."),
            1 => format!("I'll update `{file}` so it supports {topic}s."),
            _ => format!("Next, the change in `{file}`."),
        }
    };
    maybe_more(rng, s)
}

/// Before a fix after a failing test run.
pub fn before_fix(rng: &mut ChaCha8Rng, file: &str) -> String {
    let s = pick(
        rng,
        &[
            "The failure points at",
            "The test fails because of a problem in",
            "I see the cause; the fix belongs in",
        ],
    );
    format!("{s} `{file}`. I'll fix it there.")
}

/// Before running the tests.
pub fn before_tests(rng: &mut ChaCha8Rng, command: &str, again: bool) -> String {
    if again {
        format!(
            "{} `{command}` again.",
            pick(rng, &["Let me run", "Running", "I'll re-run"])
        )
    } else {
        maybe_more(
            rng,
            format!("Now I'll run the tests with `{command}` to check the change."),
        )
    }
}

/// Before compiling after a change.
pub fn before_compile(rng: &mut ChaCha8Rng, command: &str) -> String {
    format!(
        "{} `{command}`.",
        pick(
            rng,
            &[
                "Let me check that it compiles with",
                "Compiling to catch mistakes early:",
                "Quick compile check:"
            ]
        )
    )
}

/// Before delegating to a subagent.
pub fn before_task(rng: &mut ChaCha8Rng, topic: &str) -> String {
    let s = format!("I'll have an explore agent find the code that deals with {topic}s.");
    maybe_more(rng, s)
}

/// Padding sentences for longer texts.
const FILLER: &[&str] = &[
    "The change follows the structure that was already there, so the rest of the code did not need to move.",
    "Error cases return early, which keeps the main path of each method short.",
    "I kept the names consistent with the existing classes and functions.",
    "Nothing outside the chat server depends on the changed methods, so callers are unaffected.",
    "If you want, the next step could be persisting the history between restarts.",
    "The new code is covered by the tests, including the empty and invalid inputs.",
    "Concurrency stays as before: shared state is only touched while holding the same lock.",
    "Logging uses the existing logger, so the output format did not change.",
];

pub(super) fn pad(rng: &mut ChaCha8Rng, text: String, target_tokens: usize) -> String {
    pad_with(rng, text, target_tokens, FILLER)
}

/// Thinking aloud before a tool call, for answers drawn longer than the
/// call itself.
const REASONING: &[&str] = &[
    "I want to see how the pieces fit together before I change anything.",
    "The protocol, the server and the client each need a small part of this.",
    "Keeping the change close to the existing code makes it easier to review.",
    "If the tests cover parsing and delivery, the feature is safe to build on.",
    "The error cases matter too: an unknown user, an empty message, a missing name.",
    "The server keeps its clients in a shared list, so changes there must stay thread-safe.",
    "Once this step is done I can move on to the next part of the task.",
    "The existing tests show the style the project expects for new ones.",
    "I'll keep the public methods as they are and add to them rather than rename them.",
    "A small, focused change now avoids a larger refactoring later.",
    "Reading the current code first tells me which names and helpers already exist.",
    "The build has to stay green after every step, so I'll check it as I go.",
];

/// `text` followed by reasoning sentences until it has about
/// `target_tokens` tokens.
pub(super) fn reason(rng: &mut ChaCha8Rng, text: String, target_tokens: usize) -> String {
    let text = if text.is_empty() || text.ends_with(char::is_whitespace) {
        text
    } else {
        text + " "
    };
    pad_with(rng, text, target_tokens, REASONING)
}

/// Appends sentences of `pool` (shuffled) to `text` until it holds
/// `target_tokens` tokens of the twin's tokenizer (estimated per sentence
/// added, then counted once to settle).
pub(super) fn pad_with(
    rng: &mut ChaCha8Rng,
    mut text: String,
    target_tokens: usize,
    pool: &[&str],
) -> String {
    let mut pool: Vec<&str> = pool.to_vec();
    pool.shuffle(rng);
    let mut i = 0;
    loop {
        let mut have = crate::tokenizer::count(text.trim_end());
        if have >= target_tokens {
            break;
        }
        while have < target_tokens {
            let sentence = pool[i % pool.len()];
            let newline = i % 3 == 2;
            text.push_str(sentence);
            text.push(if newline { '\n' } else { ' ' });
            // The space joins the next word's piece; a newline is a piece.
            have += crate::tokenizer::count(sentence) + usize::from(newline);
            i += 1;
        }
    }
    text.trim_end().to_string()
}

/// A subagent's findings, about `target_tokens` long.
pub fn findings(
    rng: &mut ChaCha8Rng,
    files: &[String],
    topic: &str,
    target_tokens: usize,
) -> String {
    let mut s = format!("Findings about {topic}s:\n\n");
    // About 20 tokens a file: a short answer names fewer of them.
    let most = (target_tokens.saturating_sub(30) / 20).clamp(1, 6);
    for f in files.iter().take(most) {
        let role = if is_test_path(f) {
            "tests of the server behaviour"
        } else if basename(f).to_ascii_lowercase().contains("client") {
            "client side: reads user input and sends it to the server"
        } else {
            "server side: accepts connections and dispatches lines"
        };
        s.push_str(&format!("- `{f}`: {role}\n"));
    }
    s.push_str(&format!(
        "\nThe {topic} logic would fit best next to the existing message handling. "
    ));
    pad(rng, s, target_tokens)
}

/// Words a title does not end on.
const DANGLING: &[&str] = &[
    "a", "an", "the", "to", "of", "in", "on", "for", "with", "and", "or", "that", "which", "by",
];

/// A title of at most `most_words` words (six at most) and 50 characters
/// from the user's first message: quotes and punctuation around words
/// removed, never ending on a word such as "that" or "with".
pub fn title(task: &str, most_words: usize) -> String {
    let most_words = most_words.clamp(1, 6);
    let mut words: Vec<&str> = Vec::new();
    let mut len = 0;
    for w in task.split_whitespace() {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && !"/._-`".contains(c));
        let w = w.trim_matches(['`', '.', '_', '-']);
        if w.is_empty() || !w.chars().any(char::is_alphanumeric) {
            continue;
        }
        if words.len() == most_words || len + w.len() + 1 > 50 {
            break;
        }
        len += w.len() + 1;
        words.push(w);
    }
    while words
        .last()
        .is_some_and(|w| DANGLING.contains(&w.to_ascii_lowercase().as_str()))
    {
        words.pop();
    }
    if words.is_empty() {
        return "New coding session".to_string();
    }
    let mut t = words.join(" ");
    if let Some(first) = t.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    t
}

/// A structured summary for a compaction request, about `target_tokens`
/// long.
pub fn compaction(
    rng: &mut ChaCha8Rng,
    goal: &str,
    files: &[String],
    topic: &str,
    target_tokens: usize,
) -> String {
    let goal: String = goal.chars().take(300).collect();
    let mut s = format!(
        "## Goal\n{}\n\n## Progress\n- Explored the project layout and read the relevant sources.\n- Implemented the {topic} changes and ran the test suite.\n- Fixed the failures the first test run reported.\n\n## Files\n",
        goal.trim()
    );
    for f in files.iter().take(12) {
        s.push_str(&format!("- `{f}`\n"));
    }
    s.push_str(&format!(
        "\n## Next steps\n- Re-run the tests after the last change.\n- Review the {topic} edge cases (empty input, disconnects).\n\n## Notes\n"
    ));
    pad(rng, s, target_tokens)
}

/// A plain answer without tools (chat, or tools the persona cannot use),
/// about `target_tokens` long.
pub fn chat(rng: &mut ChaCha8Rng, question: &str, target_tokens: usize) -> String {
    let q: String = question
        .split_whitespace()
        .take(12)
        .collect::<Vec<_>>()
        .join(" ");
    let s = format!(
        "{} {q}\n\n",
        pick(
            rng,
            &[
                "Here is how I would approach this:",
                "Good question. In short:",
                "A few points on",
            ]
        )
    );
    pad(rng, s, target_tokens)
}
