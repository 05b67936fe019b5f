//! The `codendum` binary: parse the command line, run the library, map errors
//! to exit codes. Everything else lives in the library.

mod cli;
mod cli_reference;
mod commands;
mod terminal;

use clap::error::ErrorKind;
use clap::Parser;

// The twin's simulations allocate and free a conversation's messages at
// every model call; mimalloc makes `plan` about a fifth faster than the
// system allocator on them (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // .env fills in what neither the flags nor the environment set; an
    // empty CODENDUM_* setting is an unset one.
    if let Err(e) = codendum::settings::env::load_dotenv() {
        terminal::error(e);
        std::process::exit(2);
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => usage_error(e),
    };
    if matches!(cli.command, cli::Command::Plan(_)) {
        keep_freed_memory();
    }
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

/// mimalloc's `purge_delay` option: its number in mimalloc 3's `mi_option_t`
/// (the Rust bindings name no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Tells the allocator to keep the memory the process frees rather than give
/// it back to the OS a second after. A plan's simulations free and allocate the
/// same few hundred MB over and over: given back, each reuse faults the pages
/// in again and the kernel zeroes them (about a tenth of a plan's CPU, tens
/// of thousands of page faults, more under load since the delay is wall
/// time). Kept, the process stays at its peak until it exits, which a plan
/// reaches anyway.
fn keep_freed_memory() {
    // SAFETY: mi_option_set stores a number in mimalloc's option table; any
    // value is valid for purge_delay (-1: never purge).
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // mimalloc's default purge delay is 1,000 ms; its neighbours in the
        // option table default to 1 and 0.
        // SAFETY: mi_option_get reads mimalloc's option table.
        let default = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(default, 1_000);
        keep_freed_memory();
        // SAFETY: as above.
        let kept = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(kept, -1);
    }
}
