//! Every `CODENDUM_*` environment variable, in one registry: its name, what
//! it sets and its default. The command line (clap's `env` attributes name
//! these constants) and the capacity suite's test harness read the same
//! names, with the same `.env` and the same rule for empty values.
//!
//! Order: a flag wins over the environment, the environment over `.env`
//! ([`load_dotenv`] never overrides a variable already set). An empty
//! value is an unset one ([`value`]): `.env.example` leaves the server,
//! key and CA empty for the embedded twin.

/// One environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    /// Its name (`CODENDUM_BASE_URL`).
    pub name: &'static str,
    /// The flag it stands for, if any (`--base-url`).
    pub flag: Option<&'static str>,
    /// What reads it.
    pub used_by: &'static str,
    /// What it sets.
    pub meaning: &'static str,
    /// What holds when it is unset.
    pub default: &'static str,
}

/// `--base-url`.
pub const BASE_URL: &str = "CODENDUM_BASE_URL";
/// `--api-key`.
pub const API_KEY: &str = "CODENDUM_API_KEY";
/// `--api-keys-file`.
pub const API_KEYS_FILE: &str = "CODENDUM_API_KEYS_FILE";
/// `--cacert`.
pub const CACERT: &str = "CODENDUM_CACERT";
/// `--metrics-url`.
pub const METRICS_URL: &str = "CODENDUM_METRICS_URL";
/// `--prometheus-url`.
pub const PROMETHEUS_URL: &str = "CODENDUM_PROMETHEUS_URL";
/// `--router-metrics-url`.
pub const ROUTER_METRICS_URL: &str = "CODENDUM_ROUTER_METRICS_URL";
/// `--model`.
pub const MODEL: &str = "CODENDUM_MODEL";
/// `--profile`.
pub const PROFILE: &str = "CODENDUM_PROFILE";
/// `--image-digest`.
pub const IMAGE_DIGEST: &str = "CODENDUM_IMAGE_DIGEST";
/// `--model-revision`.
pub const MODEL_REVISION: &str = "CODENDUM_MODEL_REVISION";
/// `--dgx-os-version`.
pub const DGX_OS_VERSION: &str = "CODENDUM_DGX_OS_VERSION";
/// `--driver-version`.
pub const DRIVER_VERSION: &str = "CODENDUM_DRIVER_VERSION";
/// `check --mode`: the capacity suite's quick or full workloads.
pub const CAPACITY: &str = "CODENDUM_CAPACITY";
/// `check --profiles`: the capacity suite's profiles.
pub const CAPACITY_PROFILES: &str = "CODENDUM_CAPACITY_PROFILES";
/// `check --allow-busy`: the capacity suite starts on a busy server.
pub const ALLOW_BUSY: &str = "CODENDUM_ALLOW_BUSY";
/// `check --results-dir`: the capacity suite's results root.
pub const RESULTS_DIR: &str = "CODENDUM_RESULTS_DIR";
/// `check --reuse-s`: the capacity suite's reuse window.
pub const CAPACITY_REUSE_S: &str = "CODENDUM_CAPACITY_REUSE_S";

/// The variables of the command line and the capacity suite.
pub const VARS: &[Var] = &[
    Var {
        name: BASE_URL,
        flag: Some("--base-url"),
        used_by: "bench, classroom, replay, metrics, check, capacity suite",
        meaning: "the server's OpenAI base URL, ending in /v1",
        default: "none: the embedded twin",
    },
    Var {
        name: API_KEY,
        flag: Some("--api-key"),
        used_by: "bench, classroom, replay, check, capacity suite",
        meaning: "the API key, sent as a bearer token (never printed or written)",
        default: "none",
    },
    Var {
        name: API_KEYS_FILE,
        flag: Some("--api-keys-file"),
        used_by: "classroom, check, capacity suite",
        meaning: "one API key per student (CSV with a key column, or one a line)",
        default: "none: the single --api-key",
    },
    Var {
        name: CACERT,
        flag: Some("--cacert"),
        used_by: "bench, classroom, replay, metrics, capture, check, capacity suite",
        meaning: "a PEM bundle of the private CA, replacing the system roots",
        default: "the system roots",
    },
    Var {
        name: METRICS_URL,
        flag: Some("--metrics-url"),
        used_by: "bench, classroom, replay, metrics, check, capacity suite",
        meaning: "vLLM's /metrics, comma-separated for replicas",
        default: "<base origin>/metrics",
    },
    Var {
        name: PROMETHEUS_URL,
        flag: Some("--prometheus-url"),
        used_by: "bench, classroom, replay",
        meaning: "a Prometheus holding the replicas' figures, read instead of /metrics",
        default: "none",
    },
    Var {
        name: ROUTER_METRICS_URL,
        flag: Some("--router-metrics-url"),
        used_by: "bench, classroom, replay",
        meaning: "the router's own Prometheus page, read at the start and the end",
        default: "none",
    },
    Var {
        name: MODEL,
        flag: Some("--model"),
        used_by: "bench, classroom, replay, check, capacity suite",
        meaning: "the model to request",
        default: "the first id of /v1/models",
    },
    Var {
        name: PROFILE,
        flag: Some("--profile"),
        used_by: "bench, classroom, replay, serve, check, capacity suite",
        meaning: "the twin's profile, or the live server's stated one (checked and recorded)",
        default: "classroom-64k for the twin; none for a live server",
    },
    Var {
        name: IMAGE_DIGEST,
        flag: Some("--image-digest"),
        used_by: "bench, classroom, replay, check, capacity suite",
        meaning: "provenance: the vLLM image digest",
        default: "none",
    },
    Var {
        name: MODEL_REVISION,
        flag: Some("--model-revision"),
        used_by: "bench, classroom, replay, check, capacity suite",
        meaning: "provenance: the model revision",
        default: "none",
    },
    Var {
        name: DGX_OS_VERSION,
        flag: Some("--dgx-os-version"),
        used_by: "bench, classroom, replay, check, capacity suite",
        meaning: "provenance: the DGX OS version",
        default: "none",
    },
    Var {
        name: DRIVER_VERSION,
        flag: Some("--driver-version"),
        used_by: "bench, classroom, replay, check, capacity suite",
        meaning: "provenance: the NVIDIA driver version",
        default: "none",
    },
    Var {
        name: CAPACITY,
        flag: Some("--mode"),
        used_by: "check, capacity suite",
        meaning: "quick or full workloads",
        default: "quick",
    },
    Var {
        name: CAPACITY_PROFILES,
        flag: Some("--profiles"),
        used_by: "check, capacity suite",
        meaning: "the profiles whose trials are listed (names or .toml paths, comma-separated)",
        default: "the shipped profiles",
    },
    Var {
        name: ALLOW_BUSY,
        flag: Some("--allow-busy"),
        used_by: "check, capacity suite",
        meaning: "yes (1, true): start although /metrics shows requests running or waiting",
        default: "0",
    },
    Var {
        name: RESULTS_DIR,
        flag: Some("--results-dir"),
        used_by: "check, capacity suite",
        meaning: "the results root",
        default: "bench-results",
    },
    Var {
        name: CAPACITY_REUSE_S,
        flag: Some("--reuse-s"),
        used_by: "check, capacity suite",
        meaning: "reuse a finished run of the same workload younger than this many seconds",
        default: "0: only within one nextest run",
    },
];

