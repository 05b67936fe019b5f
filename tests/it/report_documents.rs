//! report.md / compare.md snapshots from the fixtures in fixtures/report/,
//! and checks on the self-contained HTML.
//!
//! Set CODENDUM_REPORT_SAMPLE_DIR to a directory to also keep the rendered
//! sample reports there (to look at them in a browser).

use crate::report_support;

use codendum_report::{html, markdown, Comparison, TooFewRuns, DISCLAIMER};
use report_support::{assert_no_nan, bench, check_markup, classroom, references, settings};

fn render(f: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    f(&mut out).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("reports are UTF-8")
}

/// All documents: (file name, text).
fn documents() -> Vec<(&'static str, String)> {
    let a = bench("bench-64k.json");
    let b = bench("bench-64k-hc.json");
    let ca = classroom("classroom-64k.json");
    let cb = classroom("classroom-64k-hc.json");
    let bc = Comparison::of_bench(&[("64k".to_string(), &a), ("64k-hc".to_string(), &b)])
        .expect("two runs");
    let cc =
        Comparison::of_classroom(&[(String::new(), &ca), (String::new(), &cb)]).expect("two runs");
    vec![
        ("bench-report.md", render(|o| markdown::write_bench(&a, o))),
        (
            "classroom-report.md",
            render(|o| markdown::write_classroom(&ca, o)),
        ),
        (
            "bench-compare.md",
            render(|o| markdown::write_comparison(&bc, o)),
        ),
        (
            "classroom-compare.md",
            render(|o| markdown::write_comparison(&cc, o)),
        ),
        ("bench-report.html", render(|o| html::write_bench(&a, o))),
        (
            "classroom-report.html",
            render(|o| html::write_classroom(&ca, o)),
        ),
        (
            "bench-compare.html",
            render(|o| html::write_comparison(&bc, o)),
        ),
        (
            "classroom-compare.html",
            render(|o| html::write_comparison(&cc, o)),
        ),
    ]
}

#[test]
fn markdown_snapshots() {
    for (name, text) in documents().into_iter().filter(|(n, _)| n.ends_with(".md")) {
        assert_no_nan(&text);
        assert_eq!(
            text.matches(DISCLAIMER).count(),
            1,
            "{name}: one disclaimer"
        );
        assert!(!text.contains("<svg"), "{name}: no charts in Markdown");
        let snap = name.trim_end_matches(".md").replace('-', "_");
        settings().bind(|| insta::assert_snapshot!(snap, text));
    }
}

/// The HTML documents' snapshots (nothing volatile in them: the fixtures
/// fix every time and the version).
#[test]
fn html_snapshots() {
    for (name, text) in documents()
        .into_iter()
        .filter(|(n, _)| n.ends_with(".html"))
    {
        let snap = format!("{}_html", name.trim_end_matches(".html").replace('-', "_"));
        settings().bind(|| insta::assert_snapshot!(snap, text));
    }
}

