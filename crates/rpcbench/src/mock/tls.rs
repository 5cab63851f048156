//! HTTPS for the mock nodes (`serve --tls`): a self-signed certificate for `localhost` and
//! `127.0.0.1` made with rcgen at start, written as PEM files so clients can trust it, and the
//! rustls server configuration that offers ALPN `h2` (unless HTTP/2 is off) and `http/1.1`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

use super::{MockError, MockTls};

/// The certificate's file name inside the TLS directory.
const CERT_FILE: &str = "cert.pem";
/// The private key's file name inside the TLS directory.
const KEY_FILE: &str = "key.pem";

/// A ready TLS setup: the acceptor and where the certificate was written.
pub(crate) struct Prepared {
    pub(crate) acceptor: TlsAcceptor,
    pub(crate) certificate: PathBuf,
}

/// Makes the certificate, writes it and its key into the directory `tls` names (a new one
/// under the temporary directory if none) and builds the acceptor.
pub(crate) fn prepare(tls: &MockTls, http2: bool) -> Result<Prepared, MockError> {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let certified = rcgen::generate_simple_self_signed(names)
        .map_err(|err| MockError::Tls(format!("cannot generate a certificate: {err}")))?;
    let dir = match &tls.dir {
        Some(dir) => {
            fs::create_dir_all(dir).map_err(|err| write_error(dir, err))?;
            dir.clone()
        }
        None => new_temp_dir()?,
    };
    let certificate = dir.join(CERT_FILE);
    let key = dir.join(KEY_FILE);
    fs::write(&certificate, certified.cert.pem()).map_err(|err| write_error(&certificate, err))?;
    write_private(&key, certified.signing_key.serialize_pem()).map_err(|err| write_error(&key, err))?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| MockError::Tls(err.to_string()))?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(certified.cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der())),
        )
        .map_err(|err| MockError::Tls(err.to_string()))?;
    config.alpn_protocols =
        if http2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
    Ok(Prepared { acceptor: TlsAcceptor::from(Arc::new(config)), certificate })
}

fn write_error(path: &Path, err: io::Error) -> MockError {
    MockError::Tls(format!("cannot write {}: {err}", path.display()))
}

/// A directory of its own under the temporary directory.
fn new_temp_dir() -> Result<PathBuf, MockError> {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let dir = base.join(format!("rpcbench-mock-tls-{}-{nanos}-{attempt}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(write_error(&dir, err)),
        }
    }
    Err(MockError::Tls(format!("cannot create a new directory under {}", base.display())))
}

/// Writes the private key readable by its owner only (where the platform has modes).
fn write_private(path: &Path, text: String) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    io::Write::write_all(&mut options.open(path)?, text.as_bytes())
}
