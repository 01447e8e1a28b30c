//! An HTTP CONNECT proxy on 127.0.0.1 that sends each `host:port` to a local address, so the
//! client resolves nothing and speaks TLS end to end with the provider's real host name (the
//! servers' certificates name those hosts). Every CONNECT target is logged; one with no route
//! is refused with 502, so nothing leaves the machine.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct ConnectProxy {
    pub addr: SocketAddr,
    targets: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ConnectProxy {
    /// `routes`: `host:port` → the local server standing in for it.
    pub async fn start(routes: &[(&str, SocketAddr)]) -> ConnectProxy {
        let routes: Arc<HashMap<String, SocketAddr>> =
            Arc::new(routes.iter().map(|(k, v)| (k.to_string(), *v)).collect());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let targets = Arc::new(Mutex::new(Vec::new()));
        let seen = targets.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (routes, seen) = (routes.clone(), seen.clone());
                tokio::spawn(async move {
                    let _ = tunnel(stream, &routes, &seen).await;
                });
            }
        });
        ConnectProxy {
            addr,
            targets,
            task,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The CONNECT targets asked for so far.
    pub fn targets(&self) -> Vec<String> {
        self.targets.lock().unwrap().clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tunnel(
    mut client: TcpStream,
    routes: &HashMap<String, SocketAddr>,
    seen: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    seen.lock().unwrap().push(target.to_string());
    let route = (method == "CONNECT").then(|| routes.get(target)).flatten();
    let Some(route) = route else {
        client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            .await?;
        return client.shutdown().await;
    };
    let mut upstream = TcpStream::connect(route).await?;
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}
