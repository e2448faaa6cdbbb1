//! A real `agent proxy` process on a loopback port, configured by the test, in its own
//! temporary home; it is killed when dropped.

use super::env::{Env, env};
use super::process::command;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

pub struct Proxy {
    _child: Child,
    _env: Env,
    /// `http://127.0.0.1:PORT`
    pub origin: String,
}

impl Proxy {
    /// `agent proxy --listen 127.0.0.1:0` with `config` as its config.toml and `vars` in its
    /// environment; ready once it has said where it listens.
    pub async fn start(config: &str, vars: &[(&str, &str)]) -> Proxy {
        let env = env();
        std::fs::write(env.home.path().join("config.toml"), config).unwrap();
        let mut cmd = command(env.home.path(), env.cwd.path());
        cmd.args(["proxy", "--listen", "127.0.0.1:0"]);
        for (name, value) in vars {
            cmd.env(name, value);
        }
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut first = String::new();
        tokio::time::timeout(
            Duration::from_secs(120),
            BufReader::new(stdout).read_line(&mut first),
        )
        .await
        .expect("the proxy says where it listens")
        .unwrap();
        let origin = first
            .trim()
            .strip_prefix("agent proxy: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {first}"))
            .to_string();
        Proxy {
            _child: child,
            _env: env,
            origin,
        }
    }

    /// `127.0.0.1:PORT`
    pub fn addr(&self) -> &str {
        self.origin.strip_prefix("http://").unwrap_or(&self.origin)
    }
}
