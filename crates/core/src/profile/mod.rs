//! Server profiles: the vLLM settings a lab runs with (`[server]`), the
//! hardware TOML they name, and the profile's capacity targets (`[targets]`,
//! kept opaque here). Profiles ship inside the binary and can also be read
//! from a `.toml` path. The twin, the capacity suite and the planner all
//! read them from here.

pub mod fleet;
pub mod hardware;
pub mod region;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use self::hardware::HardwareProfile;
use self::hardware::GB10_QWEN3_CODER_TOML;
use crate::error::ConfigError;

/// Profiles compiled into the binary: (name, TOML text).
pub const EMBEDDED_PROFILES: &[(&str, &str)] = &[
    (
        "classroom-64k",
        include_str!("../../../../profiles/classroom-64k.toml"),
    ),
    (
        "classroom-64k-high-concurrency",
        include_str!("../../../../profiles/classroom-64k-high-concurrency.toml"),
    ),
];

/// Hardware TOMLs compiled into the binary: (name, TOML text).
pub const EMBEDDED_HARDWARE: &[(&str, &str)] =
    &[("gb10-qwen3-coder-30b-a3b-fp8", GB10_QWEN3_CODER_TOML)];

/// The `[server]` table: the vLLM engine arguments the twin mirrors.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// `--served-model-name`: the `model` clients send and `/v1/models` lists.
    pub served_model_name: String,
    /// The model path (`root` in `/v1/models`, `model_name` label in `/metrics`).
    pub model: String,
    /// `--max-model-len`: prompt + output limit, tokens.
    pub max_model_len: u32,
    /// `--max-num-seqs`: most requests running at once.
    pub max_num_seqs: u32,
    /// `--max-num-batched-tokens`: token budget of one engine step.
    pub max_num_batched_tokens: u32,
    /// KV block size, tokens.
    pub block_size: u32,
    /// KV-cache capacity, tokens (a multiple of `block_size`).
    pub kv_cache_tokens: u64,
    /// Name of a hardware TOML (embedded, or `hardware/<name>.toml` next to
    /// the profile file).
    pub hardware: String,
    /// `--enable-prefix-caching`.
    pub enable_prefix_caching: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    server: ServerSettings,
    #[serde(default)]
    fleet: fleet::FleetSpec,
    #[serde(default)]
    targets: toml::Table,
    #[serde(default)]
    calibration: Option<region::CalibrationRegion>,
}

/// A loaded server profile.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Profile name (the embedded name, or the file stem of a path).
    pub name: String,
    /// The `[server]` settings.
    pub server: ServerSettings,
    /// The hardware TOML the profile names.
    pub hardware: HardwareProfile,
    /// The `[fleet]` table (replicas and router of the embedded twin).
    pub fleet: fleet::FleetSpec,
    /// The `[targets]` table, uninterpreted (the capacity module reads it).
    pub targets: toml::Table,
    /// `[calibration]`: the region a fitted profile's runs measured (`None`:
    /// not a fitted profile).
    pub calibration: Option<region::CalibrationRegion>,
}

