//! The words of a search: the sentence per variant, the progress line per
//! probe, the verdict `plan.json` lists, and the search sections of
//! `plan.md` and `plan.html` (plain functions).

use std::fmt::Write as _;

use super::results::{PlanResults, VariantVerdict};
use super::search_results::{Probe, SeedsAnswer, VariantSearch};
use super::verdicts::{Bottleneck, JudgedCell, PERSISTENT};
use super::wording::{agree, check_text, missed_floors, missed_text, students, students_do};
use codendum_core::bound::Outcome;
use codendum_core::results::target_list::TargetList;
use codendum_core::targets::ClassroomTargets;
use codendum_report::format::{opt_fixed, opt_percent, xml_escape};

/// The progress line of one probe: `classroom-64k: 40 students: meets
/// targets` or `…: 50 students: misses ttft_p95_s 80.5 (target ≤ 75)`.
pub fn probe_line(variant: &str, cell: &JudgedCell, meets_ceilings: bool) -> String {
    let users = cell.result.spec.users;
    let what = if cell.meets_targets {
        "meets targets".to_string()
    } else if meets_ceilings {
        format!("meets the ceilings; below the floor: {}", missed_text(cell))
    } else {
        format!("misses {}", missed_text(cell))
    };
    // Targets whose value is on the right side but whose interval
    // straddles the limit: the class meets them by its figures, not surely.
    let unsure: Vec<String> = cell
        .checks
        .iter()
        .filter(|c| c.met && c.outcome == Outcome::Indeterminate)
        .map(check_text)
        .collect();
    let unsure = if unsure.is_empty() {
        String::new()
    } else {
        format!("; too close to call: {}", unsure.join(", "))
    };
    format!("{variant}: {}: {what}{unsure}", students(users))
}

/// The server figures behind a limit, judged on the first failure.
fn evidence(limit: Bottleneck, failed: &JudgedCell, v: &VariantSearch) -> String {
    let r = &failed.result;
    match limit {
        Bottleneck::Refused => format!(
            "{} of {} model calls refused ({}); the longest prompt answered had {} tokens",
            codendum_core::results::metrics::refused_calls(&r.summary),
            r.summary.requests,
            r.summary
                .errors_by_kind
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            r.summary.prompt_tokens_max.map_or("-".into(), |n| n.to_string())
        ),
        Bottleneck::KvMemory => format!(
            "peak KV {} %, {} preemptions, requests waiting with seats free in {} % of the samples",
            opt_percent(r.peak_kv_usage),
            r.preemptions.map_or("-".into(), |p| p.to_string()),
            opt_percent(r.blocked_share)
        ),
        Bottleneck::Seats | Bottleneck::DecodeThroughput if r.pinned_share.unwrap_or(0.0) >= PERSISTENT => {
            let probe = v.seats_probe.as_ref().map_or(String::new(), |p| {
                format!(
                    "; with {} seats the same class {} ({} tok/s)",
                    p.max_num_seqs,
                    if p.meets_ceilings {
                        "meets the ceilings"
                    } else {
                        "still misses them"
                    },
                    opt_fixed(p.server_output_tok_per_s, 0)
                )
            });
            format!(
                "running pinned at {} with requests waiting in {} % of the samples, server output {} tok/s{probe}",
                v.max_num_seqs,
                opt_percent(r.pinned_share),
                opt_fixed(r.server_output_tok_per_s, 0)
            )
        }
        _ => format!(
            "requests rarely waited (seats full in {} % of the samples), server output {} tok/s, speed per user {} tok/s",
            opt_percent(r.pinned_share),
            opt_fixed(r.server_output_tok_per_s, 0),
            opt_fixed(r.output_speed_p50_tok_s, 1)
        ),
    }
}

/// The sentence of a closed search. `carried` is the cell of `v.carries`
/// students, `failed` the first failure's.
pub fn search_summary(
    v: &VariantSearch,
    max: u32,
    carried: Option<&JudgedCell>,
    failed: Option<&JudgedCell>,
) -> String {
    let name = &v.variant;
    let why = |f: &JudgedCell| match v.limit {
        Some(limit) => format!(
            "the limit is {}: at {} it misses {} ({})",
            limit.short(),
            students(f.result.spec.users),
            missed_text(f),
            evidence(limit, f, v)
        ),
        None => String::new(),
    };
    let floors = carried
        .filter(|_| !v.floors_missed.is_empty())
        .map(|c| missed_floors(&c.checks));
    match (v.at_least, v.carries, failed, floors) {
        (true, _, _, None) => format!(
            "{name} carries at least {max} students: the largest class searched (--max-users {max}) meets every target."
        ),
        (true, _, _, Some(f)) => format!(
            "{name} meets every ceiling up to the largest class searched ({max} students, --max-users), but misses its floor there: {f}."
        ),
        (false, 0, Some(f), _) => format!(
            "{name}: even 1 student misses the targets; {}.",
            why(f)
        ),
        (false, n, Some(f), None) => format!("{name} carries {}; {}.", students(n), why(f)),
        (false, n, Some(f), Some(fl)) => format!(
            "{name} carries no class meeting every target: {} within the ceilings but {} the floor ({fl}); beyond, {}.",
            students_do(n, "stays", "stay"),
            agree(n, "misses", "miss"),
            why(f)
        ),
        (false, _, None, _) => format!("{name}: the search did not close."),
    }
}

