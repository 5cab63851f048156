//! Integration tests of the mock nodes over HTTP/2: servers are started with
//! `MockServer::start` on 127.0.0.1:0 and driven by the `h2` crate's client, over plain TCP
//! (h2c with prior knowledge) and over TLS (ALPN `h2`, trusting the written certificate).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use h2::Reason;
use http::{Method, Request, StatusCode};
use rpcbench::mock::{Chain, MockOptions, MockServer, MockTls};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"getSlot"}"#;
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn server(options: MockOptions) -> MockServer {
    MockServer::start(options).expect("start the mock node")
}

/// An HTTP/2 client over `io`, its connection driven by a task of its own.
async fn h2_over<T>(io: T) -> (SendRequest<Bytes>, JoinHandle<Result<(), h2::Error>>)
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (client, connection) = h2::client::handshake(io).await.expect("h2 handshake");
    (client, tokio::spawn(connection))
}

async fn h2c(addr: SocketAddr) -> (SendRequest<Bytes>, JoinHandle<Result<(), h2::Error>>) {
    h2_over(TcpStream::connect(addr).await.expect("connect")).await
}

/// One request on a new stream; the status and the whole body.
async fn request(
    client: &SendRequest<Bytes>,
    method: Method,
    path: &str,
    body: &str,
) -> Result<(StatusCode, Vec<u8>), h2::Error> {
    let mut client = client.clone().ready().await?;
    let request = Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1{path}"))
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    let (response, mut stream) = client.send_request(request, body.is_empty())?;
    if !body.is_empty() {
        stream.send_data(Bytes::copy_from_slice(body.as_bytes()), true)?;
    }
    let response = response.await?;
    let status = response.status();
    let mut body = response.into_body();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    Ok((status, data))
}

async fn post(client: &SendRequest<Bytes>, body: &str) -> Result<(StatusCode, Vec<u8>), h2::Error> {
    request(client, Method::POST, "/", body).await
}

/// The body of an HTTP/1.1 POST on a blocking connection (the mock answers with Content-Length).
fn post_http1(addr: SocketAddr, body: &str) -> Vec<u8> {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let at = reply.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete head") + 4;
    reply.split_off(at)
}

#[tokio::test]
async fn h2c_prior_knowledge_gets_the_same_body_as_http1() {
    let node = server(MockOptions::new(Chain::Static));
    let (client, _connection) = h2c(node.local_addr()).await;
    let (status, body) = post(&client, CALL).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, post_http1(node.local_addr(), CALL), "{}", String::from_utf8_lossy(&body));
    assert_eq!(body, br#"{"jsonrpc":"2.0","id":7,"result":"0x1"}"#);
}

