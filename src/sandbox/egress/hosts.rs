//! `[sandbox] allow_hosts` entries: which host and port a sandboxed command may reach
//! through the egress proxy, and whether an address a name resolves to belongs to this
//! machine (or its link), which only an exact entry reaches.
//!
//! An entry is a host and an optional port:
//!
//! - `pypi.org`: that name, on ports 80 and 443 (plain HTTP and HTTPS);
//! - `*.example.org`: `example.org` and every name below it (as `[web] allow_hosts` reads
//!   a wildcard), ports 80 and 443;
//! - `*`: every host (but never this machine's own addresses: see `Pattern::exact`);
//! - `registry.local:4873`, `127.0.0.1:8080`, `[::1]:8080`: that port only;
//! - `example.org:*`: every port.
//!
//! Names compare case-insensitively, without a trailing dot.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One `allow_hosts` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Pattern {
    host: Host,
    ports: Ports,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Host {
    /// `*`
    Any,
    /// `*.DOMAIN`: the domain and every name below it.
    Domain(String),
    /// One name.
    Name(String),
    /// One address.
    Address(IpAddr),
}

/// The ports an entry allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ports {
    /// 80 and 443.
    Web,
    One(u16),
    Any,
}

/// What an entry (or a list of them) says about a host and port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed; `exact` when an entry names the host itself (not a wildcard).
    Allowed { exact: bool },
    /// Entries name the host, but not this port: the ports they allow.
    OtherPorts(Vec<Ports>),
    /// No entry names the host.
    NotListed,
}

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let entry = text.trim().to_ascii_lowercase();
        let hint = "write a host (`pypi.org`), a domain and the names below it \
                    (`*.example.org`) or `*`, with `:PORT` or `:*` for ports other than 80 \
                    and 443";
        if entry.is_empty() {
            return Err(format!("is empty: {hint}"));
        }
        if entry.contains("://") || entry.contains('/') {
            return Err(format!("`{text}` is not a host: {hint}"));
        }
        // A bare IPv6 address has colons of its own.
        if let Ok(ip) = entry.parse::<Ipv6Addr>() {
            return Ok(Pattern {
                host: Host::Address(IpAddr::V6(ip)),
                ports: Ports::Web,
            });
        }
        let (host, port) = split_port(&entry).ok_or_else(|| format!("`{text}`: {hint}"))?;
        let ports = match port {
            None => Ports::Web,
            Some("*") => Ports::Any,
            Some(port) => match port.parse::<u16>() {
                Ok(0) | Err(_) => {
                    return Err(format!(
                        "`{text}`: `{port}` is not a port (1 to 65535, or `*` for all)"
                    ));
                }
                Ok(port) => Ports::One(port),
            },
        };
        let host = host.trim_end_matches('.');
        let host = if host == "*" {
            Host::Any
        } else if let Some(domain) = host.strip_prefix("*.") {
            if !is_name(domain) {
                return Err(format!("`{text}`: `{domain}` is not a domain name: {hint}"));
            }
            Host::Domain(domain.to_string())
        } else if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            let ip = v6
                .parse::<Ipv6Addr>()
                .map_err(|_| format!("`{text}`: `{v6}` is not an IPv6 address"))?;
            Host::Address(IpAddr::V6(ip))
        } else if let Ok(ip) = host.parse::<Ipv4Addr>() {
            Host::Address(IpAddr::V4(ip))
        } else if is_name(host) {
            Host::Name(host.to_string())
        } else {
            return Err(format!("`{text}` is not a host name: {hint}"));
        };
        Ok(Pattern { host, ports })
    }

    /// What this entry says about `host` (lowercase, no trailing dot, IPv6 without
    /// brackets) and `port`.
    fn judge(&self, host: &str, port: u16) -> Verdict {
        let names_host = match &self.host {
            Host::Any => true,
            Host::Domain(domain) => {
                host.parse::<IpAddr>().is_err()
                    && (host == domain
                        || host
                            .strip_suffix(domain.as_str())
                            .is_some_and(|rest| rest.ends_with('.')))
            }
            Host::Name(name) => host == name,
            Host::Address(ip) => host.parse::<IpAddr>().is_ok_and(|h| h == *ip),
        };
        if !names_host {
            return Verdict::NotListed;
        }
        let port_ok = match self.ports {
            Ports::Web => port == 80 || port == 443,
            Ports::One(p) => p == port,
            Ports::Any => true,
        };
        if port_ok {
            Verdict::Allowed {
                exact: self.exact(),
            }
        } else {
            Verdict::OtherPorts(vec![self.ports])
        }
    }

    /// Whether the entry names one host (a name or an address), not a wildcard: only such
    /// an entry reaches an address of this machine or its link.
    pub fn exact(&self) -> bool {
        matches!(self.host, Host::Name(_) | Host::Address(_))
    }
}

