//! HTTPS targets: a rustls server on 127.0.0.1 with a certificate from a throwaway CA. The run
//! trusts it through `--cacert`, through `--insecure`, and refuses it with neither.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rpcbench::engine::config::TlsOptions;
use rpcbench::engine::Run;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::util::{closed_loop, requests};

struct TlsServer {
    url: String,
    ca_pem: String,
}

/// Starts an HTTPS server that answers every request with a JSON-RPC result for id 1.. in
/// order on each connection (the client sends ids in order per connection).
fn tls_server() -> TlsServer {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let leaf_cert = leaf_params.signed_by(&leaf_key, &issuer).unwrap();

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(leaf_cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((socket, _)) = listener.accept().await else { continue };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else { return };
                    let mut buf = vec![0u8; 8192];
                    let mut filled = 0;
                    loop {
                        let Ok(n) = tls.read(&mut buf[filled..]).await else { return };
                        if n == 0 {
                            return;
                        }
                        filled += n;
                        // Requests are small and arrive whole: answer each complete one.
                        while let Some(end) = request_end(&buf[..filled]) {
                            let text = String::from_utf8_lossy(&buf[..end]).to_string();
                            let id = text.split("\"id\":").nth(1).and_then(|rest| {
                                rest.split(|c: char| !c.is_ascii_digit()).next()?.parse::<u64>().ok()
                            });
                            let body =
                                format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#, id.unwrap_or(0));
                            let response =
                                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                            if tls.write_all(response.as_bytes()).await.is_err() {
                                return;
                            }
                            buf.copy_within(end..filled, 0);
                            filled -= end;
                        }
                    }
                });
            }
        });
    });
    TlsServer { url: format!("https://localhost:{port}/"), ca_pem: ca_cert.pem() }
}

/// The end of the first complete request in `bytes` (head plus Content-Length body).
fn request_end(bytes: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(bytes).ok()?;
    let head_end = text.find("\r\n\r\n")? + 4;
    let length = text[..head_end]
        .lines()
        .find_map(|line| line.strip_prefix("Content-Length: "))
        .and_then(|value| value.trim().parse::<usize>().ok())?;
    (bytes.len() >= head_end + length).then_some(head_end + length)
}

#[test]
fn https_with_a_ca_file_with_insecure_and_untrusted() {
    let server = tls_server();
    let dir = std::env::temp_dir().join(format!("rpcbench-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &server.ca_pem).unwrap();

    let mut trusted = closed_loop(&server.url, 2, requests(50));
    trusted.tls = TlsOptions { insecure: false, ca_file: Some(ca_file.clone()) };
    let record = Run::new(trusted).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 50, "{:?}", record.totals.counts);

    let mut insecure = closed_loop(&server.url, 2, requests(50));
    insecure.tls = TlsOptions { insecure: true, ca_file: None };
    let record = Run::new(insecure).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 50, "{:?}", record.totals.counts);

    let untrusted = closed_loop(&server.url, 1, requests(3));
    let record = Run::new(untrusted).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.connect, 3, "{:?}", record.totals.counts);
    std::fs::remove_dir_all(&dir).ok();
}