#[tokio::test]
async fn h2c_answers_notifications_with_204_and_other_methods_with_405() {
    let node = server(MockOptions::new(Chain::Static));
    let (client, _connection) = h2c(node.local_addr()).await;
    let (status, body) = post(&client, r#"{"jsonrpc":"2.0","method":"getSlot"}"#).await.unwrap();
    assert_eq!((status, body.len()), (StatusCode::NO_CONTENT, 0));
    let (status, _) = request(&client, Method::GET, "/", "").await.unwrap();
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn h2c_serves_the_ethereum_rest_api_on_get() {
    let node = server(MockOptions::new(Chain::Ethereum));
    let (client, _connection) = h2c(node.local_addr()).await;
    let (status, body) = request(&client, Method::GET, "/no/such/route", "").await.unwrap();
    let (h1_status, h1_body) = {
        let mut stream = std::net::TcpStream::connect(node.local_addr()).unwrap();
        stream.write_all(b"GET /no/such/route HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).unwrap();
        let at = reply.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let status: u16 = String::from_utf8_lossy(&reply[9..12]).parse().unwrap();
        (status, reply.split_off(at))
    };
    assert_eq!(status.as_u16(), h1_status);
    assert_eq!(body, h1_body);
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413_over_h2() {
    let mut options = MockOptions::new(Chain::Static);
    options.max_body_bytes = 16;
    let node = server(options);
    let (client, _connection) = h2c(node.local_addr()).await;
    let (status, _) = post(&client, CALL).await.unwrap();
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn many_concurrent_streams_on_one_connection_are_all_answered() {
    let node = server(MockOptions::new(Chain::Static));
    let (client, _connection) = h2c(node.local_addr()).await;
    let calls: Vec<_> = (0..200)
        .map(|id| {
            let client = client.clone();
            tokio::spawn(async move {
                let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getSlot"}}"#);
                (id, post(&client, &body).await)
            })
        })
        .collect();
    for call in calls {
        let (id, answer) = call.await.unwrap();
        let (status, body) = answer.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1"}}"#).into_bytes());
    }
}

#[tokio::test]
async fn the_rate_limit_answers_429_with_retry_after_over_h2() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.rate_limit = Some(1.0);
    let node = server(options);
    let (client, _connection) = h2c(node.local_addr()).await;
    assert_eq!(post(&client, CALL).await.unwrap().0, StatusCode::OK, "the burst of one");
    let mut client = client.ready().await.unwrap();
    let (response, mut stream) =
        client.send_request(Request::post("http://127.0.0.1/").body(()).unwrap(), false).unwrap();
    stream.send_data(Bytes::from_static(CALL.as_bytes()), true).unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(response.headers()["content-type"], "application/json");
}

#[tokio::test]
async fn latency_delays_the_streams_of_one_connection_concurrently() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.latency = Some(rpcbench::mock::Latency::fixed(Duration::from_millis(300)));
    let node = server(options);
    let (client, _connection) = h2c(node.local_addr()).await;
    let started = std::time::Instant::now();
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { post(&client, CALL).await.unwrap().0 })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap(), StatusCode::OK);
    }
    let took = started.elapsed();
    // Ten streams of one connection wait out their latency together, not one after another.
    assert!(took >= Duration::from_millis(300) && took < Duration::from_millis(2500), "{took:?}");
}

#[tokio::test]
async fn max_streams_is_advertised_in_the_settings() {
    let mut options = MockOptions::new(Chain::Static);
    options.max_streams = Some(7);
    let node = server(options);
    let tcp = TcpStream::connect(node.local_addr()).await.unwrap();
    let (client, mut connection) = h2::client::handshake(tcp).await.unwrap();
    // An answer means the server's SETTINGS have been received and applied.
    let answered = tokio::select! {
        answered = post(&client, CALL) => answered,
        ended = &mut connection => panic!("connection ended: {ended:?}"),
    };
    assert_eq!(answered.unwrap().0, StatusCode::OK);
    assert_eq!(connection.max_concurrent_send_streams(), 7);
}

#[tokio::test]
async fn goaway_after_5_answers_5_of_8_streams_and_the_rest_fail_as_not_processed() {
    let mut options = MockOptions::new(Chain::Static);
    options.goaway_after = Some(5);
    let node = server(options);
    let (client, connection) = h2c(node.local_addr()).await;
    let mut client = client.ready().await.unwrap();
    let mut responses = Vec::new();
    for _ in 0..8 {
        let request = Request::post("http://127.0.0.1/").body(()).unwrap();
        let (response, mut stream) = client.send_request(request, false).unwrap();
        stream.send_data(Bytes::from_static(CALL.as_bytes()), true).unwrap();
        responses.push(response);
    }
    let (mut answered, mut gone_away) = (0, 0);
    for response in responses {
        match tokio::time::timeout(Duration::from_secs(10), response).await.expect("no hang") {
            Ok(response) => {
                assert_eq!(response.status(), StatusCode::OK);
                answered += 1;
            }
            Err(err) => {
                // Above the final GOAWAY's last-stream-id: a GOAWAY error; read by the server
                // before it (all of them here, sent at once): REFUSED_STREAM.
                assert!(err.is_go_away() || err.reason() == Some(Reason::REFUSED_STREAM), "{err:?}");
                gone_away += 1;
            }
        }
    }
    assert_eq!((answered, gone_away), (5, 3));
    let closed = tokio::time::timeout(Duration::from_secs(10), connection).await;
    assert!(closed.is_ok(), "the server closes the connection after the GOAWAY");
}

