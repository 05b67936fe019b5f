//! The capture listening with TLS: the lab's certificate and key (PEM, as
//! the proxy's), handshakes done beside the accept loop so a slow or
//! broken client holds up no other, and failed handshakes counted.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::notice::{CaptureNotice, Notifier};
use codendum_core::error::ConfigError;

/// How long a client gets to finish its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The certificate chain and private key to listen with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain, the server's certificate first (`--tls-cert`).
    pub cert: PathBuf,
    /// PEM private key of that certificate (`--tls-key`).
    pub key: PathBuf,
}

fn bad(what: &'static str, path: &Path, reason: impl Into<String>) -> ConfigError {
    ConfigError::BadFile {
        what,
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads the certificate chain and key and checks that they belong
/// together: a server configuration ready to accept with.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, ConfigError> {
    const CERT: &str = "TLS certificate (--tls-cert)";
    const KEY: &str = "TLS key (--tls-key)";
    let pem = std::fs::read(&files.cert).map_err(|source| ConfigError::Unreadable {
        what: CERT,
        path: files.cert.clone(),
        source,
    })?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            bad(
                CERT,
                &files.cert,
                format!("not a PEM certificate chain: {e}"),
            )
        })?;
    if chain.is_empty() {
        return Err(bad(CERT, &files.cert, "holds no PEM certificate"));
    }
    let pem = std::fs::read(&files.key).map_err(|source| ConfigError::Unreadable {
        what: KEY,
        path: files.key.clone(),
        source,
    })?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        bad(
            KEY,
            &files.key,
            format!("not a PEM private key (PKCS#8, PKCS#1 or SEC1): {e}"),
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(CERT, &files.cert, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            bad(
                KEY,
                &files.key,
                format!(
                    "does not go with the certificate {}: {e}",
                    files.cert.display()
                ),
            )
        })?;
    // The capture speaks HTTP/1.1 only, as the clients it stands in front of.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Connections whose handshake finished, ready to serve.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
    acceptor: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `tcp`, handshaking each connection on a task of its own;
    /// a failed handshake is counted in `failures` (the first is said).
    pub fn new(
        tcp: TcpListener,
        config: Arc<rustls::ServerConfig>,
        failures: Arc<AtomicU64>,
        notices: Notifier,
    ) -> std::io::Result<TlsListener> {
        let addr = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let tls = TlsAcceptor::from(config);
        let acceptor = tokio::spawn(async move {
            loop {
                let (socket, peer) = match tcp.accept().await {
                    Ok(pair) => pair,
                    Err(_) => {
                        // Out of file descriptors and the like: breathe, retry.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                let (tls, tx) = (tls.clone(), tx.clone());
                let (failures, notices) = (failures.clone(), notices.clone());
                tokio::spawn(async move {
                    let reason = match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(socket))
                        .await
                    {
                        Ok(Ok(stream)) => {
                            let _ = tx.send((stream, peer)).await;
                            return;
                        }
                        Ok(Err(e)) => codendum_core::error::one_line(&e),
                        Err(_) => format!("no handshake within {} s", HANDSHAKE_TIMEOUT.as_secs()),
                    };
                    if failures.fetch_add(1, Ordering::SeqCst) == 0 {
                        notices.send(CaptureNotice::TlsHandshakeFailed { peer, reason });
                    }
                });
            }
        });
        Ok(TlsListener {
            ready,
            addr,
            acceptor,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(pair) => pair,
            // The accept loop ended (it never does while the listener
            // lives): nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}
