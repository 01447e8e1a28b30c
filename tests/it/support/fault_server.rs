//! A small HTTP/1.1 server on 127.0.0.1 for what a real registry will not do on demand:
//! paging with `Link`, 429 with `Retry-After`, 5xx, truncated JSON, pagination loops, page-size
//! rejection, slow answers, HEAD without `Docker-Content-Digest`, token endpoints, and acting as
//! an HTTP proxy (requests arrive in absolute form). Every request is logged for assertions.
//! Beside it, [`stalling_pages`] and [`stalling_after`]: tag pages declared, partly sent, then
//! stalled (the memory budget's attacks).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The request target: `/v2/...?n=1000`, or `http://host/...` through a proxy.
    pub target: String,
    pub headers: Vec<(String, String)>,
    /// The request body (by `Content-Length`).
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query (absolute-form targets included).
    pub fn path(&self) -> &str {
        let target = self.target.as_str();
        let target = match target.split_once("://") {
            Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
            None => target,
        };
        target.split('?').next().unwrap_or(target)
    }

    /// A query parameter's value.
    pub fn query(&self, key: &str) -> Option<String> {
        let query = self.target.split_once('?')?.1;
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == key).then(|| v.replace("%3A", ":").replace("%2F", "/"))
        })
    }
}

/// What to answer.
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering (a slow registry).
    pub delay: Option<Duration>,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            ..Default::default()
        }
    }

    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Reply::status(status)
            .header("Content-Type", "application/json")
            .body(body.to_string())
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// The running server; it stops when dropped.
pub struct FaultServer {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<Seen>>>,
    peak: Arc<AtomicUsize>,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultServer {
    /// Starts a server answering every request with `handler`.
    pub async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        Self::start_with(|_| handler).await
    }

    /// Starts a server whose handler is made knowing the server's address (for absolute
    /// links and token realms pointing back at it).
    pub async fn start_with<H>(make: impl FnOnce(SocketAddr) -> H) -> Self
    where
        H: Fn(&Seen) -> Reply + Send + Sync + 'static,
    {
        Self::start_inner(None, make).await
    }

    /// Starts an HTTPS server with this PEM certificate and key (one that names the hosts the
    /// clients ask for, reached through a CONNECT proxy).
    pub async fn start_tls(
        cert_pem: &str,
        key_pem: &str,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Self {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        image_reflector::registry::install_crypto_provider();
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .expect("certificate PEM");
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key PEM");
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("server TLS config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        Self::start_inner(Some(acceptor), |_| handler).await
    }

    async fn start_inner<H>(
        tls: Option<tokio_rustls::TlsAcceptor>,
        make: impl FnOnce(SocketAddr) -> H,
    ) -> Self
    where
        H: Fn(&Seen) -> Reply + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let log = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let connections = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(make(addr));
        let (l, f, p, c) = (
            log.clone(),
            in_flight.clone(),
            peak.clone(),
            connections.clone(),
        );
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                let (handler, log, in_flight, peak) =
                    (handler.clone(), l.clone(), f.clone(), p.clone());
                let tls = tls.clone();
                tokio::spawn(async move {
                    let counters = (&*in_flight, &*peak);
                    let _ = match tls {
                        Some(acceptor) => match acceptor.accept(stream).await {
                            Ok(stream) => serve(stream, &*handler, &log, counters).await,
                            Err(_) => Ok(()),
                        },
                        None => serve(stream, &*handler, &log, counters).await,
                    };
                });
            }
        });
        FaultServer {
            addr,
            log,
            peak,
            connections,
            task,
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Requests so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    /// The most requests that were being answered at once.
    pub fn peak_concurrency(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Connections accepted (a failed TLS attempt is one, and logs no request).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection, one request (every answer closes the connection).
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    handler: &Handler,
    log: &Mutex<Vec<Seen>>,
    counters: (&AtomicUsize, &AtomicUsize),
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        // A TLS ClientHello: answer in plain HTTP and close, as Go's server does, so the
        // client's handshake fails at once.
        if buf.is_empty() && chunk[0] == 0x16 {
            stream
                .write_all(b"HTTP/1.0 400 Bad Request\r\n\r\nmalformed HTTP request\n")
                .await?;
            return stream.shutdown().await;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or("").split(' ');
    let method = request_line.next().unwrap_or("").to_string();
    let target = request_line.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let seen = Seen {
        method,
        target,
        headers,
        body,
    };
    log.lock().unwrap().push(seen.clone());
    // Requests being answered: counted from the request to just before the answer is
    // written, so a client never sees an answer while its request still counts.
    let now = counters.0.fetch_add(1, Ordering::SeqCst) + 1;
    counters.1.fetch_max(now, Ordering::SeqCst);
    let reply = handler(&seen);
    if let Some(delay) = reply.delay {
        tokio::time::sleep(delay).await;
    }
    counters.0.fetch_sub(1, Ordering::SeqCst);
    let mut out = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    let declared = reply
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
    if !declared {
        out.push_str(&format!("Content-Length: {}\r\n", reply.body.len()));
    }
    out.push_str("Connection: close\r\n\r\n");
    stream.write_all(out.as_bytes()).await?;
    if seen.method != "HEAD" {
        stream.write_all(&reply.body).await?;
    }
    stream.shutdown().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// A registry whose every tag page is `length` bytes declared, all but the last 12 sent at
/// once, then nothing for ten minutes; counts the pages so sent.
pub async fn stalling_pages(length: usize) -> (String, Arc<AtomicUsize>) {
    stalling_after(length, length - 12).await
}

/// A registry whose every tag page is `length` bytes declared, of which it sends the first
/// `sent` (at least the page's opening, `{"tags": ["`) at once, then nothing for ten minutes;
/// counts the pages so sent.
pub async fn stalling_after(length: usize, sent: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let pages = Arc::new(AtomicUsize::new(0));
    let count = pages.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let mut request = vec![0; 4096];
                let _ = socket.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Content-Length: {length}\r\n\r\n"
                );
                let mut page = head.into_bytes();
                let body = page.len();
                page.extend_from_slice(b"{\"tags\": [\"");
                page.resize(page.len().max(body + sent), b'a');
                if socket.write_all(&page).await.is_ok() {
                    count.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_secs(600)).await;
            });
        }
    });
    (host, pages)
}
