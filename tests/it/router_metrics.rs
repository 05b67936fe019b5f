//! The vLLM Router's own metrics page, against pages recorded
//! from the real router 0.1.17 in front of two twins
//! (`fixtures/vllm-router/`).

use codendum_core::prom::router_page::{router_figures, RouterSnapshot};
use codendum_testkit::servers::fixture;

fn page(name: &str) -> RouterSnapshot {
    RouterSnapshot::from_text(&fixture(&format!("vllm-router/{name}"))).expect("a router page")
}

#[test]
fn a_bench_through_the_router_with_retries_the_client_never_saw() {
    let f = router_figures(
        &page("metrics-start.txt"),
        &page("metrics-after-retries.txt"),
    );
    let names: Vec<&str> = f.workers.iter().map(|w| w.worker.as_str()).collect();
    assert_eq!(names, ["http://127.0.0.1:18801", "http://127.0.0.1:18802"]);
    assert_eq!(f.workers[0].replica(), "127.0.0.1:18801");
    assert_eq!(f.workers[0].routed, Some(8.0));
    assert_eq!(f.workers[0].failures, Some(0.0));
    assert_eq!(f.workers[1].routed, Some(25.0));
    assert_eq!(f.workers[1].failures, Some(5.0));
    assert_eq!(f.workers[1].decisions["consistent_hash"], 25.0);
    assert_eq!(f.workers[1].healthy, Some(true));
    assert_eq!(f.workers[1].circuit.as_deref(), Some("closed"));
    assert_eq!((f.requests, f.model_calls), (28.0, 24.0));
    assert_eq!((f.retries, f.retries_exhausted), (5.0, 0.0));
    assert_eq!(f.hidden_retries(), 5.0);
    // Routed = served + retried failures + side calls: 8 + 16 model calls
    // served by the twins (their own counters), 5 failures, 4 side calls.
    let routed: f64 = f.workers.iter().filter_map(|w| w.routed).sum();
    assert_eq!(routed, 24.0 + 5.0 + (f.requests - f.model_calls));
    let note = f.retry_note(0).expect("retries to tell");
    assert!(note.contains("the client saw 0 fail"), "{note}");
}

#[test]
fn retries_that_ran_out_and_an_open_circuit_are_read() {
    let s = page("metrics-retries-exhausted.txt");
    assert_eq!(s.retries_exhausted_by_route["/v1/chat/completions"], 1.0);
    assert_eq!(s.workers["http://127.0.0.1:18802"].circuit, Some(1.0));
    let f = router_figures(&RouterSnapshot::default(), &s);
    assert_eq!(f.workers[1].circuit.as_deref(), Some("open"));
    assert_eq!(f.workers[1].failures, Some(16.0));
    assert_eq!(f.retries, 15.0);
    assert!(f.errors.is_empty(), "no other error family: {:?}", f.errors);
}

#[test]
fn a_backend_page_is_not_the_router_page() {
    let s = RouterSnapshot::from_text(&fixture("vllm-0.32/metrics-busy.txt")).unwrap();
    assert!(!s.is_router());
}

#[test]
fn the_twin_reproduces_the_real_routers_consistent_hash_assignment() {
    use codendum_twin::routing::vllm_ring::VllmRing;
    let workers = ["http://127.0.0.1:18911", "http://127.0.0.1:18912"];
    let ring = VllmRing::new(&workers);
    let text = fixture("vllm-router/consistent-hash-assignments.txt");
    let pairs: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once(' '))
        .collect();
    assert!(pairs.len() >= 10, "{} recorded assignments", pairs.len());
    let mut on = [0usize; 2];
    for (session, worker) in &pairs {
        let got = ring.session_worker(session).expect("a worker");
        assert_eq!(workers[got], *worker, "session {session}");
        on[got] += 1;
    }
    assert!(on[0] > 0 && on[1] > 0, "both workers appear: {on:?}");
}
