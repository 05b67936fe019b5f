//! Writing a class file: every distribution in a table of its own, with a
//! comment line giving its median, P90 and mean for the reader (the
//! figures are not read back).

use std::fmt::Write as _;

use super::dist::{Distribution, Shape};
use super::sessions::RequestPrompt;
use super::{Class, CLASS_SCHEMA_VERSION};

/// A number as TOML writes it: whole numbers with `.0`, others with up to
/// four decimals, and those too small or too large for that in exponent
/// form (a value that rounds to a bare `3.` is written `3.0`).
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else if x.abs() < 1e-3 || x.abs() >= 1e15 {
        format!("{x:e}")
    } else {
        let s = format!("{x:.4}");
        let s = s.trim_end_matches('0');
        if s.ends_with('.') {
            format!("{s}0")
        } else {
            s.to_string()
        }
    }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The figures of a distribution, for its comment line.
pub fn describe(d: &Distribution) -> String {
    let short = |x: f64| {
        if x.abs() >= 100.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.2}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        }
    };
    match d.shape {
        Shape::Value(v) => format!("always {}", short(v)),
        _ => format!(
            "P50 {}, P90 {}, mean {}, {}–{}",
            short(d.quantile(0.5)),
            short(d.quantile(0.9)),
            short(d.mean()),
            short(d.min()),
            short(d.max())
        ),
    }
}

fn section(out: &mut String, name: &str, about: &str, d: &Distribution) {
    let _ = writeln!(out, "\n# {about}: {}", describe(d));
    let _ = writeln!(out, "[{name}]");
    body(out, d);
}

fn body(out: &mut String, d: &Distribution) {
    let _ = writeln!(out, "source = {}", quote(&d.source));
    let _ = writeln!(out, "count = {}", d.count);
    match &d.shape {
        Shape::Value(v) => {
            let _ = writeln!(out, "value = {}", num(*v));
        }
        Shape::Quantiles(points) => {
            let rows: Vec<String> = points
                .iter()
                .map(|(p, v)| format!("[{}, {}]", num(*p), num(*v)))
                .collect();
            let _ = writeln!(out, "quantiles = [{}]", rows.join(", "));
        }
        Shape::Samples(s) => {
            let _ = writeln!(out, "samples = [");
            for chunk in s.chunks(10) {
                let row: Vec<String> = chunk.iter().map(|x| num(*x)).collect();
                let _ = writeln!(out, "  {},", row.join(", "));
            }
            let _ = writeln!(out, "]");
        }
    }
}

