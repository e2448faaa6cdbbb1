//! How the egress proxy turns a host a command asked for into the addresses it connects
//! to: an address stands for itself, a name goes to the system's resolver (from the
//! agent's side; the command's namespace has none).
//!
//! Tests must not reach beyond this machine, yet the proxy's handling of *names* (case,
//! trailing dots, a name versus the address it resolves to, look-alike names) is what an
//! attacker would probe. So the proxy also consults a table of names that only code linked
//! into the same process can fill (`testing::resolve_name`): the integration tests map
//! `allowed.example` and the like to loopback addresses of their own. Nothing in the agent
//! fills it — no config key, flag or environment variable reaches it — so in the agent the
//! table is empty and every name goes to the system's resolver. An entry changes only where
//! an allowed name connects, never whether a host is allowed: judging happens before.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Names resolved by the table instead of the system (tests only; see the module comment).
static TABLE: OnceLock<Mutex<HashMap<String, IpAddr>>> = OnceLock::new();

/// Every address `host` (an address, or a name normalised by `hosts::normalise`) has, with
/// `port`.
pub async fn resolve(host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    if let Some(ip) = from_table(host) {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    Ok(tokio::net::lookup_host((host, port)).await?.collect())
}

fn from_table(host: &str) -> Option<IpAddr> {
    let table = TABLE.get()?;
    let table = table.lock().unwrap_or_else(PoisonError::into_inner);
    table.get(host).copied()
}

/// For tests of the proxy, in the test's own process.
#[doc(hidden)]
pub mod testing {
    use super::*;

    /// From now on the proxies of this process resolve `name` (any case, with or without
    /// a trailing dot) to `ip` without asking the system's resolver.
    pub fn resolve_name(name: &str, ip: IpAddr) {
        let table = super::TABLE.get_or_init(Mutex::default);
        table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(crate::sandbox::egress::hosts::normalise(name), ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn addresses_stand_for_themselves_and_the_table_is_asked_before_the_system() {
        let ip: IpAddr = "127.0.0.9".parse().unwrap();
        assert_eq!(
            resolve("10.1.2.3", 80).await.unwrap(),
            [SocketAddr::new("10.1.2.3".parse().unwrap(), 80)]
        );
        assert!(from_table("unit-test.invalid").is_none());
        testing::resolve_name("Unit-Test.INVALID.", ip);
        assert_eq!(
            resolve("unit-test.invalid", 8080).await.unwrap(),
            [SocketAddr::new(ip, 8080)]
        );
    }
}
