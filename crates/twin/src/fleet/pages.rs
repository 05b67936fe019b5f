//! `/metrics` of a fleet: the vLLM families with one label set per replica
//! (`engine="0"`, `"1"`, … as vLLM data parallel shows its engines), the
//! process and HTTP families once (HTTP counts summed over the replicas),
//! the step lateness of all engines together; and one replica's own page.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::super::metrics::{http_families, process_families, render_engine, MetricsContext};
use super::super::runner::StepLateness;
use super::super::server::TwinState;

/// Merges pages of the same families in the same order (one per engine,
/// from [`render_engine`]) into one: each family's HELP and TYPE once, then
/// its samples from every page in turn, as an exposition keeps a family's
/// samples together.
pub fn merge_families(pages: &[String]) -> String {
    let split: Vec<Vec<&str>> = pages.iter().map(|p| family_blocks(p)).collect();
    let mut out = String::with_capacity(pages.iter().map(String::len).sum());
    let families = split.first().map_or(0, Vec::len);
    for f in 0..families {
        for (i, blocks) in split.iter().enumerate() {
            let Some(block) = blocks.get(f) else { continue };
            for line in block.lines() {
                if i == 0 || !line.starts_with('#') {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    out
}

/// A page cut before each `# HELP` line that starts a family.
fn family_blocks(page: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = page.match_indices("# HELP ").map(|(i, _)| i).collect();
    starts.retain(|&i| i == 0 || page.as_bytes()[i - 1] == b'\n');
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let ends = starts.iter().skip(1).copied().chain([page.len()]);
    starts
        .iter()
        .zip(ends)
        .map(|(&a, b)| &page[a..b])
        .filter(|b| !b.is_empty())
        .collect()
}

/// The step lateness of several engines as one record (counts and
/// histograms add up, maxima are the largest; late steps of the first).
pub fn merge_lateness(parts: &[StepLateness]) -> StepLateness {
    let mut all = StepLateness::default();
    for p in parts {
        all.steps += p.steps;
        all.on_time += p.on_time;
        all.max_seconds = all.max_seconds.max(p.max_seconds);
        all.max_share = all.max_share.max(p.max_share);
        for (a, b) in all.histogram.counts.iter_mut().zip(&p.histogram.counts) {
            *a += b;
        }
        all.histogram.sum += p.histogram.sum;
        all.histogram.count += p.histogram.count;
        if all.late_steps.is_empty() {
            all.late_steps.clone_from(&p.late_steps);
        }
    }
    all
}

fn page_of(replicas: &[(usize, &Arc<TwinState>)]) -> String {
    let Some((_, first)) = replicas.first() else {
        return String::new();
    };
    let mut http: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    for (_, st) in replicas {
        for (k, n) in st.http_counts() {
            *http.entry(k).or_insert(0) += n;
        }
    }
    let ctx = MetricsContext {
        profile: &first.profile,
        started_unix: first.started_unix,
        http_requests: &http,
    };
    let engines: Vec<String> = replicas
        .iter()
        .map(|(i, st)| {
            let stats = st.stats.lock().map(|s| s.clone()).unwrap_or_default();
            render_engine(&stats, &ctx, *i)
        })
        .collect();
    let mut page = String::with_capacity(engines.iter().map(String::len).sum::<usize>() + 4096);
    process_families(&mut page, first.started_unix);
    page.push_str(&merge_families(&engines));
    http_families(&mut page, &ctx);
    let lateness: Vec<StepLateness> = replicas.iter().map(|(_, s)| s.step_lateness()).collect();
    page.push_str(&merge_lateness(&lateness).render());
    page
}

/// The fleet's `/metrics` page: every replica's vLLM families, labelled
/// `engine="<index>"`.
pub fn fleet_page(replicas: &[Arc<TwinState>]) -> String {
    let all: Vec<(usize, &Arc<TwinState>)> = replicas.iter().enumerate().collect();
    page_of(&all)
}

/// Replica `index`'s own page (`/metrics/replica/<index>`), its samples
/// labelled `engine="<index>"`; `None` past the last replica.
pub fn replica_page(replicas: &[Arc<TwinState>], index: usize) -> Option<String> {
    let st = replicas.get(index)?;
    Some(page_of(&[(index, st)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_merged_with_their_samples_together() {
        let a = "# HELP x X.\n# TYPE x gauge\nx{engine=\"0\"} 1\n# HELP y Y.\n# TYPE y counter\ny_total{engine=\"0\"} 2\n";
        let b = a.replace("engine=\"0\"", "engine=\"1\"");
        let m = merge_families(&[a.to_string(), b]);
        assert_eq!(
            m,
            "# HELP x X.\n# TYPE x gauge\nx{engine=\"0\"} 1\nx{engine=\"1\"} 1\n# HELP y Y.\n# TYPE y counter\ny_total{engine=\"0\"} 2\ny_total{engine=\"1\"} 2\n"
        );
    }

    #[test]
    fn lateness_adds_up() {
        let mut a = StepLateness::default();
        a.record(0.1, 0.001);
        let mut b = StepLateness::default();
        b.record(0.1, 0.02);
        b.record(0.1, 0.0);
        let m = merge_lateness(&[a, b]);
        assert_eq!((m.steps, m.on_time, m.histogram.count), (3, 2, 3));
        assert!((m.max_seconds - 0.02).abs() < 1e-12);
        assert_eq!(m.late_steps.len(), 1);
    }
}
