//! HTTPS with a private CA: the client trusts exactly the CA file it is
//! given (curl's --cacert), and fails to connect without it.

use crate::client_support;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use client_support::{chat_event, serve_script, Step};
use codendum::client::{build_http_client, ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallRequest, Endpoint, ErrorKind, Transport};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

struct TestPki {
    ca_pem: String,
    server_cert: CertificateDer<'static>,
    server_key: PrivateKeyDer<'static>,
}

fn make_pki() -> TestPki {
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "codendum test CA");
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");

    let server_key = KeyPair::generate().expect("server key");
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .expect("server params");
    params
        .distinguished_name
        .push(DnType::CommonName, "codendum test server");
    let server_cert = params
        .signed_by(&server_key, &ca_cert, &ca_key)
        .expect("server cert");
    TestPki {
        ca_pem: ca_cert.pem(),
        server_cert: server_cert.der().clone(),
        server_key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
    }
}

/// Serves HTTPS on a loopback port; returns the base URL.
async fn spawn_tls(pki: &TestPki) -> String {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![pki.server_cert.clone()], pki.server_key.clone_key())
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let script = vec![
        Step::Chunk(chat_event(r#"{"role":"assistant","content":""}"#, None)),
        Step::Chunk(chat_event(r#"{"content":"secure"}"#, Some("stop"))),
        Step::Chunk("data: [DONE]\n\n".into()),
        Step::End,
    ];
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let script = script.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(socket).await {
                    let _ = serve_script(tls, script, Clock::real()).await;
                }
            });
        }
    });
    format!("https://127.0.0.1:{port}/v1")
}

fn request() -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: serde_json::json!({"model": "m", "messages": [], "stream": true}).into(),
        api_key: None,
        headers: Vec::new(),
        record_gaps: false,
        first_token: None,
    }
}

#[tokio::test]
async fn https_with_private_ca() {
    let pki = make_pki();
    let base = spawn_tls(&pki).await;
    let mut ca_file = tempfile::NamedTempFile::new().expect("temp");
    ca_file.write_all(pki.ca_pem.as_bytes()).expect("write CA");

    let trusted = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(&base).expect("base URL"),
        ClientOptions {
            cacert: Some(ca_file.path().to_path_buf()),
            timeout: Duration::from_secs(20),
            ..ClientOptions::default()
        },
    )
    .expect("client with CA");
    let o = trusted.call(request()).await;
    assert!(o.is_ok(), "{:?}", o.error);
    assert_eq!(o.message.content, "secure");

    let untrusted = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(&base).expect("base URL"),
        ClientOptions {
            timeout: Duration::from_secs(20),
            ..ClientOptions::default()
        },
    )
    .expect("client without CA");
    let o = untrusted.call(request()).await;
    let e = o.error.expect("must fail without the CA");
    assert_eq!(e.kind, ErrorKind::Tls, "{}", e.message);
    assert!(e.message.contains("certificate"), "{}", e.message);
}

/// A TLS front for `upstream` (plain TCP) that presents `good` until the
/// flag is set, then cuts every open connection and presents `bad`: a
/// proxy whose certificate lapsed mid-run.
async fn lapsing_tls_front(
    good: &TestPki,
    bad: &TestPki,
    upstream: std::net::SocketAddr,
    lapsed: Arc<std::sync::atomic::AtomicBool>,
) -> String {
    let acceptor = |pki: &TestPki| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(vec![pki.server_cert.clone()], pki.server_key.clone_key())
            .expect("server config");
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    };
    let (good, bad) = (acceptor(good), acceptor(bad));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let open = Arc::new(std::sync::Mutex::new(Vec::<tokio::task::AbortHandle>::new()));
        let watcher = {
            let (open, lapsed) = (open.clone(), lapsed.clone());
            tokio::spawn(async move {
                while !lapsed.load(std::sync::atomic::Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                for task in open.lock().expect("lock").drain(..) {
                    task.abort();
                }
            })
        };
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = if lapsed.load(std::sync::atomic::Ordering::SeqCst) {
                bad.clone()
            } else {
                good.clone()
            };
            let task = tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                if let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                }
            });
            open.lock().expect("lock").push(task.abort_handle());
        }
        watcher.abort();
    });
    format!("https://127.0.0.1:{port}/v1")
}

#[test]
fn a_certificate_that_lapses_mid_run_fails_the_bench_and_names_tls() {
    use crate::cli_support::{codendum, only_folder, read_json, start_twin, Running};
    let rt = crate::cli_support::runtime();
    let twin = start_twin(&rt, "classroom-64k", 20.0);
    let (good, other_ca) = (make_pki(), make_pki());
    let lapsed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let base = rt.block_on(lapsing_tls_front(
        &good,
        &other_ca,
        twin.addr(),
        lapsed.clone(),
    ));
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &good.ca_pem).expect("CA file");
    let results = dir.path().join("results");
    let mut cmd = codendum(dir.path());
    cmd.args([
        "bench",
        "--base-url",
        &base,
        "--concurrency",
        "2",
        "--shapes",
        "short",
    ]);
    cmd.args([
        "--requests-per-level",
        "24",
        "--output-tokens",
        "64",
        "--timeout",
        "5",
    ]);
    cmd.args(["--yes", "--allow-busy", "--no-report", "--metrics-url"]);
    cmd.arg(twin.metrics_url()).arg("--cacert").arg(&ca);
    cmd.arg("--results-dir").arg(&results);
    let bench = Running::spawn(cmd, dir.path(), "bench");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !codendum_testkit::servers::has_requests(&results) {
        assert!(std::time::Instant::now() < deadline, "no request finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    lapsed.store(true, std::sync::atomic::Ordering::SeqCst);
    let done = bench.wait(Duration::from_secs(120));
    assert_eq!(done.code, Some(1), "{}", done.both());
    let v = read_json(&only_folder(&results).join("summary.json"))["verdict"].clone();
    assert_eq!(v["status"], "failed", "{v:#}");
    assert!(v["errors_by_kind"]["tls"].as_u64() >= Some(1), "{v:#}");
    assert!(v["outages"][0]["kinds"]["tls"].as_u64() >= Some(1), "{v:#}");
    assert!(done.stderr.contains("tls "), "{}", done.both());
    drop(twin);
}

#[test]
fn ca_file_errors_are_config_errors() {
    let mut not_pem = tempfile::NamedTempFile::new().expect("temp");
    not_pem.write_all(b"hello").expect("write");
    assert!(build_http_client(Some(not_pem.path()), 8).is_err());
    let missing = std::path::Path::new("/nonexistent/ca.pem");
    assert!(build_http_client(Some(missing), 8).is_err());
    assert!(build_http_client(None, 0).is_ok());
}
