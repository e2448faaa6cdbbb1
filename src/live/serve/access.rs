//! Who may talk to `agent serve`: where it may listen (loopback by default; anywhere else
//! only with bearer tokens, and over TLS or — on a private address — with an explicit
//! `--insecure-no-tls`), and which requests it answers: the `Host` header must name this
//! server and an `Origin`, when a browser sends one, must be this server's own (no DNS
//! rebinding, no cross-site requests), and with tokens every request but `/healthz` carries
//! one.

use crate::proxy::auth::Tokens;
use std::net::{IpAddr, SocketAddr};

/// The variable the accepted bearer tokens are read from (comma-separated).
pub const TOKENS_ENV: &str = "AGENT_SERVE_TOKENS";

/// A refused request: its status and why.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: &'static str,
}

pub struct Access {
    tokens: Tokens,
    /// `host[:port]` values a `Host` header may have (lower case).
    hosts: Vec<String>,
}

/// What the command line asks for.
pub struct Wanted<'a> {
    pub listen: SocketAddr,
    pub tls: bool,
    pub insecure_no_tls: bool,
    /// Further names of this server (`--allow-host`).
    pub names: &'a [String],
}

impl Access {
    /// The policy for `wanted`, or why the server must not start.
    pub fn new(wanted: &Wanted<'_>, tokens: Tokens) -> Result<Access, String> {
        let ip = wanted.listen.ip();
        if !ip.is_loopback() {
            if tokens.is_empty() {
                return Err(format!(
                    "{} is not a loopback address: set {TOKENS_ENV} to the accepted bearer tokens (comma-separated)",
                    wanted.listen
                ));
            }
            if !wanted.tls && !wanted.insecure_no_tls {
                return Err(format!(
                    "{} is not a loopback address: give a certificate ([serve] tls_cert and tls_key in config, or --tls-cert and --tls-key), or --insecure-no-tls on a private network",
                    wanted.listen
                ));
            }
            if !wanted.tls && !is_private(ip) {
                return Err(format!(
                    "--insecure-no-tls is only allowed on a private address, not {ip}"
                ));
            }
        }
        let port = wanted.listen.port();
        let mut hosts = vec![match ip {
            IpAddr::V4(v4) => format!("{v4}:{port}"),
            IpAddr::V6(v6) => format!("[{v6}]:{port}"),
        }];
        if ip.is_loopback() {
            hosts.push(format!("localhost:{port}"));
        }
        for name in wanted.names {
            let name = name.trim().to_ascii_lowercase();
            if name.contains(':') && !name.starts_with('[') {
                hosts.push(name);
            } else {
                hosts.push(format!("{name}:{port}"));
            }
        }
        Ok(Access { tokens, hosts })
    }

    /// Once the port is known (listening on port 0): the hosts with that port.
    pub fn with_port(mut self, asked: u16, bound: u16) -> Access {
        if asked != bound {
            let suffix = format!(":{asked}");
            for host in &mut self.hosts {
                if let Some(stripped) = host.strip_suffix(&suffix) {
                    *host = format!("{stripped}:{bound}");
                }
            }
        }
        self
    }

    /// Whether a request with these headers (and path) is answered.
    pub fn check(
        &self,
        path: &str,
        host: Option<&str>,
        origin: Option<&str>,
        authorization: Option<&str>,
        scheme: &str,
    ) -> Result<(), Refusal> {
        self.check_origin(host, origin, scheme)?;
        if path != "/healthz" && !self.bearer_ok(authorization) {
            return Err(UNAUTHORIZED);
        }
        Ok(())
    }

    /// The `Host` names this server and an `Origin`, when sent, is its own.
    pub fn check_origin(
        &self,
        host: Option<&str>,
        origin: Option<&str>,
        scheme: &str,
    ) -> Result<(), Refusal> {
        let host = host.map(str::to_ascii_lowercase);
        if !host.as_ref().is_some_and(|h| self.hosts.contains(h)) {
            return Err(Refusal {
                status: 403,
                message: "the Host header does not name this server",
            });
        }
        if let Some(origin) = origin {
            let origin = origin.to_ascii_lowercase();
            let own = self
                .hosts
                .iter()
                .any(|h| origin == format!("{scheme}://{h}"));
            if !own {
                return Err(Refusal {
                    status: 403,
                    message: "requests from another origin are refused",
                });
            }
        }
        Ok(())
    }