/// The registry's entry of `name`.
pub fn var(name: &str) -> Option<&'static Var> {
    VARS.iter().find(|v| v.name == name)
}

/// A variable's value as a setting: trimmed, and `None` when empty.
pub fn value(raw: Option<String>) -> Option<String> {
    raw.map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// A yes-or-no variable's value (`CODENDUM_ALLOW_BUSY`): `1`, `true`,
/// `yes`, `on`, `y`, `t` are yes; `0`, `false`, `no`, `off`, `n`, `f` no
/// (any case), as clap reads a switch's variable; anything else is an error.
pub fn switch(raw: &str) -> Result<bool, String> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" | "t" => Ok(true),
        "0" | "false" | "no" | "off" | "n" | "f" => Ok(false),
        _ => Err(format!(
            "{raw:?} is neither yes (1, true) nor no (0, false)"
        )),
    }
}

/// The process environment's value of `name` (after [`load_dotenv`]), by
/// [`value`]'s rule.
pub fn get(name: &str) -> Option<String> {
    value(std::env::var(name).ok())
}

/// Loads `./.env` (searched from the current directory upwards) without
/// overriding variables already set, then unsets every `CODENDUM_*`
/// variable whose value is empty, so that clap and the capacity suite see
/// an empty setting as no setting. Call it once, before any thread starts.
pub fn load_dotenv() -> Result<(), String> {
    let loaded = match dotenvy::dotenv() {
        Ok(_) => Ok(()),
        Err(e) if e.not_found() => Ok(()),
        Err(dotenvy::Error::LineParse(_, index)) => {
            Err(format!(".env: cannot parse the line at byte {index}"))
        }
        Err(e) => Err(format!(".env: {e}")),
    };
    let empty: Vec<std::ffi::OsString> = std::env::vars_os()
        .filter(|(k, v)| {
            k.to_str().is_some_and(|k| k.starts_with("CODENDUM_"))
                && value(v.to_str().map(String::from)).is_none()
        })
        .map(|(k, _)| k)
        .collect();
    for key in empty {
        std::env::remove_var(key);
    }
    loaded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_listed_once_with_its_meaning_and_default() {
        for (i, v) in VARS.iter().enumerate() {
            assert!(v.name.starts_with("CODENDUM_"), "{v:?}");
            assert!(!v.meaning.is_empty() && !v.default.is_empty(), "{v:?}");
            assert!(
                VARS[..i].iter().all(|o| o.name != v.name),
                "{} twice",
                v.name
            );
        }
        assert_eq!(var(BASE_URL).and_then(|v| v.flag), Some("--base-url"));
    }

    #[test]
    fn a_switch_is_yes_or_no_and_nothing_else() {
        for yes in ["1", "true", "YES", "on", "y", "t"] {
            assert_eq!(switch(yes), Ok(true), "{yes}");
        }
        for no in ["0", "false", "No", "off", "n", "f"] {
            assert_eq!(switch(no), Ok(false), "{no}");
        }
        assert!(switch("2").unwrap_err().contains("\"2\""));
    }

    #[test]
    fn an_empty_value_is_no_value() {
        assert_eq!(value(Some("  ".into())), None);
        assert_eq!(value(None), None);
        assert_eq!(value(Some(" quick ".into())).as_deref(), Some("quick"));
    }
}