/// The sentence of a search over several seeds, after the variant's name:
/// `carries 36–42 students over 5 seeds: 36 meets the ceilings in 5 of 5
/// seeds, 40 in 2, 42 in 1; seed 1: …` (the first seed's limit and
/// floors follow, from its own sentence).
pub fn seeds_summary(answer: &SeedsAnswer, first: &VariantSearch) -> String {
    let at_least = if answer.at_least.iter().any(|a| *a) {
        " (at least: the largest class searched met them)"
    } else {
        ""
    };
    let first_seed = answer.seeds.first().copied().unwrap_or_default();
    let detail = first
        .summary
        .strip_prefix(&first.variant)
        .unwrap_or(&first.summary)
        .trim_start();
    format!(
        "carries {}{at_least}; seed {first_seed}: {detail}",
        answer.sentence()
    )
}

/// The verdict `plan.json` and the report list for a searched variant:
/// `largest_class` is the answer when it meets every target.
pub fn verdict_of(v: &VariantSearch, targets: &ClassroomTargets) -> VariantVerdict {
    // With several seeds, the class a majority of them carries.
    let carries = v.seeds.as_ref().map_or(v.carries, |s| s.majority);
    VariantVerdict {
        variant: v.variant.clone(),
        profile: v.profile.clone(),
        max_num_seqs: v.max_num_seqs,
        targets: TargetList::from(targets),
        largest_class: (carries > 0 && v.meets_floors).then_some(carries),
        first_miss: v.first_failure,
        limit: v.limit,
        summary: v.summary.clone(),
    }
}

/// A probe's outcome in a word or three: `met`, `missed`, or
/// `met, below a floor` (the ceilings held, a floor did not).
fn probe_mark(p: &Probe) -> &'static str {
    match (p.meets_targets, p.meets_ceilings) {
        (true, _) => "met",
        (false, true) => "met, below a floor",
        (false, false) => "missed",
    }
}

/// The probes of each search as Markdown lines (empty without a search).
pub fn search_markdown(results: &PlanResults) -> String {
    let mut s = String::new();
    let Some(search) = &results.search else {
        return s;
    };
    let _ = writeln!(
        s,
        "## The search\n\nBisection over {}–{} students per server variant, steered by the \
         profile's ceilings (the `≤` targets); floors (`≥`) are judged at the answer. \
         Probes in the order the bisection ran them:\n",
        search.parameters.min_users, search.parameters.max_users
    );
    for v in &search.variants {
        let steps: Vec<String> = v
            .probes
            .iter()
            .map(|p| format!("{} {}", p.users, probe_mark(p)))
            .collect();
        let _ = writeln!(s, "- {}: {}", v.variant, steps.join(" → "));
        if let Some(seeds) = &v.seeds {
            let _ = writeln!(s, "  - {}", seeds.sentence());
            for (seed, probes) in seeds.seeds.iter().skip(1).zip(&seeds.probes) {
                let steps: Vec<String> = probes
                    .iter()
                    .map(|p| format!("{} {}", p.users, probe_mark(p)))
                    .collect();
                let _ = writeln!(s, "  - seed {seed}: {}", steps.join(" → "));
            }
        }
        if let Some(p) = &v.seats_probe {
            let _ = writeln!(
                s,
                "  - seats probe: {} with {} seats {} the ceilings",
                students(p.users),
                p.max_num_seqs,
                if p.meets_ceilings {
                    agree(p.users, "meets", "meet")
                } else {
                    agree(p.users, "misses", "miss")
                }
            );
        }
    }
    s.push('\n');
    s
}

/// The same as [`search_markdown`], as an HTML section.
pub fn search_html(results: &PlanResults) -> String {
    let mut s = String::new();
    let Some(search) = &results.search else {
        return s;
    };
    let _ = writeln!(
        s,
        "<h2>The search</h2>\n<p>Bisection over {}–{} students, steered by the ceilings; \
         floors judged at the answer.</p>\n<ul>",
        search.parameters.min_users, search.parameters.max_users
    );
    for v in &search.variants {
        let steps: Vec<String> = v
            .probes
            .iter()
            .map(|p| format!("{} {}", p.users, probe_mark(p)))
            .collect();
        let seeds = v
            .seeds
            .as_ref()
            .map_or(String::new(), |a| format!("; {}", a.sentence()));
        let _ = writeln!(
            s,
            "<li>{}: {}{}</li>",
            xml_escape(&v.variant),
            xml_escape(&steps.join(" → ")),
            xml_escape(&seeds)
        );
    }
    s.push_str("</ul>\n");
    s
}
