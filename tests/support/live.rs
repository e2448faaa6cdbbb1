//! A client of a live session's socket (docs/protocol.md §4.5), line by line, as another
//! terminal would be; and where a running agent serves its session.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// The socket of session `id` under `home`.
pub fn socket(home: &Path, id: &str) -> PathBuf {
    home.join("run").join(format!("{id}.sock"))
}

pub struct Socket {
    write: OwnedWriteHalf,
    lines: Lines<BufReader<OwnedReadHalf>>,
}

impl Socket {
    pub async fn connect(path: &Path) -> Socket {
        let stream = UnixStream::connect(path)
            .await
            .unwrap_or_else(|e| panic!("connect {}: {e}", path.display()));
        let (read, write) = stream.into_split();
        Socket {
            write,
            lines: BufReader::new(read).lines(),
        }
    }

    pub async fn send(&mut self, line: Value) {
        self.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The next line; `None` when the session closed the connection.
    pub async fn next_or_end(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
            .await
            .expect("timed out waiting for a line from the live session")
            .expect("read the socket")?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
    }

    pub async fn next(&mut self) -> Value {
        self.next_or_end().await.expect("the live session closed")
    }

    /// Lines up to and including the first matching `pred`.
    pub async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = self.next().await;
            let done = pred(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    pub async fn response(&mut self, id: &str) -> Value {
        self.until(|l| l["type"] == "response" && l["id"] == id)
            .await
            .pop()
            .unwrap()
    }

    /// `attach` (from entry `since`): its answer.
    pub async fn attach(&mut self, id: &str, since: Option<&str>) -> Value {
        self.send(json!({"id": id, "type": "attach", "since": since}))
            .await;
        let answer = self.response(id).await;
        assert_eq!(answer["success"], true, "{answer}");
        answer
    }
}
