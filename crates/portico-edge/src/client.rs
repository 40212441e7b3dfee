//! The client-address rule: who is on the other end of a request, for per-address limits.
//!
//! The address is the peer of the TCP connection (the server must be run with
//! `into_make_service_with_connect_info::<SocketAddr>()`). `X-Forwarded-For` is read only when
//! that peer is a configured trusted proxy: then the client is the right-most address in the
//! header that is not itself trusted (a client can prepend anything to the header, but cannot
//! forge what its own proxy appends). Without a peer address there is no client address.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use http::HeaderMap;
use ipnet::IpNet;

/// The proxies whose `X-Forwarded-For` is believed (none by default).
///
/// ```
/// use portico_edge::TrustedProxies;
/// let proxies = TrustedProxies::parse(["10.0.0.0/8", "127.0.0.1"])?;
/// let mut headers = http::HeaderMap::new();
/// headers.insert("x-forwarded-for", "203.0.113.9, 10.1.2.3".parse()?);
/// let peer = "127.0.0.1".parse().ok();
/// assert_eq!(proxies.client_ip(&headers, peer), "203.0.113.9".parse().ok());
/// // The same header from an untrusted peer is ignored.
/// let stranger = "198.51.100.7".parse().ok();
/// assert_eq!(proxies.client_ip(&headers, stranger), stranger);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// No trusted proxy: `X-Forwarded-For` is never read.
    pub fn none() -> Self {
        TrustedProxies(Vec::new())
    }

    /// Trust these networks.
    pub fn new(nets: impl IntoIterator<Item = IpNet>) -> Self {
        TrustedProxies(nets.into_iter().collect())
    }

    /// Parses addresses (`10.0.0.1`) and networks (`10.0.0.0/8`, `fd00::/8`).
    ///
    /// # Errors
    /// A message naming the first entry that is neither.
    pub fn parse<I, S>(entries: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        entries
            .into_iter()
            .map(|entry| {
                let text = entry.as_ref().trim();
                text.parse::<IpNet>()
                    .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("{text:?} is not an IP address or network"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(TrustedProxies)
    }

    /// True when no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client's address (see the module docs), from the request headers and the peer.
    pub fn client_ip(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Option<IpAddr> {
        let peer = canonical(peer?);
        if !self.trusts(peer) {
            return Some(peer);
        }
        let mut client = peer;
        // Walk the hops right to left; each trusted hop vouches for the one before it.
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .collect::<Vec<_>>();
        for hop in hops.iter().rev() {
            let Ok(ip) = hop.trim().parse::<IpAddr>() else {
                break;
            };
            client = canonical(ip);
            if !self.trusts(client) {
                break;
            }
        }
        Some(client)
    }

    /// True when the request's TCP peer is a trusted proxy, so that what it says about the
    /// request in headers (`X-Forwarded-For`, `X-Request-Id`) is believed.
    pub fn trusts_peer(&self, extensions: &http::Extensions) -> bool {
        peer_ip(extensions).is_some_and(|ip| self.trusts(ip))
    }

    /// [`TrustedProxies::client_ip`] of a request's parts.
    pub fn client_ip_of(
        &self,
        headers: &HeaderMap,
        extensions: &http::Extensions,
    ) -> Option<IpAddr> {
        self.client_ip(headers, peer_ip(extensions))
    }
}

/// The TCP peer's address, when the server was run with connect info.
pub fn peer_ip(extensions: &http::Extensions) -> Option<IpAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
}

/// IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) compare as the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xff(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", value.parse().unwrap());
        h
    }

    fn ip(s: &str) -> Option<IpAddr> {
        s.parse().ok()
    }

    #[test]
    fn untrusted_peers_are_the_client() {
        let none = TrustedProxies::none();
        assert_eq!(
            none.client_ip(&xff("1.1.1.1"), ip("9.9.9.9")),
            ip("9.9.9.9")
        );
        assert_eq!(none.client_ip(&xff("1.1.1.1"), None), None);
    }

    #[test]
    fn trusted_chains_are_walked_from_the_right() {
        let proxies = TrustedProxies::parse(["10.0.0.0/8"]).unwrap();
        let peer = ip("10.0.0.1");
        // A client-forged left part does not win over what the proxy appended.
        assert_eq!(
            proxies.client_ip(&xff("6.6.6.6, 5.5.5.5, 10.0.0.2"), peer),
            ip("5.5.5.5")
        );
        assert_eq!(
            proxies.client_ip(&xff("garbage, 5.5.5.5"), peer),
            ip("5.5.5.5")
        );
        assert_eq!(proxies.client_ip(&HeaderMap::new(), peer), peer);
        assert_eq!(proxies.client_ip(&xff("10.0.0.9"), peer), ip("10.0.0.9"));
    }

    #[test]
    fn mapped_addresses_and_bad_entries() {
        let proxies = TrustedProxies::parse(["127.0.0.1"]).unwrap();
        assert_eq!(
            proxies.client_ip(&xff("7.7.7.7"), ip("::ffff:127.0.0.1")),
            ip("7.7.7.7")
        );
        assert!(TrustedProxies::parse(["nope"]).is_err());
    }
}
