//! A TCP relay on 127.0.0.1 in front of a real server (a Distribution registry), which can be
//! made slow: while a delay is set, each chunk a client sends waits that long before it is
//! passed on, so every request (on a new connection or a kept-alive one) is answered that much
//! later. The server's answers are passed on as they come.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct SlowRelay {
    pub addr: SocketAddr,
    delay_ms: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl SlowRelay {
    /// Relays to `target` (`host:port`), without delay until [`SlowRelay::set_delay`].
    pub async fn start(target: &str) -> SlowRelay {
        let target: SocketAddr = target.parse().expect("a 127.0.0.1 address");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delay = delay_ms.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let delay = delay.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(target).await {
                        relay(client, server, delay).await;
                    }
                });
            }
        });
        SlowRelay {
            addr,
            delay_ms,
            task,
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }
}

async fn relay(client: TcpStream, server: TcpStream, delay: Arc<AtomicU64>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let wait = delay.load(Ordering::SeqCst);
            if wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            if server_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = server_write.shutdown().await;
    };
    let down = async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    };
    tokio::join!(up, down);
}

impl Drop for SlowRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}