/// The class as class-file text (what [`super::Class::parse`] reads back
/// to an equal class).
pub fn to_toml(class: &Class) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# A codendum class file: the distributions a simulated class draws from\n\
         # (format: docs/class-file.md)."
    );
    let _ = writeln!(out, "schema_version = {CLASS_SCHEMA_VERSION}");
    let _ = writeln!(out, "name = {}", quote(&class.name));
    let _ = writeln!(out, "description = {}", quote(&class.description));
    let p = &class.person;
    let _ = writeln!(out, "\n[person]");
    if p.next_session {
        let _ = writeln!(
            out,
            "# A person whose session is over starts a new one while the window is open.\nnext_session = true"
        );
    }
    section(
        &mut out,
        "person.pause_s",
        "Seconds from a final answer to the person's next request",
        &p.pause_s,
    );
    section(
        &mut out,
        "person.follow_ups",
        "Coding requests after the first of a session",
        &p.follow_ups,
    );
    if let Some(d) = &p.session_s {
        section(
            &mut out,
            "person.session_s",
            "Seconds a person works from their first request",
            d,
        );
    }
    let a = &class.agent;
    let _ = writeln!(out, "\n[agent]");
    let _ = writeln!(
        out,
        "# Fraction of coding requests that start a subagent.\nsubagent_share = {}",
        num(a.subagent_share)
    );
    let _ = writeln!(
        out,
        "# Fraction of sessions whose first test run fails.\nfirst_test_fails = {}",
        num(a.first_test_fails)
    );
    section(
        &mut out,
        "agent.calls_per_request",
        "Model calls per coding request (agent and subagent steps)",
        &a.calls_per_request,
    );
    section(
        &mut out,
        "agent.subagent_calls",
        "Model calls per subagent session",
        &a.subagent_calls,
    );
    for (name, about, d) in [
        (
            "appended_tokens",
            "Tokens a call adds to the session's previous prompt and answer",
            &a.appended_tokens,
        ),
        (
            "prompt_tokens",
            "Tokens of a session's first prompt",
            &a.prompt_tokens,
        ),
        (
            "shared_prompt_tokens",
            "Tokens at the head of a first prompt that every session shares",
            &a.shared_prompt_tokens,
        ),
        (
            "compact_at_tokens",
            "Prompt tokens at which the client compacted",
            &a.compact_at_tokens,
        ),
    ] {
        if let Some(d) = d {
            section(&mut out, &format!("agent.{name}"), about, d);
        }
    }
    for (i, b) in a.prompt_tokens_by_call.iter().enumerate() {
        let upto = a
            .prompt_tokens_by_call
            .get(i + 1)
            .map_or("on".to_string(), |n| format!("to {}", n.from_call - 1));
        let _ = writeln!(
            out,
            "\n# Prompt tokens of a session's main-agent calls {} {upto}: {}",
            b.from_call,
            describe(&b.tokens)
        );
        let _ = writeln!(out, "[[agent.prompt_tokens_by_call]]");
        let _ = writeln!(out, "from_call = {}", b.from_call);
        body(&mut out, &b.tokens);
    }
    if let Some(sh) = &a.sessions {
        let _ = writeln!(
            out,
            "\n# Recorded sessions drawn whole, {} of them (mean {:.1} model calls a session):\n\
             # each row a session's model calls per coding request, in order.",
            sh.calls.len(),
            sh.mean_calls()
        );
        let _ = writeln!(out, "[agent.sessions]");
        let _ = writeln!(out, "source = {}", quote(&sh.source));
        let _ = writeln!(out, "calls = [");
        for row in &sh.calls {
            let cells: Vec<String> = row.iter().map(u32::to_string).collect();
            let _ = writeln!(out, "  [{}],", cells.join(", "));
        }
        let _ = writeln!(out, "]");
        if let Some(prompts) = &sh.prompt_tokens {
            let _ = writeln!(
                out,
                "# Each session's prompt tokens at its requests' first and last main-agent calls."
            );
            for (key, pick) in [
                (
                    "first_prompt_tokens",
                    (|q| q.first) as fn(&RequestPrompt) -> u64,
                ),
                ("last_prompt_tokens", |q| q.last),
            ] {
                let _ = writeln!(out, "{key} = [");
                for row in prompts {
                    let cells: Vec<String> = row.iter().map(|q| pick(q).to_string()).collect();
                    let _ = writeln!(out, "  [{}],", cells.join(", "));
                }
                let _ = writeln!(out, "]");
            }
        }
    }
    let _ = writeln!(out, "\n[agent.output_tokens]");
    for (kind, d) in a.output_tokens.kinds() {
        section(
            &mut out,
            &format!("agent.output_tokens.{kind}"),
            &format!("Output tokens of a {} call", kind.replace('_', " ")),
            d,
        );
    }
    let _ = writeln!(out, "\n[agent.tool_s]");
    for (kind, d) in a.tool_s.kinds() {
        section(
            &mut out,
            &format!("agent.tool_s.{kind}"),
            &format!("Client seconds per {} call", kind.replace('_', " ")),
            d,
        );
    }
    out
}

#[cfg(test)]
mod number_tests {
    use super::num;

    #[test]
    fn every_number_is_a_toml_float_that_reads_back_close() {
        for x in [
            0.0, 3.0, 2.5, 3.00001, 0.00001, 1.5e-7, 123.45678, 2.0e16, -0.25,
        ] {
            let text = format!("x = {}", num(x));
            let v: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let back = v["x"].as_float().unwrap_or_else(|| panic!("{text}"));
            assert!((back - x).abs() <= 1e-4 * x.abs().max(1.0), "{x} -> {text}");
        }
    }
}