/// What `patterns` say about `host` (as a client sent it) and `port`: an exact entry wins
/// over a wildcard.
pub fn judge(patterns: &[Pattern], host: &str, port: u16) -> Verdict {
    let host = normalise(host);
    let mut verdict = Verdict::NotListed;
    for pattern in patterns {
        match (pattern.judge(&host, port), &mut verdict) {
            (Verdict::Allowed { exact: true }, _) => return Verdict::Allowed { exact: true },
            (Verdict::Allowed { exact: false }, _) => verdict = Verdict::Allowed { exact: false },
            (Verdict::OtherPorts(ports), Verdict::OtherPorts(seen)) => seen.extend(ports),
            (Verdict::OtherPorts(ports), Verdict::NotListed) => {
                verdict = Verdict::OtherPorts(ports);
            }
            _ => {}
        }
    }
    verdict
}

/// A host as clients send it, made comparable: lowercase, no trailing dot, no brackets.
pub fn normalise(host: &str) -> String {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(inner) => inner.to_string(),
        None => host,
    }
}

/// `host[:port]`, `[v6][:port]`: `None` when the shape is wrong.
fn split_port(entry: &str) -> Option<(&str, Option<&str>)> {
    if entry.starts_with('[') {
        let end = entry.find(']')?;
        let rest = &entry[end + 1..];
        return match rest.strip_prefix(':') {
            Some(port) => Some((&entry[..=end], Some(port))),
            None if rest.is_empty() => Some((entry, None)),
            None => None,
        };
    }
    match entry.split_once(':') {
        Some((_, port)) if port.contains(':') => None,
        Some((host, port)) => Some((host, Some(port))),
        None => Some((entry, None)),
    }
}

/// A DNS name: dot-separated labels of letters, digits, `-` and `_`, none empty.
fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// Whether `ip` is an address of this machine (loopback, unspecified) or of its link
/// (link-local: the cloud metadata endpoint 169.254.169.254 among them), or one of the
/// cloud metadata endpoints that are neither (`METADATA`), also written as an IPv4-mapped,
/// IPv4-compatible, NAT64 or 6to4 IPv6 address: what a wildcard entry never reaches, so
/// that a name under an allowed domain that resolves to 127.0.0.1 does not open the agent's
/// own loopback services (or the machine's credentials) to the command.
pub fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_local_v4(v4),
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            let octets = v6.octets();
            let embedded = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
            if let Some(v4) = v6.to_ipv4_mapped() {
                is_local_v4(v4)
            } else if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || segments[..6] == [0; 6] {
                // NAT64 (RFC 6052) and IPv4-compatible (`::1` and `::` among them).
                v6.is_loopback() || v6.is_unspecified() || is_local_v4(embedded)
            } else if segments[0] == 0x2002 {
                is_local_v4(Ipv4Addr::new(octets[2], octets[3], octets[4], octets[5]))
            } else {
                segments[0] & 0xffc0 == 0xfe80 || METADATA_V6.contains(&v6)
            }
        }
    }
}

/// Cloud metadata endpoints outside the link-local range: Alibaba Cloud's (in the shared
/// 100.64.0.0/10 range) and AWS's IPv6 one (a unique local address).
const METADATA_V4: [Ipv4Addr; 1] = [Ipv4Addr::new(100, 100, 100, 200)];
const METADATA_V6: [Ipv6Addr; 1] = [Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)];

fn is_local_v4(ip: Ipv4Addr) -> bool {
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_link_local()
        || ip.octets()[0] == 0
        || METADATA_V4.contains(&ip)
}

