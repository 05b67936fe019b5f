//! The capture in front of an HTTPS upstream with a private CA, as the
//! lab's proxy is: with `--cacert` the stream passes; without it the TLS
//! handshake fails and the client gets vLLM's 502.

use std::sync::Arc;
use std::time::Duration;

use codendum::capture::{self, CaptureConfig};
use codendum_core::clock::Clock;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::capture_support::{calls, post, step_body};
use crate::client_support::{chat_event, serve_script, Step};

/// A private CA (PEM) and an HTTPS upstream signed by it; its base URL.
async fn https_upstream() -> (String, String) {
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "capture test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
    let key = KeyPair::generate().expect("key");
    let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    let cert = params.signed_by(&key, &ca_cert, &ca_key).expect("cert");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
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
            let (acceptor, script) = (acceptor.clone(), script.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(socket).await {
                    let _ = serve_script(tls, script, Clock::real()).await;
                }
            });
        }
    });
    (format!("https://127.0.0.1:{port}/v1"), ca_cert.pem())
}

#[tokio::test]
async fn an_https_upstream_needs_its_ca() {
    let (upstream, ca_pem) = https_upstream().await;
    let dir = tempfile::tempdir().expect("dir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).expect("write ca");
    let http = reqwest::Client::new();
    for (name, cacert) in [("with", Some(ca.clone())), ("without", None)] {
        let out = dir.path().join(name);
        let mut config = CaptureConfig::new(&upstream, "127.0.0.1:0", out.clone()).expect("config");
        config.cacert = cacert;
        let cap = capture::start(config).await.expect("capture starts");
        let r = post(
            &http,
            &cap.base_url(),
            "ses_tls",
            None,
            &step_body(&[], true),
        )
        .await;
        cap.shutdown(Duration::from_secs(2))
            .await
            .expect("shutdown");
        let line = &calls(&out)[0];
        if name == "with" {
            assert_eq!(r.status, 200);
            assert_eq!(r.assembler.message.content, "secure");
            assert_eq!(
                line["tokens_counted_by"], "client",
                "no usage: chunks counted"
            );
            assert_eq!(line["output_tokens"], 1);
        } else {
            assert_eq!(r.status, 502, "an unknown CA is refused");
            assert_eq!(line["status"], 502);
        }
    }
}

/// A private CA and a certificate it signed for 127.0.0.1, as PEM files in
/// `dir`: (CA, certificate, key).
fn lab_pki(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "lab CA");
    let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
    let key = KeyPair::generate().expect("key");
    let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    let cert = params.signed_by(&key, &ca_cert, &ca_key).expect("cert");
    let paths = (
        dir.join("lab-ca.pem"),
        dir.join("capture.pem"),
        dir.join("capture-key.pem"),
    );
    std::fs::write(&paths.0, ca_cert.pem()).expect("ca");
    std::fs::write(&paths.1, cert.pem()).expect("cert");
    std::fs::write(&paths.2, key.serialize_pem()).expect("key");
    (paths.0, paths.1, paths.2)
}

#[tokio::test]
async fn the_capture_listens_with_the_labs_certificate() {
    let twin = crate::capture_support::twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let (ca, cert, key) = lab_pki(dir.path());
    let out = dir.path().join("cap");
    let mut config =
        CaptureConfig::new(&twin.base_url(), "127.0.0.1:0", out.clone()).expect("config");
    config.tls = Some(capture::TlsFiles { cert, key });
    let cap = capture::start(config).await.expect("capture starts");
    assert_eq!(cap.plain_http_warning(), None);
    assert!(
        cap.base_url().starts_with("https://127.0.0.1:"),
        "{}",
        cap.base_url()
    );
    // A student whose OpenCode trusts the lab's CA.
    let trusting = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(
            reqwest::Certificate::from_pem(&std::fs::read(&ca).expect("ca")).expect("pem"),
        )
        .build()
        .expect("client");
    let messages = [serde_json::json!({"role": "user", "content": "hello"})];
    let body = step_body(&messages, true);
    let r = post(&trusting, &cap.base_url(), "ses_tls_in", None, &body).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // One that does not: its handshake fails, the capture goes on.
    let stranger = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .build()
        .expect("client");
    let refused = stranger
        .post(format!("{}/chat/completions", cap.base_url()))
        .json(&body)
        .send()
        .await;
    assert!(refused.is_err(), "an unknown CA is refused by the client");
    let again = post(&trusting, &cap.base_url(), "ses_tls_in", None, &body).await;
    assert_eq!(again.status, 200);
    let summary = cap.finish(Duration::from_secs(2)).await;
    twin.shutdown().await;
    assert_eq!(summary.calls, 2, "the refused client never reached a call");
    assert_eq!(summary.tls_failures, 1);
    assert!(summary.line(&out).contains("1 TLS handshake failed"));
    assert_eq!(calls(&out).len(), 2);
    let header: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capture.json")).expect("header"))
            .expect("json");
    assert!(header["listen"]
        .as_str()
        .is_some_and(|l| l.starts_with("https://")));
}

#[test]
fn plain_http_beyond_loopback_is_warned_about() {
    let warn = |listen: &str, tls: bool| {
        capture::plain_http_warning(listen.parse().expect("address"), tls)
    };
    assert_eq!(warn("127.0.0.1:8001", false), None);
    assert_eq!(warn("[::1]:8001", false), None);
    assert_eq!(warn("0.0.0.0:8001", true), None, "with TLS");
    for listen in ["0.0.0.0:8001", "10.1.2.3:8001", "[::]:8001"] {
        let w = warn(listen, false).expect("a warning");
        assert!(
            w.contains("plain HTTP")
                && w.contains(listen)
                && w.contains("--tls-cert")
                && !w.contains('\n'),
            "{w}"
        );
    }
}
