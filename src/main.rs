//! The `codendum` binary: parse the command line, run the library, map errors
//! to exit codes. Everything else lives in the library.

mod cli;
mod commands;
mod terminal;

use clap::error::ErrorKind;
use clap::Parser;

fn main() {
    // .env fills in what neither the flags nor the environment set.
    if let Err(e) = load_dotenv() {
        terminal::error(e);
        std::process::exit(2);
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => usage_error(e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            terminal::error(format!("cannot start the async runtime: {e}"));
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(commands::run(cli));
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
        Ok(()) => {}
        Err(e) => {
            terminal::error(&e);
            std::process::exit(e.exit_code());
        }
    }
}

/// Loads `./.env` without overriding variables already set, then drops
/// every `CODENDUM_*` setting that is empty: an empty setting is an unset
/// one (`.env.example` leaves the server, key and CA empty for the embedded
/// twin), not a value a flag must parse. Called before any thread starts.
fn load_dotenv() -> Result<(), String> {
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
                && v.to_str().is_some_and(|v| v.trim().is_empty())
        })
        .map(|(k, _)| k)
        .collect();
    for key in empty {
        std::env::remove_var(key);
    }
    loaded
}

/// Help and version go out as clap writes them; a usage mistake becomes one
/// line naming the flag (exit 2), like every other bad input.
fn usage_error(e: clap::Error) -> ! {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    terminal::error(usage_line(&e.render().to_string()));
    std::process::exit(2);
}

/// clap's multi-line message on one line: without the usage block and the
/// "try --help" hint (clap's layout, unlike [`codendum_core::error::one_line`]'s
/// error chains).
fn usage_line(rendered: &str) -> String {
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect();
    let text = parts.join(" ").replace(" tip: ", "; tip: ");
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}