impl TryFrom<String> for Pattern {
    type Error = String;
    fn try_from(text: String) -> Result<Pattern, String> {
        Pattern::parse(&text)
    }
}

impl From<Pattern> for String {
    fn from(pattern: Pattern) -> String {
        pattern.to_string()
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Any => f.write_str("*")?,
            Host::Domain(domain) => write!(f, "*.{domain}")?,
            Host::Name(name) => f.write_str(name)?,
            Host::Address(IpAddr::V4(ip)) => write!(f, "{ip}")?,
            Host::Address(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
        }
        match self.ports {
            Ports::Web => Ok(()),
            Ports::One(port) => write!(f, ":{port}"),
            Ports::Any => f.write_str(":*"),
        }
    }
}

impl fmt::Display for Ports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ports::Web => f.write_str("80 and 443"),
            Ports::One(port) => write!(f, "{port}"),
            Ports::Any => f.write_str("every port"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Vec<Pattern> {
        entries.iter().map(|e| Pattern::parse(e).unwrap()).collect()
    }

    #[test]
    fn names_domains_and_ports() {
        let patterns = list(&["pypi.org", "*.npmjs.org", "registry.local:4873", "x.org:*"]);
        let allowed = |host, port| matches!(judge(&patterns, host, port), Verdict::Allowed { .. });
        assert!(allowed("pypi.org", 443));
        assert!(allowed("PyPI.org.", 80));
        assert!(!allowed("pypi.org", 8080));
        assert!(!allowed("evilpypi.org", 443));
        assert!(allowed("npmjs.org", 443));
        assert!(allowed("registry.npmjs.org", 443));
        assert!(!allowed("npmjs.org.evil.com", 443));
        assert!(!allowed("xnpmjs.org", 443));
        assert!(allowed("registry.local", 4873));
        assert!(!allowed("registry.local", 443));
        assert!(allowed("x.org", 1));
        assert_eq!(
            judge(&patterns, "pypi.org", 8080),
            Verdict::OtherPorts(vec![Ports::Web])
        );
        assert_eq!(judge(&patterns, "example.com", 443), Verdict::NotListed);
    }

    #[test]
    fn exact_entries_are_told_from_wildcards() {
        let patterns = list(&["*", "127.0.0.2:8080", "[::1]:81", "::1"]);
        assert_eq!(
            judge(&patterns, "127.0.0.2", 8080),
            Verdict::Allowed { exact: true }
        );
        assert_eq!(
            judge(&patterns, "127.0.0.3", 443),
            Verdict::Allowed { exact: false }
        );
        assert_eq!(
            judge(&patterns, "[::1]", 81),
            Verdict::Allowed { exact: true }
        );
        assert_eq!(
            judge(&patterns, "::1", 443),
            Verdict::Allowed { exact: true }
        );
        // A wildcard domain never names an address.
        assert_eq!(
            judge(&list(&["*.0.0.1"]), "127.0.0.1", 443),
            Verdict::NotListed
        );
    }

    #[test]
    fn bad_entries_say_why() {
        for bad in [
            "",
            "https://pypi.org",
            "pypi.org/simple",
            "pypi.org:0",
            "pypi.org:http",
            "foo.*.org",
            "*foo.org",
            "a..b",
            "[::1",
            "[nope]:80",
            "a b",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let shown: Vec<String> = list(&["PyPI.org.", "*.X.org:*", "[::1]:80", "10.0.0.1:8080"])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            shown,
            ["pypi.org", "*.x.org:*", "[::1]:80", "10.0.0.1:8080"]
        );
    }

    #[test]
    fn local_addresses_in_every_spelling() {
        for local in [
            "127.0.0.1",
            "127.9.9.9",
            "0.0.0.0",
            "169.254.169.254",
            "::1",
            "::",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::169.254.169.254",
            "2002:7f00:1::",
            "100.100.100.200",
            "::ffff:100.100.100.200",
            "fd00:ec2::254",
        ] {
            assert!(is_local(local.parse().unwrap()), "{local}");
        }
        for other in [
            "10.0.0.1",
            "192.168.1.1",
            "93.184.216.34",
            "2606:4700::1111",
            "100.100.100.201",
            "fd00:ec2::253",
        ] {
            assert!(!is_local(other.parse().unwrap()), "{other}");
        }
    }
}
