//! The live sessions' subcommands: `agent sessions [--live]` lists the sessions (the live
//! ones — served by a running agent — first, with their state and clients; each with its
//! title), and
//! `agent attach [ID]` bridges a live session to this terminal as JSON lines: what is
//! typed on stdin goes to the session's socket, what the session says comes out on stdout
//! (docs/protocol.md §4.5) when they are not a terminal; in a terminal, `choose` picks the
//! session the interface (`tui::attach`) opens.

use super::client::LiveClient;
use super::server::{clean_stale, run_dir};
use crate::config::Paths;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// How long `sessions --live` waits for a session to describe itself.
const ASK_WAIT: Duration = Duration::from_secs(5);

/// A live session as `sessions --live` shows it.
struct Live {
    id: String,
    socket: PathBuf,
    state: Option<Value>,
    clients: usize,
}

/// The sockets of the live sessions (stale ones are removed first).
fn live_sockets(home: &Path) -> Vec<(String, PathBuf)> {
    let dir = run_dir(home);
    clean_stale(&dir);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut sockets: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".sock")?
                .to_string();
            Some((id, path))
        })
        .collect();
    sockets.sort();
    sockets
}

async fn describe(id: String, socket: PathBuf) -> Live {
    let ask = async {
        let (client, _events) = LiveClient::connect(&socket).await.ok()?;
        let state = client.request(json!({"type": "get_state"})).await.ok();
        let clients = client
            .request(json!({"type": "list_clients"}))
            .await
            .ok()
            .and_then(|data| data["clients"].as_array().map(Vec::len))
            // Not counting the one asking.
            .map_or(0, |n| n.saturating_sub(1));
        Some((state, clients))
    };
    let (state, clients) = tokio::time::timeout(ASK_WAIT, ask)
        .await
        .ok()
        .flatten()
        .unwrap_or((None, 0));
    Live {
        id,
        socket,
        state,
        clients,
    }
}

/// The title of a live session, from its file.
fn live_title(live: &Live) -> Option<String> {
    let file = live.state.as_ref()?["sessionFile"].as_str()?;
    crate::session::title::describe(Path::new(file)).ok()?.title
}

/// `agent sessions [list] [--live] [--json] [--all]`: the live sessions, then the saved
/// ones of this directory (`all`: of every directory), most recently used first, each with
/// its title (`session::title`).
pub async fn sessions(paths: &Paths, cwd: &Path, live_only: bool, as_json: bool, all: bool) -> u8 {
    let mut live = Vec::new();
    for (id, socket) in live_sockets(&paths.home) {
        live.push(describe(id, socket).await);
    }
    let saved: Vec<crate::session::store::SessionSummary> = if live_only {
        Vec::new()
    } else if all {
        crate::session::store::list_all(&paths.sessions_dir)
    } else {
        crate::session::store::list_for(&paths.sessions_dir, cwd)
    };
    let saved: Vec<_> = saved
        .into_iter()
        .filter(|s| !live.iter().any(|l| l.id == s.id))
        .collect();
    if as_json {
        let live: Vec<Value> = live
            .iter()
            .map(|l| {
                json!({
                    "id": l.id,
                    "live": true,
                    "socket": l.socket,
                    "state": l.state.as_ref().map(|s| &s["state"]),
                    "model": l.state.as_ref().map(|s| &s["model"]),
                    "sessionFile": l.state.as_ref().map(|s| &s["sessionFile"]),
                    "sessionName": l.state.as_ref().map(|s| &s["sessionName"]),
                    "title": live_title(l),
                    "clients": l.clients,
                })
            })
            .collect();
        let saved = saved.iter().map(|s| {
            json!({
                "id": s.id,
                "live": false,
                "sessionFile": s.path,
                "cwd": s.cwd,
                "title": s.title,
                "named": s.named,
                "messages": s.messages,
                "created": s.created,
                "updated": s.modified
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(crate::time::millis)
                    .unwrap_or(0),
                "parentSession": s.parent,
            })
        });
        let all: Vec<Value> = live.into_iter().chain(saved).collect();
        println!("{}", Value::Array(all));
        return 0;
    }
    if live.is_empty() && live_only {
        eprintln!("agent: no live session (every running agent serves its session)");
    } else if live.is_empty() && saved.is_empty() && all {
        eprintln!("agent: no sessions yet (start one with `agent`)");
    } else if live.is_empty() && saved.is_empty() {
        eprintln!(
            "agent: no sessions in {} (start one with `agent`; --all lists every directory's)",
            cwd.display()
        );
    }
    for l in &live {
        let field = |name: &str| {
            l.state
                .as_ref()
                .and_then(|s| s[name].as_str())
                .unwrap_or("?")
                .to_string()
        };
        println!(
            "{}  live  {}  {}  {} client(s)  {}",
            l.id,
            field("state"),
            field("model"),
            l.clients,
            live_title(l)
                .or_else(|| {
                    l.state
                        .as_ref()
                        .and_then(|s| s["sessionName"].as_str().or(s["sessionFile"].as_str()))
                        .map(String::from)
                })
                .unwrap_or_default()
        );
    }
    for s in &saved {
        let messages = match s.messages {
            1 => "1 message".to_string(),
            n => format!("{n} messages"),
        };
        let place = if all {
            format!("{}  ", s.cwd)
        } else {
            String::new()
        };
        println!(
            "{}  saved  {}  {messages}  {place}{}",
            s.id,
            crate::time::ago(s.modified),
            s.title.as_deref().unwrap_or("(no prompt yet)")
        );
    }
    0
}

