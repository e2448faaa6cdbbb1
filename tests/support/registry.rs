//! A tiny package registry on a loopback address of the test's choosing (127.0.0.2, …):
//! plain HTTP/1.1, one answer per connection, files from a table (a pip "simple" index, an
//! npm packument, a wheel). It records every connection it gets — the request line and
//! `Host`, or that the client started TLS — so tests can tell what reached it and how.
//!
//! Sandboxed commands under `[sandbox] allow_hosts` live in a network namespace of their
//! own: an address here is reachable from them only through the agent's egress proxy.
//! 127.0.0.1 is the one address clients never send through a proxy (`NO_PROXY`), so these
//! registries listen on the other loopback addresses (Linux routes all of 127.0.0.0/8 to
//! `lo`).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What one connection brought.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// `GET /path HTTP/1.1`, with the `Host` header.
    Request { line: String, host: Option<String> },
    /// A TLS handshake (the client tunnelled `https://` through the proxy).
    Tls,
    /// Anything else (or nothing).
    Other(Vec<u8>),
}

type Files = HashMap<String, (String, Vec<u8>)>;

pub struct Registry {
    pub addr: SocketAddr,
    files: Arc<Mutex<Files>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Registry {
    /// A registry on `ip` (a loopback address), on a port of the system's choosing.
    pub fn start(ip: &str) -> Registry {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let files: Arc<Mutex<Files>> = Arc::default();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (files2, seen2, stop2) = (files.clone(), seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (files, seen) = (files2.clone(), seen2.clone());
                std::thread::spawn(move || answer(stream, &files, &seen));
            }
        });
        Registry {
            addr,
            files,
            seen,
            stop,
        }
    }

    /// `http://IP:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `IP:PORT`, as an `allow_hosts` entry names it.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }

    /// Serve `body` at `path`.
    pub fn file(&self, path: &str, content_type: &str, body: impl Into<Vec<u8>>) {
        self.files
            .lock()
            .unwrap()
            .insert(path.to_string(), (content_type.to_string(), body.into()));
    }

    /// Every connection so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The request lines so far.
    pub fn requests(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter_map(|s| match s {
                Seen::Request { line, .. } => Some(line),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread so that it sees `stop`.
        let _ = TcpStream::connect(self.addr);
    }
}

fn answer(mut stream: TcpStream, files: &Mutex<Files>, seen: &Mutex<Vec<Seen>>) {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(30)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
        if head == [0x16] {
            seen.lock().unwrap().push(Seen::Tls);
            return;
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default().to_string();
    let mut parts = line.split(' ');
    let (Some(_method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        seen.lock().unwrap().push(Seen::Other(head));
        return;
    };
    if !version.starts_with("HTTP/") {
        seen.lock().unwrap().push(Seen::Other(head));
        return;
    }
    let host = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("host")
            .then(|| value.trim().to_string())
    });
    seen.lock().unwrap().push(Seen::Request {
        line: line.clone(),
        host,
    });
    let found = files.lock().unwrap().get(path).cloned();
    let (status, content_type, body) = match found {
        Some((content_type, body)) => ("200 OK", content_type, body),
        None => (
            "404 Not Found",
            "text/plain".to_string(),
            b"not here\n".to_vec(),
        ),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(&body);
}
