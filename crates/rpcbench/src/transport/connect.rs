//! Opening connections to the target: address resolution once per run, TCP with
//! `TCP_NODELAY`, and TLS through rustls with the system roots, an extra CA file, or no
//! verification at all (`--insecure`).

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use std::io;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::quiet_reads::{self, QuietReader};
use crate::field::{Field, SettingError};
use crate::settings::{Scheme, Target, TlsOptions};
use crate::slot_timer::SlotClock;

/// A plain or TLS stream.
#[derive(Debug)]
pub(crate) enum Stream {
    /// Plain TCP; with a [`QuietReader`], its replies are read at the worker's pacing slots
    /// ([`Stream::read_at_slots`]).
    Plain(TcpStream, Option<Box<QuietReader>>),
    /// TLS over TCP.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream, None) => Pin::new(stream).poll_read(cx, buf),
            Stream::Plain(stream, quiet @ Some(_)) => {
                if let Some(reader) = quiet {
                    if reader.clock().is_here() {
                        return reader.poll_read(stream, cx, buf);
                    }
                }
                // Its pacing timer is not on this thread (its worker is gone): read as bytes come.
                let _ = quiet_reads::set_quiet(stream.as_fd(), false);
                *quiet = None;
                Pin::new(stream).poll_read(cx, buf)
            }
            Stream::Tls(stream) => Pin::new(stream).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(stream, _) => Pin::new(stream).poll_write(cx, buf),
            Stream::Tls(stream) => Pin::new(stream).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream, _) => Pin::new(stream).poll_flush(cx),
            Stream::Tls(stream) => Pin::new(stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream, _) => Pin::new(stream).poll_shutdown(cx),
            Stream::Tls(stream) => Pin::new(stream).poll_shutdown(cx),
        }
    }
}

/// Why the engine could not prepare to connect.
#[derive(Debug)]
pub enum SetupError {
    /// The host name did not resolve.
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The CA file could not be read or holds no certificate.
    CaFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// No trusted roots at all.
    NoRoots,
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::Resolve { host, source } => {
                write!(f, "cannot resolve host '{host}': {source}")
            }
            SetupError::CaFile { path, message } => write!(f, "the CA file {path}: {message}"),
            SetupError::NoRoots => {
                write!(
                    f,
                    "no trusted root certificates found (trust a CA file, or skip the certificate check)"
                )
            }
        }
    }
}

impl SetupError {
    /// The setting at fault when it is one (a CA file that is not usable, no roots to trust
    /// without one), so that it is reported as bad usage naming that setting; `None` for a
    /// host that does not resolve.
    pub fn as_setting(&self) -> Option<SettingError> {
        match self {
            SetupError::Resolve { .. } => None,
            SetupError::CaFile { path, message } => {
                Some(SettingError::new(Field::CaFile, format!("{path}: {message}")))
            }
            SetupError::NoRoots => Some(SettingError::mentioning(
                Field::CaFile,
                "no trusted root certificates found: give {} FILE, or {} to skip the check",
                &[Field::CaFile, Field::Insecure],
            )),
        }
    }
}

impl std::error::Error for SetupError {}

/// The application protocol a TLS connection offers in ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alpn {
    /// `http/1.1` only.
    Http1,
    /// `h2` only (`--http2`: a server that does not speak HTTP/2 is refused, not fallen back
    /// from).
    Http2,
}

impl Stream {
    /// The protocol ALPN negotiated on a TLS stream (`None`: plain TCP, or no ALPN).
    pub(crate) fn negotiated_protocol(&self) -> Option<&[u8]> {
        match self {
            Stream::Plain(..) => None,
            Stream::Tls(tls) => tls.get_ref().1.alpn_protocol(),
        }
    }

    /// Whether replies are read at the pacing slots of `clock`, quietly ([`quiet_reads`]): asks
    /// for it (`Some`) or stops it (`None`), and returns whether it is so now. Only plain TCP
    /// on the thread where the clock's timer is current can.
    pub(crate) fn read_at_slots(&mut self, clock: Option<SlotClock>) -> bool {
        let Stream::Plain(tcp, quiet) = self else { return false };
        if clock.is_some() == quiet.is_some() {
            return quiet.is_some();
        }
        let Some(clock) = clock else {
            if quiet_reads::set_quiet(tcp.as_fd(), false).is_ok() {
                *quiet = None;
            }
            return quiet.is_some();
        };
        if !clock.is_here() {
            return false;
        }
        if quiet_reads::set_quiet(tcp.as_fd(), true).is_ok() {
            *quiet = Some(Box::new(QuietReader::new(clock)));
        }
        quiet.is_some()
    }

