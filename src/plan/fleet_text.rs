//! The fleet sections of `plan.md` and `plan.html`: the fewest replicas per
//! router, and per cell the replicas, router, prefix hit rate, each
//! replica's peaks (running, waiting, KV) and the imbalance (plain functions).

use std::fmt::Write as _;

use super::fleet::FleetPlan;
use super::results::PlanResults;
use super::verdicts::JudgedCell;
use codendum_report::format::{opt_fixed, opt_percent, xml_escape};

/// The header and rows of the fleet table, or `None` without fleets.
pub fn fleet_table(results: &PlanResults) -> Option<(Vec<&'static str>, Vec<Vec<String>>)> {
    let plan = results.fleet.as_ref()?;
    let head = vec![
        "Server",
        "Users",
        "Replicas",
        "Router",
        "Prefix hit %",
        "Peak running / waiting / KV % per replica",
        "Imbalance (max / mean served)",
        "Targets",
    ];
    let rows = results.cells.iter().map(|c| row(plan, c)).collect();
    Some((head, rows))
}

fn row(plan: &FleetPlan, c: &JudgedCell) -> Vec<String> {
    let r = &c.result;
    let v = plan.variants.iter().find(|v| v.name == r.spec.profile);
    let replicas = v.map_or(1, |v| v.replicas);
    let router = v
        .and_then(|v| v.router.clone())
        .unwrap_or_else(|| "-".into());
    let per_replica = match &r.summary.server_fleet {
        Some(f) => f
            .replicas
            .iter()
            .map(|x| {
                format!(
                    "{}: {} / {} / {}",
                    x.replica,
                    opt_fixed(x.peak_running, 0),
                    opt_fixed(x.peak_waiting, 0),
                    opt_percent(x.peak_kv_usage)
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        None => format!(
            "0: {} / {} / {}",
            opt_fixed(r.peak_running, 0),
            opt_fixed(r.peak_waiting, 0),
            opt_percent(r.peak_kv_usage)
        ),
    };
    let imbalance = match &r.summary.server_fleet {
        Some(f) => opt_fixed(f.imbalance, 2),
        None if r.summary.requests > 0 => "1.00".into(),
        None => "-".into(),
    };
    vec![
        r.spec.variant(),
        r.spec.users.to_string(),
        replicas.to_string(),
        router,
        opt_percent(r.prefix_hit_rate),
        per_replica,
        imbalance,
        if c.meets_targets { "met" } else { "missed" }.to_string(),
    ]
}

/// The fleet section of `plan.md` (empty without fleets).
pub fn fleet_markdown(results: &PlanResults) -> String {
    let (Some(plan), Some((head, rows))) = (results.fleet.as_ref(), fleet_table(results)) else {
        return String::new();
    };
    let mut s = String::from("## Fleets\n\n");
    if !plan.lines.is_empty() {
        let _ = writeln!(s, "Fewest replicas that meet the targets, per router:\n");
        for l in &plan.lines {
            let _ = writeln!(s, "- {l}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "| {} |", head.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
    for row in rows {
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    let _ = writeln!(
        s,
        "\nEach replica is its own engine (scheduler, KV blocks, prefix cache); the \
         prefix hit rate is the fleet's, peaks are each replica's over the whole run, \
         the imbalance is the most requests one replica was sent over the mean.\n"
    );
    s
}

/// The fleet section of `plan.html` (empty without fleets).
pub fn fleet_html(results: &PlanResults) -> String {
    let (Some(plan), Some((head, rows))) = (results.fleet.as_ref(), fleet_table(results)) else {
        return String::new();
    };
    let mut s = String::from("<h2>Fleets</h2>\n");
    if !plan.lines.is_empty() {
        s.push_str("<p>Fewest replicas that meet the targets, per router:</p>\n<ul>\n");
        for l in &plan.lines {
            let _ = writeln!(s, "<li>{}</li>", xml_escape(l));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("<table>\n<tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", xml_escape(h));
    }
    s.push_str("</tr>\n");
    for row in rows {
        s.push_str("<tr>");
        for cell in row {
            let _ = write!(s, "<td>{}</td>", xml_escape(&cell));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}
