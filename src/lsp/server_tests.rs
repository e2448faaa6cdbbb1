//! `Server`'s documents across a crash, on a connection over an in-memory pipe.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly

use super::*;

fn spec() -> Arc<ServerSpec> {
    Arc::new(ServerSpec {
        name: "fake".into(),
        command: "fake".into(),
        args: Vec::new(),
        filetypes: vec!["py".into()],
        root_markers: Vec::new(),
        initialization_options: None,
        settings: None,
        env: BTreeMap::new(),
        enabled: true,
        startup_timeout: Duration::from_secs(5),
        builtin: false,
        program: None,
    })
}

/// A server whose start 1 runs on a connection to nothing but a pipe; the pipe's far end.
fn running(root: &Path) -> (Arc<Server>, Arc<Connection>, tokio::io::DuplexStream) {
    let server = Server::new(spec(), root.into(), Arc::default(), Arc::default());
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(ours);
    let inbox = Arc::new(Inbox::new(Arc::downgrade(&server), 1));
    let (connection, _serving) = Connection::start(read, write, inbox);
    {
        let mut state = lock(&server.state);
        state.generation = 1;
        state.connection = Some(connection.clone());
        state.was_ready = true;
    }
    server.set_status(Status::Ready);
    (server, connection, theirs)
}

#[tokio::test]
async fn a_sync_that_a_crash_overtook_leaves_no_document_behind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.py");
    std::fs::write(&file, "x = 1\n").unwrap();
    let (server, connection, theirs) = running(dir.path());
    server
        .sync(&connection, &Capabilities::default(), &file)
        .await
        .unwrap();
    assert_eq!(server.open_files().len(), 1);

    // The server dies while a sync, given its connection before, is on its way: the crash is
    // recorded (the documents forgotten), then the sync arrives at the dead connection.
    drop(theirs);
    tokio::time::timeout(Duration::from_secs(60), connection.until_closed())
        .await
        .expect("the connection ends with its pipe");
    server.crashed(1, "killed".into()).await;
    assert!(server.open_files().is_empty());
    std::fs::write(&file, "x = 2\n").unwrap();
    let synced = server
        .sync(&connection, &Capabilities::default(), &file)
        .await;
    assert!(synced.is_err(), "{synced:?}");
    // Left open, the file would never be sent to the server started next: it would think
    // the server had it already.
    assert!(
        server.open_files().is_empty(),
        "the dead connection's sync recorded {:?}",
        server.open_files()
    );
}