impl Profile {
    /// Loads an embedded profile by name (`classroom-64k`), or a `.toml` file
    /// by path. An unknown name lists the known ones; an unknown key anywhere
    /// outside `[targets]` is an error naming the key.
    pub fn load(name_or_path: &str) -> Result<Profile, ConfigError> {
        if let Some((name, text)) = EMBEDDED_PROFILES.iter().find(|(n, _)| *n == name_or_path) {
            return Self::parse(name, text, Path::new(name), None);
        }
        let path = Path::new(name_or_path);
        let looks_like_path = name_or_path.ends_with(".toml") || name_or_path.contains('/');
        if !looks_like_path || !path.exists() {
            if looks_like_path {
                return Err(ConfigError::Unreadable {
                    what: "profile",
                    path: path.to_path_buf(),
                    source: std::io::Error::from(std::io::ErrorKind::NotFound),
                });
            }
            return Err(ConfigError::invalid(
                "--profile",
                format!(
                    "unknown profile {name_or_path:?}; known profiles: {} (or a path to a .toml file)",
                    known_profiles().join(", ")
                ),
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Unreadable {
            what: "profile",
            path: path.to_path_buf(),
            source,
        })?;
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("profile")
            .to_string();
        Self::parse(&name, &text, path, path.parent())
    }

    /// Parses profile text. `dir` is where a hardware TOML that is not
    /// embedded is looked for (`<dir>/hardware/<name>.toml`).
    pub fn parse(
        name: &str,
        text: &str,
        path: &Path,
        dir: Option<&Path>,
    ) -> Result<Profile, ConfigError> {
        let bad = |reason: String| ConfigError::BadFile {
            what: "profile",
            path: path.to_path_buf(),
            reason,
        };
        let file: ProfileFile =
            toml::from_str(text).map_err(|e| bad(squash_whitespace(&e.to_string())))?;
        validate(&file.server).map_err(bad)?;
        fleet::check_replicas(file.fleet.replicas).map_err(|_| {
            bad(format!(
                "fleet.replicas = {}: give 1 to {}",
                file.fleet.replicas,
                fleet::MAX_REPLICAS
            ))
        })?;
        let hardware = load_hardware(&file.server.hardware, dir)?;
        Ok(Profile {
            name: name.to_string(),
            server: file.server,
            hardware,
            fleet: file.fleet,
            targets: file.targets,
            calibration: file.calibration,
        })
    }

    /// The warning for a run outside a fitted profile's calibrated region
    /// (contexts in tokens, batch in requests in flight), `None` inside it or
    /// for a profile that was not fitted.
    pub fn region_warning(
        &self,
        context_tokens: Option<u64>,
        batch: Option<u32>,
    ) -> Option<String> {
        self.calibration?.outside(context_tokens, batch)
    }

    /// KV blocks of the cache (`kv_cache_tokens / block_size`).
    pub fn num_gpu_blocks(&self) -> u64 {
        self.server.kv_cache_tokens / u64::from(self.server.block_size.max(1))
    }
}

/// Names of the embedded profiles.
pub fn known_profiles() -> Vec<&'static str> {
    EMBEDDED_PROFILES.iter().map(|(n, _)| *n).collect()
}

/// A multi-line message (TOML's, with its source excerpt) on one line, every
/// run of white space one space: text, unlike the error chains of
/// [`crate::error::one_line`].
fn squash_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn validate(s: &ServerSettings) -> Result<(), String> {
    if s.block_size == 0 {
        return Err("server.block_size must be > 0".into());
    }
    if s.max_num_seqs == 0 || s.max_num_batched_tokens == 0 || s.max_model_len == 0 {
        return Err(
            "server.max_num_seqs, max_num_batched_tokens and max_model_len must be > 0".into(),
        );
    }
    let blocks = s.kv_cache_tokens / u64::from(s.block_size);
    if blocks < 2 {
        return Err("server.kv_cache_tokens must hold at least 2 blocks".into());
    }
    if s.served_model_name.trim().is_empty() {
        return Err("server.served_model_name must not be empty".into());
    }
    Ok(())
}

fn load_hardware(name: &str, dir: Option<&Path>) -> Result<HardwareProfile, ConfigError> {
    let (path, text) = if let Some((n, text)) = EMBEDDED_HARDWARE.iter().find(|(n, _)| *n == name) {
        (
            PathBuf::from(format!("hardware/{n}.toml")),
            text.to_string(),
        )
    } else {
        let file = if name.ends_with(".toml") {
            name.to_string()
        } else {
            format!("{name}.toml")
        };
        let path = match dir {
            Some(d) => d.join("hardware").join(file),
            None => PathBuf::from("hardware").join(file),
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Unreadable {
            what: "hardware profile",
            path: path.clone(),
            source,
        })?;
        (path, text)
    };
    HardwareProfile::parse(&text).map_err(|reason| ConfigError::BadFile {
        what: "hardware profile",
        path,
        reason: squash_whitespace(&reason),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_profiles_load() {
        let p = Profile::load("classroom-64k").expect("loads");
        assert_eq!(p.server.max_num_seqs, 16);
        assert_eq!(p.num_gpu_blocks(), 85_165);
        assert_eq!(p.server.served_model_name, "qwen3-coder");
        let hc = Profile::load("classroom-64k-high-concurrency").expect("loads");
        assert_eq!(hc.server.max_num_seqs, 24);
        assert_eq!(hc.hardware.model.kv_bytes_per_token, 49_152);
    }

    #[test]
    fn unknown_name_lists_known_profiles() {
        let err = Profile::load("classroom-99k")
            .expect_err("unknown")
            .to_string();
        assert!(err.contains("classroom-64k-high-concurrency"), "{err}");
    }

    #[test]
    fn unknown_key_is_named() {
        let text = EMBEDDED_PROFILES[0]
            .1
            .replace("max_num_seqs", "max_num_seq");
        let err = Profile::parse("x", &text, Path::new("x.toml"), None)
            .expect_err("unknown key")
            .to_string();
        assert!(err.contains("max_num_seq"), "{err}");
        let extra = format!("{}\n[extra]\nfoo = 1\n", EMBEDDED_PROFILES[0].1);
        let err = Profile::parse("x", &extra, Path::new("x.toml"), None)
            .expect_err("unknown table")
            .to_string();
        assert!(err.contains("extra"), "{err}");
    }

    #[test]
    fn targets_are_kept_opaque_and_files_load_by_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = EMBEDDED_PROFILES[0]
            .1
            .replace("[targets]", "[targets]\nttft_p95_s = 60.0");
        let path = dir.path().join("mine.toml");
        std::fs::write(&path, text).expect("write");
        let p = Profile::load(path.to_str().expect("utf8")).expect("loads");
        assert_eq!(p.name, "mine");
        assert_eq!(
            p.targets.get("ttft_p95_s").and_then(|v| v.as_float()),
            Some(60.0)
        );
    }
}
