//! Which hosts and addresses `web_fetch` may reach: the `[web]` deny and allow lists
//! (exact names, or `*.example.com` for the domain and every name below it), and the rule
//! that a name resolving to a private, loopback, link-local or otherwise non-public address
//! is refused unless the allow list names it — so a prompt-injected page cannot steer the
//! agent into the user's own network. The check is made on the addresses the name really
//! resolves to, and the connection then goes to exactly those addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `host` is named by `patterns` (case-insensitive; `*.d` names `d` and below).
pub fn host_listed(host: &str, patterns: &[String]) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    patterns.iter().any(|pattern| {
        let pattern = pattern.trim().trim_end_matches('.').to_ascii_lowercase();
        match pattern.strip_prefix("*.") {
            Some(domain) => host == domain || host.ends_with(&format!(".{domain}")),
            None => host == pattern,
        }
    })
}

/// Why `ip` is not a public address (`None` when it is one).
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => non_public_v4(v4),
            None => non_public_v6(v6),
        },
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("reserved (IETF protocol assignments)")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("reserved (benchmarking)")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("reserved")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    let first = segments[0];
    let octets = ip.octets();
    let last_v4 = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64 (RFC 6052): reaches the IPv4 address in its last 32 bits.
        non_public_v4(last_v4)
    } else if segments[..3] == [0x64, 0xff9b, 1] {
        // Local-use NAT64 (RFC 8215): a network's own translator, whatever it embeds.
        Some("private (local-use NAT64)")
    } else if first == 0x2002 {
        // 6to4: reaches the IPv4 address in bits 16..48.
        non_public_v4(Ipv4Addr::new(octets[2], octets[3], octets[4], octets[5]))
    } else if segments[..6] == [0; 6] {
        // ::/96, IPv4-compatible (deprecated), with :: and ::1.
        Some(if ip.is_loopback() {
            "loopback"
        } else if ip.is_unspecified() {
            "unspecified"
        } else {
            "reserved (IPv4-compatible)"
        })
    } else if first & 0xffc0 == 0xfec0 {
        Some("private (site-local)")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private (unique local)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("reserved")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_match_names_and_wildcard_domains() {
        let list = vec!["docs.rs".to_string(), "*.example.com".to_string()];
        assert!(host_listed("docs.rs", &list));
        assert!(host_listed("DOCS.RS.", &list));
        assert!(!host_listed("evil-docs.rs", &list));
        assert!(host_listed("example.com", &list));
        assert!(host_listed("a.b.example.com", &list));
        assert!(!host_listed("notexample.com", &list));
    }

    #[test]
    fn only_public_addresses_pass() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b::169.254.169.254",
            "64:ff9b:1::1",
            "64:ff9b:1:ffff::8.8.8.8",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            "::8.8.8.8",
            "::2",
            "fec0::1",
            "feff::1",
            "192.0.0.1",
            "192.0.0.170",
            "198.18.0.1",
            "198.19.255.254",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(non_public(ip).is_some(), "{private} passed");
        }
        for public in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "64:ff9b::8.8.8.8",
            "2002:808:808::1",
            "192.0.1.1",
            "198.20.0.1",
            "198.17.255.255",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert_eq!(non_public(ip), None, "{public} refused");
        }
    }
}
