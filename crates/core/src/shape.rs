//! Prompt shapes: the target input size of a bench request (`--shapes
//! short,long,2048`), named in flags and results.

/// A prompt shape: a name and a target input size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// About 512 input tokens.
    Short,
    /// About 16,384 input tokens.
    Long,
    /// About this many input tokens (`--shapes 2048`), named by the number.
    Sized(u32),
}

impl Shape {
    /// Every shape, in default run order.
    pub const ALL: [Shape; 2] = [Shape::Short, Shape::Long];

    /// The name used in flags and results (`short`, `long`, or the number
    /// of input tokens).
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self {
            Shape::Short => std::borrow::Cow::Borrowed("short"),
            Shape::Long => std::borrow::Cow::Borrowed("long"),
            Shape::Sized(n) => std::borrow::Cow::Owned(n.to_string()),
        }
    }

    /// The target input size, tokens.
    pub fn input_tokens(self) -> u64 {
        match self {
            Shape::Short => 512,
            Shape::Long => 16_384,
            Shape::Sized(n) => u64::from(n),
        }
    }

    /// Looks a shape up by name (case-insensitive), or a whole number of
    /// input tokens from 16 to 1,048,576.
    pub fn from_name(name: &str) -> Option<Shape> {
        let name = name.trim();
        if let Ok(n) = name.parse::<u32>() {
            return (16..=1 << 20).contains(&n).then_some(Shape::Sized(n));
        }
        Shape::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }
}
