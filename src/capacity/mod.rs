//! `codendum capacity`: how many students the server carries, per service
//! tier, measured on the server in one sitting with the twin's prediction
//! beside it.
//!
//! 1. The twin predicts first ([`predict`]): the same search in virtual
//!    time against the twin of the named profile gives each tier's
//!    expected answer and how long a step takes to settle.
//! 2. One class runs on the server for the whole search
//!    ([`students`]: simulated, [`crate::classroom::continuous`], or
//!    recorded sessions replayed, [`crate::replay::continuous`]): students
//!    join or leave between steps, and a student whose session ends is
//!    replaced.
//! 3. Each step ([`engine`]) sets the class's size, settles ([`settle`]),
//!    holds its steady window, and is judged over that window only
//!    ([`window`], [`judge`]) by every tier: met, missed or indeterminate.
//! 4. The steps bracket the prediction and bisect ([`search`], on
//!    [`crate::plan::bisect`], the routine `plan` searches with); each
//!    answer is held once more to confirm it.
//! 5. The live steps run again on the twin, so each has its prediction
//!    beside its measurement ([`predict::predict_steps`]); the answers and
//!    what more time would buy are said in words ([`text`]).

pub mod answer;
pub mod engine;
pub mod judge;
pub mod on_twin;
pub mod predict;
pub mod search;
pub mod settings;
pub mod settle;
pub mod students;
pub mod text;
pub mod window;
