//! `plan.md`, `plan.json` and `plan.html` in `plan-<UTC timestamp>/`.

use codendum_core::results::{FolderKind, RunFolder};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::results::PlanResults;
use super::verdicts::JudgedCell;
use codendum_core::error::Error;
use codendum_report::format::{fixed, opt_count, opt_fixed, opt_percent, xml_escape};
use codendum_report::svg::{AxisTitle, LineChart, Series};

/// File names of a plan folder.
pub const PLAN_MD: &str = "plan.md";
/// See [`PLAN_MD`].
pub const PLAN_JSON: &str = "plan.json";
/// See [`PLAN_MD`].
pub const PLAN_HTML: &str = "plan.html";

/// Creates `root/plan-<UTC timestamp>/` and writes the three files into it.
/// Returns the folder.
pub fn write_plan(
    results: &PlanResults,
    root: &Path,
    utc: DateTime<Utc>,
) -> Result<PathBuf, Error> {
    let folder = RunFolder::create(root, FolderKind::Plan, utc)?;
    write_plan_files(results, folder.path())?;
    Ok(folder.into_path())
}

/// Writes `plan.json`, `plan.md` and `plan.html` into an existing folder.
pub fn write_plan_files(results: &PlanResults, folder: &Path) -> Result<(), Error> {
    let folder = RunFolder::at(folder);
    folder.write_json(PLAN_JSON, results)?;
    folder.write_text(PLAN_MD, &markdown(results))?;
    folder.write_text(PLAN_HTML, &html(results))?;
    Ok(())
}

fn minutes(s: Option<f64>) -> String {
    opt_fixed(s.map(|s| s / 60.0), 1)
}

/// The header and rows of the cells table (shared by Markdown and HTML).
fn table(results: &PlanResults) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let head = vec![
        "Server",
        "Users",
        "Server output tok/s",
        "TTFT P50 / P95 s",
        "Speed per user P50 tok/s",
        "Coding request P50 / P95 min",
        "Completed",
        "Peak waiting",
        "Peak KV %",
        "Preemptions",
        "Prefix hit %",
        "Targets",
    ];
    let rows = results
        .cells
        .iter()
        .map(|c: &JudgedCell| {
            let r = &c.result;
            let missed: Vec<&str> = c
                .checks
                .iter()
                .filter(|k| !k.met)
                .map(|k| k.key.as_str())
                .collect();
            vec![
                r.spec.variant(),
                r.spec.users.to_string(),
                opt_fixed(r.server_output_tok_per_s, 0),
                format!(
                    "{} / {}",
                    opt_fixed(r.ttft_p50_s, 1),
                    opt_fixed(r.ttft_p95_s, 1)
                ),
                opt_fixed(r.output_speed_p50_tok_s, 1),
                format!(
                    "{} / {}",
                    minutes(r.coding_request_p50_s),
                    minutes(r.coding_request_p95_s)
                ),
                format!("{} of {}", r.completed, r.coding_requests),
                opt_fixed(r.peak_waiting, 0),
                opt_percent(r.peak_kv_usage),
                opt_count(r.preemptions),
                opt_percent(r.prefix_hit_rate),
                if c.meets_targets {
                    "met".to_string()
                } else {
                    format!("missed: {}", missed.join(", "))
                },
            ]
        })
        .collect();
    (head, rows)
}