    /// Whether tokens are asked for at all (none are on a loopback address without
    /// `AGENT_SERVE_TOKENS`).
    pub fn needs_token(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// No token is needed, or the `Authorization` header carries an accepted one.
    pub fn bearer_ok(&self, authorization: Option<&str>) -> bool {
        self.tokens.is_empty() || self.tokens.check(authorization).is_some()
    }

    /// Whether `token` (as the web client's sign-in sends it) is accepted.
    pub fn token_ok(&self, token: &str) -> bool {
        self.tokens
            .check(Some(&format!("Bearer {token}")))
            .is_some()
    }
}

/// The answer to a request that needs a token and has none that is accepted.
pub const UNAUTHORIZED: Refusal = Refusal {
    status: 401,
    message: "missing or unknown bearer token (Authorization: Bearer TOKEN)",
};

/// A private address: IPv4 10/8, 172.16/12, 192.168/16, 100.64/10 (CGNAT, e.g. a
/// tailnet), link-local; IPv6 unique local (fc00::/7) and link-local.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private() || v4.is_link_local() || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tokens(list: &str) -> Tokens {
        Tokens::from_env("T", |_| Some(list.to_string()))
    }

    fn wanted(listen: &str, tls: bool, insecure: bool) -> Wanted<'static> {
        Wanted {
            listen: listen.parse().unwrap(),
            tls,
            insecure_no_tls: insecure,
            names: &[],
        }
    }

    #[test]
    fn anything_but_loopback_needs_tokens_and_tls_or_a_private_network() {
        assert!(Access::new(&wanted("127.0.0.1:1", false, false), tokens("")).is_ok());
        let no_token = Access::new(&wanted("0.0.0.0:1", true, false), tokens(""));
        assert!(no_token.err().unwrap().contains(TOKENS_ENV));
        let no_tls = Access::new(&wanted("192.168.1.2:1", false, false), tokens("t"));
        assert!(no_tls.err().unwrap().contains("--insecure-no-tls"));
        assert!(Access::new(&wanted("192.168.1.2:1", false, true), tokens("t")).is_ok());
        let public = Access::new(&wanted("8.8.8.8:1", false, true), tokens("t"));
        assert!(
            public
                .err()
                .unwrap()
                .contains("only allowed on a private address")
        );
        assert!(Access::new(&wanted("8.8.8.8:1", true, false), tokens("t")).is_ok());
    }

    #[test]
    fn host_origin_and_token_are_checked() {
        let access = Access::new(&wanted("127.0.0.1:8788", false, false), tokens("s3"))
            .unwrap()
            .with_port(8788, 8788);
        let ok = Some("Bearer s3");
        let check = |host, origin, auth| access.check("/v1/sessions", host, origin, auth, "http");
        assert_eq!(check(Some("127.0.0.1:8788"), None, ok), Ok(()));
        assert_eq!(
            check(Some("LOCALHOST:8788"), Some("http://localhost:8788"), ok),
            Ok(())
        );
        assert_eq!(
            check(Some("evil.example:8788"), None, ok)
                .unwrap_err()
                .status,
            403
        );
        assert_eq!(check(None, None, ok).unwrap_err().status, 403);
        let cross = check(Some("127.0.0.1:8788"), Some("http://evil.example"), ok);
        assert_eq!(cross.unwrap_err().status, 403);
        assert_eq!(
            check(Some("127.0.0.1:8788"), None, None)
                .unwrap_err()
                .status,
            401
        );
        assert_eq!(
            check(Some("127.0.0.1:8788"), None, Some("Bearer nope"))
                .unwrap_err()
                .status,
            401
        );
        assert_eq!(
            access.check("/healthz", Some("127.0.0.1:8788"), None, None, "http"),
            Ok(())
        );
    }
}