/// The live session `id` names (a prefix is enough, or the socket's path); with none, the
/// only one there is.
fn pick(home: &Path, id: Option<&str>) -> Result<PathBuf, String> {
    if let Some(path) = id.filter(|id| id.contains('/')) {
        return Ok(PathBuf::from(path));
    }
    let sockets = live_sockets(home);
    let matching: Vec<&(String, PathBuf)> = sockets
        .iter()
        .filter(|(live, _)| id.is_none_or(|id| live.starts_with(id)))
        .collect();
    match (matching.as_slice(), id) {
        ([(_, socket)], _) => Ok(socket.clone()),
        ([], Some(id)) => Err(format!(
            "no live session `{id}` (`agent sessions --live` lists them)"
        )),
        ([], None) => Err("no live session (every running agent serves its session)".into()),
        (_, _) => {
            let ids: Vec<&str> = matching.iter().map(|(id, _)| id.as_str()).collect();
            Err(format!(
                "several live sessions match; give one of: {}",
                ids.join(", ")
            ))
        }
    }
}

/// The socket `agent attach` in a terminal opens: the session `id` names, or with no id
/// the only live one, or — when several are live — the one the user picks from a numbered
/// list (on stderr; the answer read from stdin).
pub async fn choose(home: &Path, id: Option<&str>) -> Result<PathBuf, String> {
    if id.is_some() {
        return pick(home, id);
    }
    let sockets = live_sockets(home);
    if sockets.len() < 2 {
        return pick(home, None);
    }
    let mut live = Vec::new();
    for (id, socket) in sockets {
        live.push(describe(id, socket).await);
    }
    eprintln!("Live sessions:");
    for (n, l) in live.iter().enumerate() {
        let field = |name: &str| {
            l.state
                .as_ref()
                .and_then(|s| s[name].as_str())
                .unwrap_or("?")
                .to_string()
        };
        let name = l
            .state
            .as_ref()
            .and_then(|s| s["sessionName"].as_str())
            .unwrap_or("");
        eprintln!(
            "  {}) {}  {}  {}  {} client(s)  {name}",
            n + 1,
            l.id,
            field("state"),
            field("model"),
            l.clients
        );
    }
    eprint!("Attach to which (1-{}; enter for none)? ", live.len());
    let mut answer = String::new();
    let mut stdin = BufReader::new(tokio::io::stdin());
    stdin
        .read_line(&mut answer)
        .await
        .map_err(|e| format!("cannot read the answer: {e}"))?;
    let answer = answer.trim();
    if answer.is_empty() {
        return Err("no session chosen".to_string());
    }
    answer
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| live.get(n))
        .map(|l| l.socket.clone())
        .ok_or_else(|| format!("`{answer}` is not one of 1-{}", live.len()))
}

/// `agent attach [ID] [--since ENTRY]`: stdin lines to the session, its lines to stdout,
/// starting with `attach`. Ends when the session does (0 when it said why, 1 when its
/// process vanished); the end of stdin only stops the sending.
pub async fn attach(home: &Path, id: Option<&str>, since: Option<&str>) -> u8 {
    let socket = match pick(home, id) {
        Ok(socket) => socket,
        Err(why) => {
            eprintln!("agent: {why}");
            return 2;
        }
    };
    let stream = match UnixStream::connect(&socket).await {
        Ok(stream) => stream,
        Err(e) => {
            eprintln!(
                "agent: cannot reach the live session at {}: {e}",
                socket.display()
            );
            return 1;
        }
    };
    let (read, mut write) = stream.into_split();
    let mut first = json!({"type": "attach", "id": "attach"});
    if let Some(since) = since {
        first["since"] = json!(since);
    }
    // When the session refuses the connection, it says why: that is read below.
    let _ = write.write_all(format!("{first}\n").as_bytes()).await;
    crate::tasks::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = stdin.next_line().await {
            if write
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
        // Keep the connection (and the stream) open: only the sending is over.
        std::future::pending::<()>().await;
        drop(write);
    });
    let mut lines = BufReader::new(read).lines();
    let mut stdout = tokio::io::stdout();
    while let Ok(Some(line)) = lines.next_line().await {
        let ended = serde_json::from_str::<Value>(&line)
            .ok()
            .filter(|v| v["type"] == "live_end")
            .map(|v| v["reason"].as_str().unwrap_or("ended").to_string());
        if stdout
            .write_all(format!("{line}\n").as_bytes())
            .await
            .and(stdout.flush().await)
            .is_err()
        {
            return 1;
        }
        if let Some(reason) = ended {
            eprintln!("agent: the live session ended: {reason}");
            return 0;
        }
    }
    eprintln!("agent: the live session's process went away without a word");
    1
}