/// `plan.md`: the answer per server variant, then the table of cells.
pub fn markdown(results: &PlanResults) -> String {
    let p = &results.parameters;
    let mut s = String::new();
    let _ = writeln!(s, "# Class plan: the classroom in virtual time\n");
    let _ = writeln!(
        s,
        "Scenario {}, class {}, {} s window for new coding requests ({} s ramp-up), {}. \
         Every cell is a simulated class against the embedded twin (vLLM's scheduler, \
         KV cache and step-time model in software, on each profile's hardware: the GB10 \
         or a fitted server), run in virtual time. These are predictions of a model, \
         not measurements.\n",
        p.scenario,
        p.class.as_deref().unwrap_or("lab"),
        fixed(p.duration_s, 0),
        fixed(p.ramp_up_s, 0),
        if p.seeds > 1 {
            format!(
                "seeds {}–{} (the table shows the first seed's cells)",
                p.seed,
                p.seed + u64::from(p.seeds) - 1
            )
        } else {
            format!("seed {}", p.seed)
        }
    );
    let _ = writeln!(s, "## How large a class each server carries\n");
    for v in &results.verdicts {
        let _ = writeln!(s, "- {}", v.summary);
    }
    s.push('\n');
    for w in &results.region_warnings {
        let _ = writeln!(s, "**Warning:** {w}\n");
    }
    s.push_str(&super::search_text::search_markdown(results));
    s.push_str(&super::fleet_text::fleet_markdown(results));
    let _ = writeln!(s, "## Cells\n");
    let (head, rows) = table(results);
    let _ = writeln!(s, "| {} |", head.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
    for row in rows {
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    let _ = writeln!(s, "\n## Targets\n");
    for v in &results.verdicts {
        let list: Vec<String> = v
            .targets
            .targets
            .iter()
            .map(|t| format!("{} {} {}", t.key, t.bound.sign(), t.value))
            .collect();
        let list = if list.is_empty() {
            "none".to_string()
        } else {
            list.join(", ")
        };
        let _ = writeln!(s, "- {}: {list}", v.variant);
    }
    let _ = writeln!(
        s,
        "\nDefinitions: server output = generation tokens over [ramp-up end, window end] \
         divided by that span; TTFT and speed per user over successful model calls; \
         coding request = sent → the agent's final answer, completed requests only; \
         peaks, preemptions and hit rate over the whole run from the engine sampled \
         every simulated second."
    );
    s
}

fn chart(
    results: &PlanResults,
    title: &str,
    y: AxisTitle,
    pick: fn(&JudgedCell) -> Option<f64>,
) -> String {
    let series = results
        .verdicts
        .iter()
        .map(|v| {
            let points = results
                .cells
                .iter()
                .filter(|c| c.result.spec.variant() == v.variant)
                .filter_map(|c| Some((f64::from(c.result.spec.users), pick(c)?)))
                .collect();
            Series::new(v.variant.clone(), points)
        })
        .collect();
    LineChart::new(title, AxisTitle::new("Students", ""), y, series).render()
}

/// `plan.html`: the answers, two charts (users against TTFT P95 and
/// against the coding-request median) and the table.
pub fn html(results: &PlanResults) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Class plan</title>\n\
         <style>body{font-family:sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}\
         table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}\
         th{background:#f4f4f4}svg{max-width:100%;height:auto}</style>\n</head>\n<body>\n<h1>Class plan: the classroom in virtual time</h1>\n",
    );
    let _ = writeln!(s, "<h2>How large a class each server carries</h2>\n<ul>");
    for v in &results.verdicts {
        let _ = writeln!(s, "<li>{}</li>", xml_escape(&v.summary));
    }
    let _ = writeln!(s, "</ul>");
    for w in &results.region_warnings {
        let _ = writeln!(s, "<p><strong>Warning:</strong> {}</p>", xml_escape(w));
    }
    s.push_str(&super::search_text::search_html(results));
    s.push_str(&super::fleet_text::fleet_html(results));
    let _ = writeln!(s, "<h2>Charts</h2>");
    s.push_str(&chart(
        results,
        "Time to first token, P95",
        AxisTitle::new("TTFT P95", "s"),
        |c| c.result.ttft_p95_s,
    ));
    s.push('\n');
    s.push_str(&chart(
        results,
        "Time to complete a coding request, median",
        AxisTitle::new("Coding request P50", "min"),
        |c| c.result.coding_request_p50_s.map(|v| v / 60.0),
    ));
    let _ = writeln!(s, "\n<h2>Cells</h2>\n<table>\n<tr>");
    let (head, rows) = table(results);
    for h in head {
        let _ = write!(s, "<th>{}</th>", xml_escape(h));
    }
    let _ = writeln!(s, "</tr>");
    for row in rows {
        s.push_str("<tr>");
        for cell in row {
            let _ = write!(s, "<td>{}</td>", xml_escape(&cell));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n</body>\n</html>\n");
    s
}