#[tokio::test]
async fn refuse_rate_1_resets_every_stream_with_refused_stream() {
    let mut options = MockOptions::new(Chain::Static);
    options.refuse_rate = 1.0;
    let node = server(options);
    let (client, _connection) = h2c(node.local_addr()).await;
    for _ in 0..3 {
        let err = post(&client, CALL).await.unwrap_err();
        assert_eq!(err.reason(), Some(Reason::REFUSED_STREAM), "{err:?}");
    }
}

/// A TLS client trusting `certificate`, offering `alpn`.
async fn tls_connect(
    addr: SocketAddr,
    certificate: &std::path::Path,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(certificate).expect("read the certificate") {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|proto| proto.to_vec()).collect();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await.expect("TLS handshake")
}

#[tokio::test]
async fn tls_with_alpn_h2_answers_over_http2() {
    let dir = tempdir("tls-h2");
    let mut options = MockOptions::new(Chain::Static);
    options.tls = Some(MockTls { dir: Some(dir.clone()) });
    let node = server(options);
    assert!(node.url().starts_with("https://"), "{}", node.url());
    let certificate = node.certificate_path().expect("a certificate").to_path_buf();
    assert!(certificate.starts_with(&dir));
    let tls = tls_connect(node.local_addr(), &certificate, &[b"h2", b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (client, _connection) = h2_over(tls).await;
    let (status, body) = post(&client, CALL).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, br#"{"jsonrpc":"2.0","id":7,"result":"0x1"}"#);
    // HTTP/1.1 over the same TLS port.
    let mut tls = tls_connect(node.local_addr(), &certificate, &[b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{CALL}",
        CALL.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    let _ = tls.read_to_end(&mut reply).await;
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200") && reply.ends_with(r#""result":"0x1"}"#), "{reply}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn http1_only_does_not_serve_the_h2c_preface_and_negotiates_http1_over_tls() {
    let mut options = MockOptions::new(Chain::Static);
    options.http2 = false;
    let node = server(options);
    let mut tcp = TcpStream::connect(node.local_addr()).await.unwrap();
    tcp.write_all(PREFACE).await.unwrap();
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut reply)).await.expect("closed");
    assert!(reply.is_empty() || reply.starts_with(b"HTTP/1.1 400"), "{}", String::from_utf8_lossy(&reply));

    let dir = tempdir("tls-h1");
    let mut options = MockOptions::new(Chain::Static);
    options.http2 = false;
    options.tls = Some(MockTls { dir: Some(dir.clone()) });
    let node = server(options);
    let tls = tls_connect(node.local_addr(), node.certificate_path().unwrap(), &[b"h2", b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn garbage_after_the_preface_does_not_stop_the_server() {
    let node = server(MockOptions::new(Chain::Static));
    for garbage in [
        &b"\xff\xff\xff\xff\xff\xff\xff\xff\xff"[..],
        b"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00",
        &[0u8; 100],
    ] {
        let mut tcp = TcpStream::connect(node.local_addr()).await.unwrap();
        tcp.write_all(PREFACE).await.unwrap();
        tcp.write_all(garbage).await.unwrap();
        let mut reply = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut reply)).await.expect("closed");
    }
    // A preface cut short, then silence, does not hold up other connections.
    let mut slow = TcpStream::connect(node.local_addr()).await.unwrap();
    slow.write_all(&PREFACE[..10]).await.unwrap();
    let (client, _connection) = h2c(node.local_addr()).await;
    assert_eq!(post(&client, CALL).await.unwrap().0, StatusCode::OK);
    assert_eq!(post_http1(node.local_addr(), CALL), br#"{"jsonrpc":"2.0","id":7,"result":"0x1"}"#);
}

/// A new directory of this test's own under the temporary directory.
fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-mock-http2-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
