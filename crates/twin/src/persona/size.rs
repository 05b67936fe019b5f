//! How long an answer is: drawn from the class's output-token distribution
//! for its kind, then reached by sizing the code an edit writes (see
//! [`code_chars`]) and padding the text before the tool calls with
//! reasoning (see [`fit`]). Sizes are counted with the twin's own
//! tokenizer, so the tokens streamed are the tokens drawn.

use rand_chacha::ChaCha8Rng;

use codendum_core::class::Distribution;

use super::writing;
use super::CODE_CHARS_PER_TOKEN;
use crate::answer::{AnswerPart, PlannedAnswer};
use crate::tokenizer;

/// Output tokens of one answer, drawn (at least 1).
pub fn draw(d: &Distribution, rng: &mut ChaCha8Rng) -> usize {
    (d.sample_count(rng) as usize).max(1)
}

/// Characters of code an answer of `target` tokens can hold beside its
/// text and the call's other arguments (`overhead` tokens), at least
/// `floor` tokens' worth.
pub fn code_chars(target: usize, overhead: usize, floor: usize) -> usize {
    target.saturating_sub(overhead).max(floor) * CODE_CHARS_PER_TOKEN
}

/// The answer with its text padded with reasoning until it streams at
/// least `target` tokens. An answer already as long or longer is kept as
/// it is: nothing it says is cut.
pub fn fit(mut answer: PlannedAnswer, target: usize, rng: &mut ChaCha8Rng) -> PlannedAnswer {
    let have = tokenizer::answer_len(&answer);
    if have >= target {
        return answer;
    }
    let missing = target - have;
    match answer.parts.first_mut() {
        Some(AnswerPart::Text(text)) => {
            let base = tokenizer::count(text);
            *text = writing::reason(rng, std::mem::take(text), base + missing);
        }
        _ => {
            let text = writing::reason(rng, String::new(), missing);
            answer.parts.insert(0, AnswerPart::Text(text));
        }
    }
    answer
}

/// Words of a title for a drawn length (about 1.3 tokens a word; at least
/// one, at most six).
pub fn title_words(d: &Distribution, rng: &mut ChaCha8Rng) -> usize {
    ((draw(d, rng) as f64 / 1.3).round() as usize).clamp(1, 6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_short_answer_is_padded_to_its_drawn_length_and_a_long_one_kept() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let call = AnswerPart::ToolCall {
            name: "read".into(),
            arguments: r#"{"filePath":"src/main/java/chat/ChatServer.java"}"#.into(),
        };
        let a = PlannedAnswer {
            parts: vec![AnswerPart::Text("Let me read it.".into()), call.clone()],
        };
        for target in [40, 200, 900] {
            let n = tokenizer::answer_len(&fit(a.clone(), target, &mut rng));
            assert!(n >= target && n < target + 40, "{target}: {n}");
        }
        let bare = fit(PlannedAnswer { parts: vec![call] }, 120, &mut rng);
        assert!(matches!(bare.parts[0], AnswerPart::Text(_)));
        assert!(tokenizer::answer_len(&bare) >= 120);
        assert_eq!(fit(a.clone(), 3, &mut rng), a);
    }
}
