//! The typed, validated configuration of a classroom run (no clap here).

use std::sync::Arc;
use std::time::Duration;

use super::client_times::ClientTimes;
use super::prompt::PromptSet;
use super::scenario::Scenario;
use codendum_core::access::Secret;
use codendum_core::class::{AgentSpread, Class, Distribution};
use codendum_core::error::{Check, ConfigError};

/// Default output limit (`max_tokens` of every agent step), tokens.
///
/// OpenCode sends the output limit configured for the model, and 32,000 when
/// none is configured. A lab configures its vLLM model with a limit, and
/// opencode.md's example (65,536 context, 8,192 output → compaction at
/// 57,344 tokens) uses 8,192, so that is the default here; pass 32000 to
/// mimic an unconfigured client.
pub const DEFAULT_OUTPUT_LIMIT: u64 = 8_192;
/// Simulated students (`--users`).
pub const DEFAULT_USERS: usize = 40;
/// Window for new coding requests (`--duration`).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(900);
/// Students start within this time (`--ramp-up`).
pub const DEFAULT_RAMP_UP: Duration = Duration::from_secs(120);

/// Everything a classroom run needs besides the transport and the clock.
#[derive(Debug, Clone)]
pub struct ClassroomConfig {
    /// The model name sent in every request.
    pub model: String,
    /// Simulated students (default 40).
    pub users: usize,
    /// The project they work on (default java).
    pub scenario: Scenario,
    /// Window in which students send NEW coding requests (default 900 s);
    /// requests in flight at its end still finish.
    pub duration: Duration,
    /// Students start uniformly (seeded) within this time (default 120 s).
    pub ramp_up: Duration,
    /// What the students and their agent draw from (`--class`; default the
    /// `lab` class): the pause between a student's coding requests, the
    /// follow-ups per student, how long a student works, the tool times
    /// and the share of sessions whose first test run fails. Against the
    /// embedded twin its agent spread drives the persona too.
    pub class: Arc<Class>,
    /// The client's context limit, tokens: the server's `max_model_len`,
    /// passed in by the caller. `None` never compacts (as OpenCode).
    pub context_limit: Option<u64>,
    /// `max_tokens` of agent steps, tokens (default [`DEFAULT_OUTPUT_LIMIT`]).
    pub output_limit: u64,
    /// API keys, one per student; with fewer keys than students they are
    /// shared round-robin (see [`ClassroomConfig::key_sharing_note`]). Empty:
    /// no `Authorization` header.
    pub api_keys: Vec<Secret>,
    /// Seed of every random choice (start times, pauses, build times,
    /// failing first test runs, retry jitter, session ids).
    pub seed: u64,
    /// System prompt and tools: built in, or from `--prompt-file`.
    pub prompt: PromptSet,
    /// Client time per tool call: built in, or measured by `codendum
    /// capture` (`--client-times`).
    pub client_times: Arc<ClientTimes>,
    /// Most model steps of one agent loop before it is cut off (default
    /// 200: a guard against a model that never stops, above what a class
    /// draws; OpenCode sets none).
    pub step_cap: usize,
    /// Most steps of one subagent loop (default 100).
    pub subagent_step_cap: usize,
    /// After `duration`, coding requests still running this much longer are
    /// cut off; `None` (default) lets them finish.
    pub drain_limit: Option<Duration>,
}

impl ClassroomConfig {
    /// The class's agent spread, which the twin's persona answers with.
    pub fn agent_spread(&self) -> Arc<AgentSpread> {
        Arc::new(self.class.agent.clone())
    }

    /// The defaults of every classroom flag (the command line's, defined
    /// once here) for a model and context limit.
    pub fn new(model: impl Into<String>, context_limit: Option<u64>) -> Self {
        ClassroomConfig {
            model: model.into(),
            users: DEFAULT_USERS,
            scenario: Scenario::Java,
            duration: DEFAULT_DURATION,
            ramp_up: DEFAULT_RAMP_UP,
            class: Class::lab(),
            context_limit,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            api_keys: Vec::new(),
            seed: crate::settings::DEFAULT_SEED,
            prompt: PromptSet::built_in(),
            client_times: Arc::default(),
            step_cap: 200,
            subagent_step_cap: 100,
            drain_limit: None,
        }
    }
}

