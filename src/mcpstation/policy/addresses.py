"""Which IP addresses a fetch on an agent's behalf may reach: one table of blocked networks, each named.

`ipaddress.is_global` is not enough on its own: it calls some special-purpose ranges global and
knows nothing of addresses embedded in IPv6 (NAT64, 6to4, Teredo). So the table below is the
authority; `is_global` is only a last catch-all for ranges the table does not name.

IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
`2002::/16`, Teredo `2001::/32`) are judged by the IPv4 address they embed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network


@dataclass(frozen=True)
class BlockedNetwork:
    """A network no fetch may reach, with the name a refusal uses."""

    network: IPNetwork
    name: str


def _table(*rows: tuple[str, str]) -> tuple[BlockedNetwork, ...]:
    return tuple(BlockedNetwork(ipaddress.ip_network(cidr), name) for cidr, name in rows)


BLOCKED_NETWORKS: tuple[BlockedNetwork, ...] = _table(
    # IPv4
    ("0.0.0.0/8", "unspecified ('this network')"),
    ("10.0.0.0/8", "private network"),
    ("100.64.0.0/10", "carrier-grade NAT (shared address space)"),
    ("100.100.100.200/32", "cloud metadata service (Alibaba Cloud)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("169.254.169.254/32", "cloud metadata service"),
    ("169.254.170.2/32", "cloud metadata service (AWS ECS)"),
    ("172.16.0.0/12", "private network"),
    ("192.0.0.0/24", "reserved (IETF protocol assignments)"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)"),
    ("192.31.196.0/24", "reserved (AS112 service)"),
    ("192.52.193.0/24", "reserved (AMT)"),
    ("192.88.99.0/24", "reserved (6to4 relay anycast)"),
    ("192.168.0.0/16", "private network"),
    ("192.175.48.0/24", "reserved (AS112 direct delegation)"),
    ("198.18.0.0/15", "reserved (benchmarking)"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved (future use)"),
    ("255.255.255.255/32", "broadcast"),
    # IPv6
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "IPv4-compatible IPv6 (deprecated)"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("100::/64", "discard-only"),
    ("2001::/23", "reserved (IETF protocol assignments)"),
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "reserved (SRv6 SIDs)"),
    ("fc00::/7", "unique-local"),
    ("fd00:ec2::254/128", "cloud metadata service (AWS)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"),
    ("ff00::/8", "multicast"),
)
"""Every blocked network; when several match, the most specific names the refusal."""

_MAPPED = IPv6Network("::ffff:0:0/96")
_NAT64 = IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = IPv6Network("2002::/16")
_TEREDO = IPv6Network("2001::/32")


def embedded_ipv4(address: IPAddress) -> tuple[str, tuple[IPv4Address, ...]] | None:
    """The IPv4 address(es) an IPv6 address carries, and the form's name; None when it carries none."""
    if not isinstance(address, IPv6Address):
        return None
    value = int(address)
    if address in _MAPPED:
        return "IPv4-mapped IPv6", (IPv4Address(value & 0xFFFFFFFF),)
    if address in _NAT64:
        return "NAT64", (IPv4Address(value & 0xFFFFFFFF),)
    if address in _SIX_TO_FOUR:
        return "6to4", (IPv4Address((value >> 80) & 0xFFFFFFFF),)
    if address in _TEREDO:
        # Teredo: the server's IPv4 in bits 64..95 from the top, the client's inverted in the last 32.
        server = IPv4Address((value >> 64) & 0xFFFFFFFF)
        client = IPv4Address(~value & 0xFFFFFFFF)
        return "Teredo", (client, server)
    return None


def blocked_reason(address: IPAddress) -> str | None:
    """Why `address` must not be fetched, or None when it is a public address.

    Embedded IPv4 is unwrapped and judged on its own; everything else goes through
    `BLOCKED_NETWORKS`, then `is_global` as a catch-all.
    """
    embedded = embedded_ipv4(address)
    if embedded is not None:
        form, inner = embedded
        for ipv4 in inner:
            reason = blocked_reason(ipv4)
            if reason is not None:
                return f"{form} address embedding {ipv4}: {reason}"
        return None
    matches = [row for row in BLOCKED_NETWORKS if row.network.version == address.version and address in row.network]
    if matches:
        return max(matches, key=lambda row: row.network.prefixlen).name
    if not address.is_global:
        return "not globally reachable (special-purpose range)"
    return None


def in_networks(address: IPAddress, networks: Iterable[IPNetwork]) -> bool:
    """True when `address`, or an IPv4 address it embeds, lies in one of `networks`."""
    candidates: list[IPAddress] = [address]
    embedded = embedded_ipv4(address)
    if embedded is not None:
        candidates.extend(embedded[1])
    return any(c.version == n.version and c in n for c in candidates for n in networks)