#[test]
fn html_is_self_contained_and_well_formed() {
    let docs = documents();
    if let Some(dir) = std::env::var_os("CODENDUM_REPORT_SAMPLE_DIR") {
        std::fs::create_dir_all(&dir).expect("sample dir");
        for (name, text) in &docs {
            std::fs::write(std::path::Path::new(&dir).join(name), text).expect("sample written");
        }
    }
    for (name, text) in docs.iter().filter(|(n, _)| n.ends_with(".html")) {
        check_markup(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_no_nan(text);
        assert!(references(text).is_empty(), "{name}: no src/href at all");
        for banned in ["<script", "<link", "@import", "url("] {
            assert!(!text.contains(banned), "{name} contains {banned}");
        }
        // The only "http" is the SVG namespace, which is a name, not a fetch.
        let http = text.matches("http://").count() + text.matches("https://").count();
        let xmlns = text.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
        let in_text = text.matches("https://llm.lab.example:8443/v1").count();
        assert_eq!(http, xmlns + in_text, "{name}: unexpected http reference");
        assert_eq!(text.matches(&DISCLAIMER.replace('"', "&quot;")).count(), 1);
        assert!(text.matches("<svg").count() >= 4, "{name} has its charts");
    }
}

#[test]
fn html_holds_the_same_tables_as_markdown() {
    let docs = documents();
    let get = |n: &str| {
        docs.iter()
            .find(|(name, _)| *name == n)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    };
    let md = get("bench-report.md");
    let html = get("bench-report.html");
    // Each Markdown table row becomes one HTML row.
    let md_rows = md.lines().filter(|l| l.starts_with("| ")).count();
    let html_rows = html.matches("<tr>").count();
    assert!(md_rows > 20, "the fixture fills several tables");
    assert_eq!(md_rows, html_rows);
    assert!(
        html.contains("upstream connect error or disconnect/reset before headers | &lt;proxy&gt;")
    );
    assert!(
        md.contains("upstream connect error or disconnect/reset before headers \\| &lt;proxy&gt;")
    );
    assert!(html.contains("class=\"num fail\">FAIL<"));
}

#[test]
fn comparison_words_follow_the_good_direction() {
    let a = bench("bench-64k.json");
    let b = bench("bench-64k-hc.json");
    let c =
        Comparison::of_bench(&[("a".to_string(), &a), ("b".to_string(), &b)]).expect("two runs");
    assert_eq!(
        c.heading(),
        "Profile: classroom-64k vs classroom-64k-high-concurrency"
    );
    let section = c
        .sections
        .iter()
        .find(|s| s.title == "Short prompts, 24 concurrent")
        .expect("level");
    let figure = |n: &str| {
        section
            .figures
            .iter()
            .find(|f| f.name == n)
            .expect("figure")
    };
    let out = figure("Output").change(1).expect("both values");
    assert!(out.delta > 0.0);
    assert_eq!(out.assessment.word(), "better");
    let ttft = figure("TTFT P95").change(1).expect("both values");
    assert!(ttft.delta < 0.0);
    assert_eq!(ttft.assessment.word(), "better");
    assert_eq!(
        figure("Preemptions").change(1).map(|c| c.assessment.word()),
        Some("same")
    );
    assert_eq!(
        figure("Peak KV-cache usage")
            .change(1)
            .map(|c| c.assessment.word()),
        Some("changed")
    );
    assert_eq!(
        Comparison::of_bench(&[("a".to_string(), &a)]).err(),
        Some(TooFewRuns(1))
    );
}

#[test]
fn hostile_text_cannot_break_out() {
    let mut r = bench("bench-64k.json");
    let evil = "a|b\n<script>alert(\"x\")</script> & 'q' <img src=http://evil.example/x.png>";
    r.run.provenance.profile = Some(evil.to_string());
    r.parameters[0].value = evil.to_string();
    r.levels[0].shape = evil.to_string();
    r.levels[0].errors.insert(
        "bad_json".to_string(),
        codendum_core::results::ErrorGroup {
            count: 1,
            sample_message: evil.repeat(10),
        },
    );
    r.boundaries[0].label = evil.to_string();
    let html = render(|o| html::write_bench(&r, o));
    check_markup(&html).unwrap_or_else(|e| panic!("{e}"));
    assert!(!html.contains("<script") && !html.contains("<img"));
    assert!(references(&html).is_empty());
    let md = render(|o| markdown::write_bench(&r, o));
    assert!(!md.contains("<script") && !md.contains("<img"));
    // A line break in a value must not split a table row: every table line
    // keeps its leading and trailing pipe.
    for line in md.lines().filter(|l| l.starts_with('|')) {
        assert!(line.ends_with('|'), "{line}");
    }
    assert!(!md.contains("a|b"), "pipes are escaped");
}

#[test]
fn empty_reports_render() {
    let b = codendum_report::BenchReport::default();
    let c = codendum_report::ClassroomReport::default();
    for text in [
        render(|o| markdown::write_bench(&b, o)),
        render(|o| html::write_bench(&b, o)),
        render(|o| markdown::write_classroom(&c, o)),
        render(|o| html::write_classroom(&c, o)),
    ] {
        assert_no_nan(&text);
        assert!(text.contains("not guarantees"));
        if text.starts_with("<!DOCTYPE") {
            check_markup(&text).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn a_class_behind_a_router_that_retried_says_what_the_students_never_saw() {
    use codendum_core::prom::router_page::{router_figures, RouterSnapshot};
    let page = |name: &str| {
        RouterSnapshot::from_text(&codendum_testkit::servers::fixture(&format!(
            "vllm-router/{name}"
        )))
        .expect("a recorded router page")
    };
    let c = codendum_report::ClassroomReport {
        router: Some(router_figures(
            &page("metrics-start.txt"),
            &page("metrics-after-retries.txt"),
        )),
        ..Default::default()
    };
    let md = render(|o| markdown::write_classroom(&c, o));
    assert!(md.contains("## Router"), "{md}");
    assert!(md.contains("http://127.0.0.1:18802"), "{md}");
    assert!(
        md.contains("The router retried 5 requests after 5 worker failures; the client saw 0 fail"),
        "{md}"
    );
    let html = render(|o| html::write_classroom(&c, o));
    check_markup(&html).unwrap_or_else(|e| panic!("{e}"));
    // Without router figures, no section.
    let plain =
        render(|o| markdown::write_classroom(&codendum_report::ClassroomReport::default(), o));
    assert!(!plain.contains("## Router"));
}