    /// When the first and the last bytes read quietly since the last call arrived (by the
    /// kernel's stamps); `(None, None)` when nothing was read quietly.
    pub(crate) fn take_arrivals(&mut self) -> (Option<Instant>, Option<Instant>) {
        match self {
            Stream::Plain(_, Some(reader)) => reader.take_arrivals(),
            _ => (None, None),
        }
    }
}

/// Opens connections to one target.
#[derive(Clone)]
pub(crate) struct Connector {
    addrs: Arc<[SocketAddr]>,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    connect_timeout: Duration,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("addrs", &self.addrs)
            .field("tls", &self.tls.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl Connector {
    /// Resolves the target and prepares TLS offering HTTP/1.1. Blocking (name resolution).
    pub(crate) fn new(
        target: &Target,
        tls_options: &TlsOptions,
        connect_timeout: Duration,
    ) -> Result<Self, SetupError> {
        Self::with_alpn(target, tls_options, connect_timeout, Alpn::Http1)
    }

    /// Like [`Connector::new`], offering `alpn` in the TLS handshake.
    pub(crate) fn with_alpn(
        target: &Target,
        tls_options: &TlsOptions,
        connect_timeout: Duration,
        alpn: Alpn,
    ) -> Result<Self, SetupError> {
        use std::net::ToSocketAddrs;
        let addrs: Vec<SocketAddr> = (target.host.as_str(), target.port)
            .to_socket_addrs()
            .map_err(|source| SetupError::Resolve { host: target.host.clone(), source })?
            .collect();
        if addrs.is_empty() {
            return Err(SetupError::Resolve {
                host: target.host.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no addresses"),
            });
        }
        let tls = match target.scheme {
            Scheme::Http => None,
            Scheme::Https => {
                let client = tls_client_config(tls_options, alpn)?;
                let name = ServerName::try_from(target.host.clone()).map_err(|_| SetupError::Resolve {
                    host: target.host.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "not a valid TLS server name",
                    ),
                })?;
                Some((TlsConnector::from(Arc::new(client)), name))
            }
        };
        Ok(Self { addrs: addrs.into(), tls, connect_timeout })
    }

    /// The time allowed to connect.
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// Opens one connection (TCP, then TLS if needed) within the connect timeout.
    pub(crate) async fn connect(&self) -> std::io::Result<Stream> {
        let attempt = async {
            let mut last_error = None;
            for addr in self.addrs.iter() {
                match TcpStream::connect(addr).await {
                    Ok(tcp) => {
                        tcp.set_nodelay(true)?;
                        return match &self.tls {
                            None => Ok(Stream::Plain(tcp, None)),
                            Some((connector, name)) => {
                                let tls = connector.connect(name.clone(), tcp).await?;
                                Ok(Stream::Tls(Box::new(tls)))
                            }
                        };
                    }
                    Err(err) => last_error = Some(err),
                }
            }
            Err(last_error.unwrap_or_else(|| std::io::Error::other("no address to connect to")))
        };
        match tokio::time::timeout(self.connect_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timeout")),
        }
    }
}

fn tls_client_config(options: &TlsOptions, alpn: Alpn) -> Result<ClientConfig, SetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|_| SetupError::NoRoots)?;
    let mut client = if options.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        for cert in native.certs {
            roots.add(cert).ok();
        }
        if let Some(path) = &options.ca_file {
            let shown = path.display().to_string();
            let pem = crate::util::files::read_limited(path, crate::util::files::MAX_BODY)
                .map_err(|err| SetupError::CaFile { path: shown.clone(), message: err.to_string() })?;
            let mut added = 0;
            for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(&pem) {
                let cert: CertificateDer<'static> =
                    cert.map_err(|err| SetupError::CaFile { path: shown.clone(), message: err.to_string() })?;
                roots
                    .add(cert)
                    .map_err(|err| SetupError::CaFile { path: shown.clone(), message: err.to_string() })?;
                added += 1;
            }
            if added == 0 {
                return Err(SetupError::CaFile {
                    path: shown,
                    message: "no PEM certificate in the file".into(),
                });
            }
        }
        if roots.is_empty() {
            return Err(SetupError::NoRoots);
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    client.alpn_protocols = match alpn {
        Alpn::Http1 => vec![b"http/1.1".to_vec()],
        Alpn::Http2 => vec![b"h2".to_vec()],
    };
    Ok(client)
}

/// `--insecure`: accepts any certificate, still checks handshake signatures.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