impl Check for ClassroomConfig {
    /// Checks what only the server can make wrong: a model to send, and a
    /// context limit (the server's, unless given) that leaves room for
    /// prompts beside the output reserve. The flags themselves were typed
    /// and checked when the command line was read.
    fn check(&self) -> Result<(), ConfigError> {
        if self.model.trim().is_empty() {
            return Err(ConfigError::invalid("--model", "is empty"));
        }
        if let Some(limit) = self.context_limit {
            let reserve = self.output_limit.min(32_000);
            if limit <= reserve + 4_096 {
                return Err(ConfigError::invalid(
                    "--context-limit",
                    format!("{limit} tokens leave no room for prompts beside an output reserve of {reserve}"),
                ));
            }
        }
        Ok(())
    }
}

impl ClassroomConfig {
    /// Every student waits between `min` and `max` (uniformly) before a
    /// next coding request, whatever the class says (`--pause-min`,
    /// `--pause-max`). Errors name the flag when `min` is above `max`.
    pub fn set_pauses(&mut self, min: Duration, max: Duration) -> Result<(), ConfigError> {
        if min > max {
            return Err(ConfigError::invalid(
                "--pause-min",
                format!(
                    "{} s is longer than --pause-max {} s",
                    min.as_secs_f64(),
                    max.as_secs_f64()
                ),
            ));
        }
        Arc::make_mut(&mut self.class).person.pause_s = Distribution::uniform(
            "--pause-min/--pause-max",
            min.as_secs_f64(),
            max.as_secs_f64(),
        );
        Ok(())
    }

    /// Every student sends the exercise and `n` follow-ups (the window
    /// permitting), whatever the class says (`--follow-ups`); past the
    /// scenario's follow-ups they are asked again in turn.
    pub fn set_follow_ups(&mut self, n: usize) {
        Arc::make_mut(&mut self.class).person.follow_ups =
            Distribution::value("--follow-ups", n as f64);
    }

    /// The key of student `user` (round-robin over the keys), if any.
    pub fn key_for_user(&self, user: usize) -> Option<&Secret> {
        if self.api_keys.is_empty() {
            None
        } else {
            self.api_keys.get(user % self.api_keys.len())
        }
    }

    /// A warning when students share keys (fewer keys than students), for
    /// the CLI to print: per-user limits of the proxy then apply to groups.
    pub fn key_sharing_note(&self) -> Option<String> {
        let keys = self.api_keys.len();
        (keys > 0 && keys < self.users).then(|| {
            format!(
                "{keys} API keys for {} students: keys are shared round-robin, so the proxy's per-user limits apply to groups of up to {} students",
                self.users,
                self.users.div_ceil(keys)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_errors_name_the_flag() {
        let c = ClassroomConfig::new("qwen", Some(65_536));
        c.check().unwrap();
        assert_eq!(c.seed, crate::settings::DEFAULT_SEED);
        let mut bad = c.clone();
        bad.model = " ".into();
        assert!(bad.check().unwrap_err().to_string().contains("--model"));
        let mut bad = c.clone();
        let e = bad
            .set_pauses(Duration::from_secs(30), Duration::from_secs(20))
            .unwrap_err();
        assert!(e.to_string().contains("--pause-min"), "{e}");
        let mut bad = c.clone();
        bad.context_limit = Some(8_000);
        assert!(bad
            .check()
            .unwrap_err()
            .to_string()
            .contains("--context-limit"));
    }

    #[test]
    fn keys_are_shared_round_robin_with_a_note() {
        let mut c = ClassroomConfig::new("m", None);
        c.users = 5;
        assert!(c.key_for_user(0).is_none() && c.key_sharing_note().is_none());
        c.api_keys = vec![Secret::new("k0"), Secret::new("k1")];
        assert_eq!(c.key_for_user(3).map(Secret::expose), Some("k1"));
        let note = c.key_sharing_note().unwrap_or_default();
        assert!(
            note.contains("2 API keys for 5 students") && !note.contains("k0"),
            "{note}"
        );
    }
}
