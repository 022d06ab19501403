"""The one egress policy: every connection Tickwork opens to somewhere else goes through here.

A destination is refused when an address it connects to is loopback, private (RFC 1918,
RFC 4193 ``fc00::/7``), link-local, carrier-grade NAT (``100.64.0.0/10``), multicast,
unspecified, "this network" (``0.0.0.0/8``), broadcast or otherwise reserved, or a cloud
metadata address (``169.254.169.254``, ``fd00:ec2::254``, ...), whether written plainly or
embedded in an IPv6 address (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4
``2002::/16``). Every notation an address can be written in is read the way the C library
reads it (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``, ``[::1]``). The check is
made on the address actually connected to, after DNS, on every new connection: the name is
resolved once, each address is checked, and the socket connects to a checked address, so a
name that resolves differently the next time cannot slip past. TLS still verifies the
certificate against, and sends SNI for, the host name. Proxies from the environment are
never honoured. Only ``http`` and ``https`` URLs are destinations (and SMTP's own socket,
through :func:`connect_socket`).

``TICKWORK_EGRESS_ALLOW`` (comma-separated CIDRs and host names, e.g.
``127.0.0.0/8,::1/128,relay.internal``) opens exceptions: an address inside an allowed
network, or any address of an allowed host name (the name compared exactly, without case
or a trailing dot). A cloud metadata address is opened only by an entry naming that very
address (``169.254.169.254/32``), never by a wider network that happens to contain it.
:func:`configure` is called once at start (``create_app``) and refuses a bad entry with a
:class:`~models.core.errors.ConfigurationError` naming it; without it the environment
variable is read on first use.

The interface (stable: every floor above calls out only through these):

- :class:`DestinationRefused` -- the one exception for a refused destination. It is an
  ``httpx.TransportError``, so any code that handles httpx errors handles it; ``str()`` starts
  with ``"destination not allowed"`` (:data:`NOT_ALLOWED`) and ``reason`` says why.
- ``check_url(url, *, field) -> None`` -- the check made when something is saved: the scheme,
  a literal address, and a name's addresses when the name resolves (a name that does not
  resolve is accepted: it is checked again at every connection). Raises
  :class:`~models.core.errors.InvalidInput` naming ``field`` (code ``destination_not_allowed``
  for a refused destination, ``invalid`` for what is not an http(s) URL).
- ``check_host(host, *, field) -> None`` -- the same for a bare host name or address (SMTP).
- ``url_refusal(url) -> str | None`` and ``host_refusal(host) -> str | None`` -- why ``url``
  (or a bare host) would be refused (the words of :func:`check_url`), or None; for a
  redirect's ``Location`` seen at send time, and for listing saved destinations.
- ``egress_client(*, allow=(), **httpx_kwargs) -> httpx.Client`` and
  ``async_egress_client(*, allow=(), **httpx_kwargs) -> httpx.AsyncClient`` -- clients on the
  checked transport, ``trust_env=False``. Transport settings (``verify``, ``cert``, ``limits``,
  ``http1``, ``http2``, ``retries``, ``socket_options``) go to the transport; ``proxy``,
  ``mounts``, ``transport``, ``trust_env`` and ``uds`` are refused with a ``TypeError``.
  ``allow`` adds entries for this client only (the registry ``tickwork assets`` was pointed at).
- ``egress_transport(*, allow=(), **transport_kwargs) -> httpx.HTTPTransport`` and
  ``async_egress_transport(...) -> httpx.AsyncHTTPTransport`` -- the transport itself, for a
  client built elsewhere (an Authlib ``OAuth2Client(transport=egress_transport(), trust_env=False)``).
- ``connect_socket(host, port, timeout) -> socket.socket`` -- a TCP connection to a checked
  address of ``host``; raises :class:`DestinationRefused`, or ``OSError`` as
  ``socket.create_connection`` does (``socket.gaierror`` for a name that does not resolve).
- ``shown_text(text, limit=300) -> str`` -- a far end's words made fit to show a person:
  control and format characters removed, whitespace folded, trimmed to ``limit``.
- ``configure(allow_text) -> EgressPolicy``, ``parse_allow(allow_text) -> EgressPolicy``,
  ``current_policy() -> EgressPolicy`` -- the process's policy; ``EgressPolicy.refusal(address)``
  says why one ``ipaddress`` address is refused, or None.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import ssl
import threading
import time
import unicodedata
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import httpcore
import httpx

from models.core.errors import ConfigurationError, InvalidInput

NOT_ALLOWED = "destination not allowed"
SETTING = "TICKWORK_EGRESS_ALLOW"
SCHEMES = ("http", "https")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class DestinationRefused(httpx.TransportError):
    """A connection the egress policy refuses; nothing was sent to it."""

    def __init__(self, reason: str):
        super().__init__(f"{NOT_ALLOWED}: {reason}")
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Which addresses are refused, and why
# ---------------------------------------------------------------------------------------------

_METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle, ... instance metadata
    "169.254.169.253",  # AWS's resolver
    "169.254.170.2",  # AWS ECS task metadata and credentials
    "169.254.170.23",  # AWS EKS pod identity
    "169.254.0.23",  # Tencent Cloud
    "169.254.42.42",  # Scaleway
    "100.100.100.200",  # Alibaba Cloud
    "192.0.0.192",  # Oracle Cloud (legacy)
    "168.63.129.16",  # Azure's WireServer: a public-looking address only the host answers
    "fd00:ec2::254",  # AWS instance metadata over IPv6
    "fd00:ec2::253",  # AWS's resolver over IPv6
    "fd00:ec2::23",  # AWS EKS pod identity over IPv6
    "fd20:ce::254",  # GCP instance metadata over IPv6
))


def _nets(*pairs: tuple[str, str]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(net), words) for net, words in pairs)


_V4_REFUSED = _nets(
    ("0.0.0.0/32", "the unspecified address"),
    ("0.0.0.0/8", "a 'this network' address"),
    ("10.0.0.0/8", "a private address"),
    ("100.64.0.0/10", "a carrier-grade NAT address"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address"),
    ("172.16.0.0/12", "a private address"),
    ("192.0.0.0/24", "a reserved address"),
    ("192.0.2.0/24", "a reserved address"),
    ("192.88.99.0/24", "a reserved address"),
    ("192.168.0.0/16", "a private address"),
    ("198.18.0.0/15", "a reserved address"),
    ("198.51.100.0/24", "a reserved address"),
    ("203.0.113.0/24", "a reserved address"),
    ("224.0.0.0/4", "a multicast address"),
    ("255.255.255.255/32", "the broadcast address"),
    ("240.0.0.0/4", "a reserved address"),
)
_V6_REFUSED = _nets(
    ("::/128", "the unspecified address"),
    ("::1/128", "a loopback address"),
    ("64:ff9b:1::/48", "a local-use NAT64 address"),
    ("fc00::/7", "a private (unique local) address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
    ("ff00::/8", "a multicast address"),
    ("2001::/23", "a reserved address"),  # IETF protocol assignments, Teredo among them
    ("2001:db8::/32", "a reserved address"),
    ("3fff::/20", "a reserved address"),
)
_V6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _embedded_v4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (IPv4-mapped, NAT64, 6to4), or None."""
    if address.version != 6:
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def _classify(address: IPAddress) -> tuple[str, bool] | None:
    """``(words, is_metadata)`` for a refused address, None for one the policy lets through."""
    plain = ipaddress.ip_address(str(address).split("%", 1)[0])  # a scope (fe80::1%eth0) changes nothing
    if plain in _METADATA:
        return "a cloud metadata address", True
    embedded = _embedded_v4(plain)
    if embedded is not None:
        inner = _classify(embedded)
        if inner is None:
            return None
        kind = "IPv4-mapped" if plain.ipv4_mapped is not None else ("NAT64" if plain in _NAT64 else "6to4")
        return f"the {kind} form of {embedded}, {inner[0]}", inner[1]
    for network, words in (_V4_REFUSED if plain.version == 4 else _V6_REFUSED):
        if plain in network:
            return words, False
    if plain.version == 6 and plain not in _V6_GLOBAL_UNICAST:
        return "a reserved address", False
    return None


# ---------------------------------------------------------------------------------------------
# Reading host names and addresses
# ---------------------------------------------------------------------------------------------

_NUMERIC_V4 = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)(\.(0[xX][0-9a-fA-F]*|[0-9]+)){0,3}\.?$")
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


def _normal_host(host: str) -> str:
    """A host as compared and resolved: no brackets, no trailing dot, lower case, percent-escapes decoded."""
    host = unquote(host.strip())
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".").lower()


def literal_address(host: str) -> IPAddress | None:
    """``host`` read as an address in any notation the C library accepts (``127.1``, ``0x7f000001``,
    ``0177.0.0.1``, ``2130706433``, ``::ffff:127.0.0.1``), or None when it is a name."""
    host = _normal_host(host)
    try:
        return ipaddress.ip_address(host)  # an IPv6 scope (fe80::1%eth0) is kept for the connection
    except ValueError:
        pass
    if _NUMERIC_V4.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host.rstrip(".")))
        except OSError:
            return None
    return None


# ---------------------------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EgressPolicy:
    """Refused addresses, minus the exceptions of an allow list."""

    networks: tuple[IPNetwork, ...] = ()
    hosts: frozenset[str] = frozenset()

    def allows_name(self, host: str) -> bool:
        return _normal_host(host) in self.hosts

    def refusal(self, address: IPAddress) -> str | None:
        """Why a connection to ``address`` is refused, or None."""
        found = _classify(address)
        if found is None:
            return None
        words, metadata = found
        plain = ipaddress.ip_address(str(address).split("%", 1)[0])
        candidates = [plain] + [a for a in (_embedded_v4(plain),) if a is not None]
        for network in self.networks:
            for candidate in candidates:
                if candidate.version != network.version or candidate not in network:
                    continue
                if not metadata or network.num_addresses == 1:
                    return None
        return words

    def allowing(self, entries: Iterable[str]) -> "EgressPolicy":
        """This policy with more exceptions (each entry as in ``TICKWORK_EGRESS_ALLOW``)."""
        more = parse_allow(",".join(entry for entry in entries if entry))
        if not more.networks and not more.hosts:
            return self
        return EgressPolicy(self.networks + more.networks, self.hosts | more.hosts)

    def addresses(self, host: str, port: int) -> list[str]:
        """The addresses of ``host`` a connection may use, in the resolver's order.

        Raises :class:`DestinationRefused` if any of them is refused (a name that resolves to
        one internal address among public ones is refused whole), ``socket.gaierror`` if the
        name does not resolve.
        """
        name = _normal_host(host)
        literal = literal_address(name)
        if literal is not None:
            if not self.allows_name(name):
                why = self.refusal(literal)
                if why is not None:
                    raise DestinationRefused(_words_for(name, literal, why))
            return [str(literal)]
        if not name:
            raise DestinationRefused("no host to connect to")
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except UnicodeError:
            raise socket.gaierror(socket.EAI_NONAME, f"{name!r} is not a host name") from None
        found: list[str] = []
        for family, _, _, _, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            text = sockaddr[0]
            if text not in found:
                found.append(text)
        if not found:
            raise socket.gaierror(socket.EAI_NONAME, f"{name} has no internet address")
        if not self.allows_name(name):
            for text in found:
                why = self.refusal(ipaddress.ip_address(text))
                if why is not None:
                    raise DestinationRefused(f"{name} resolves to {why}{_HINT}")
        return found


_HINT = f" ({SETTING} can open an exception)"


def _words_for(name: str, address: IPAddress, why: str) -> str:
    shown = str(address)
    said = name if name == shown else f"{name} ({shown})"
    return f"{said} is {why}{_HINT}"


def parse_allow(text: str | None) -> EgressPolicy:
    """The policy for an allow list (``10.0.0.0/8,::1/128,relay.internal``); a bad entry is a
    :class:`~models.core.errors.ConfigurationError` naming it."""
    networks: list[IPNetwork] = []
    hosts: set[str] = set()
    for raw in (text or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=True))
            continue
        except ValueError as exc:
            if "/" in entry or ":" in entry or literal_address(entry) is not None:
                raise ConfigurationError(
                    f"{SETTING}: {entry!r} is not a network Tickwork can read ({exc}); write a CIDR such as "
                    "10.0.0.0/8, 192.168.1.20/32 or fd00::/8, with no bits set past the prefix") from None
        name = entry.rstrip(".").lower()
        labels = name.split(".")
        if len(name) > 253 or not all(_HOST_LABEL.match(label) for label in labels) or labels[-1].isdigit():
            raise ConfigurationError(
                f"{SETTING}: {entry!r} is neither a network (10.0.0.0/8) nor a host name (relay.internal); "
                "entries are separated by commas")
        hosts.add(name)
    return EgressPolicy(tuple(networks), frozenset(hosts))


_policy: EgressPolicy | None = None
_policy_lock = threading.Lock()
_transports: "weakref.WeakSet[_Pooled]" = weakref.WeakSet()


def configure(allow_text: str | None) -> EgressPolicy:
    """Set the process's policy from ``TICKWORK_EGRESS_ALLOW``'s text; connections kept open under
    another policy are closed, so the next request connects, and is checked, again."""
    global _policy
    policy = parse_allow(allow_text)
    with _policy_lock:
        changed, _policy = _policy is not None and _policy != policy, policy
        pooled = list(_transports) if changed else []
    for transport in pooled:
        transport.drop_connections()
    return policy


def current_policy() -> EgressPolicy:
    """The process's policy: as configured, else from the environment on first use."""
    global _policy
    if _policy is None:
        with _policy_lock:
            if _policy is None:
                _policy = parse_allow(os.environ.get(SETTING))
    return _policy


class _PolicySource:
    """The process's policy at the moment of each connection, with a client's own extra entries."""

    def __init__(self, allow: Iterable[str]):
        self.allow = tuple(allow)
        parse_allow(",".join(self.allow))  # a bad extra entry is refused when the client is made
        self._base: EgressPolicy | None = None
        self._combined: EgressPolicy | None = None

    def __call__(self) -> EgressPolicy:
        base = current_policy()
        if not self.allow:
            return base
        if base is not self._base:
            self._base, self._combined = base, base.allowing(self.allow)
        return self._combined


# ---------------------------------------------------------------------------------------------
# Save-time checks
# ---------------------------------------------------------------------------------------------

def _url_host(url) -> tuple[str | None, str | None]:
    """``(host, problem)`` for ``url``: the host it would connect to, or why it is no http(s) URL."""
    if not isinstance(url, str) or not url.strip():
        return None, "is not a URL"
    url = url.strip()
    try:
        parsed = httpx.URL(url)
        scheme, host = parsed.scheme, parsed.host
    except (httpx.InvalidURL, TypeError, ValueError):
        # httpx refuses some notations (0177.0.0.1): read the host as a looser parser would, so the
        # answer says what the address is rather than only that the URL is malformed.
        try:
            parts = urlsplit(url)
            scheme, host = parts.scheme.lower(), parts.hostname
        except ValueError:
            return None, "is not a valid URL"
        if scheme in SCHEMES and host and literal_address(host) is not None:
            return host, None
        return None, "is not a valid URL"
    if scheme not in SCHEMES:
        return None, "must be an http:// or https:// URL"
    if not host:
        return None, "has no host"
    return host, None


def _host_refusal(host: str) -> str | None:
    """Why connecting to ``host`` is refused, from its literal address or what it resolves to now;
    None when allowed or when the name does not resolve (it is checked again at connect)."""
    try:
        current_policy().addresses(host, 443)
    except DestinationRefused as refused:
        return refused.reason
    except (OSError, UnicodeError):
        return None
    return None


def host_refusal(host) -> str | None:
    """Why the policy refuses a bare host (an SMTP relay's), or None; a name that does not resolve is not refused."""
    if not isinstance(host, str) or not host.strip():
        return "there is no host"
    return _host_refusal(host)


def url_refusal(url) -> str | None:
    """Why the policy refuses ``url`` (the scheme, a literal address, or a name that resolves to a
    refused address), or None."""
    host, problem = _url_host(url)
    if problem is not None:
        return f"the URL {problem}"
    return _host_refusal(host)


def check_url(url, *, field: str) -> None:
    """Refuse ``url`` when saved: not http(s), or a destination the policy refuses.

    Raises :class:`~models.core.errors.InvalidInput` naming ``field``.
    """
    host, problem = _url_host(url)
    if problem is not None:
        raise InvalidInput(f"{field} {problem}.", field=field)
    why = _host_refusal(host)
    if why is not None:
        raise InvalidInput(f"{field}: {NOT_ALLOWED}: {why}.", field=field, code="destination_not_allowed")


def check_host(host, *, field: str) -> None:
    """Refuse a bare host name or address (an SMTP relay's) the policy refuses; see :func:`check_url`."""
    if not isinstance(host, str) or not host.strip() or any(c in host for c in "/@? #\\"):
        raise InvalidInput(f"{field} is a host name or an address, such as smtp.example.com.", field=field)
    why = _host_refusal(host)
    if why is not None:
        raise InvalidInput(f"{field}: {NOT_ALLOWED}: {why}.", field=field, code="destination_not_allowed")


# ---------------------------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------------------------

class _Deadline:
    def __init__(self, seconds: float | None):
        self.at = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float | None:
        return None if self.at is None else max(0.001, self.at - time.monotonic())


def connect_socket(host: str, port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to a checked address of ``host`` (the first that answers, within ``timeout``).

    Raises :class:`DestinationRefused`, or ``OSError`` as ``socket.create_connection`` does.
    """
    addresses = current_policy().addresses(host, port)
    deadline = _Deadline(timeout)
    failure: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((address, port), deadline.left())
        except OSError as exc:
            failure = exc
    raise failure


class _CheckedBackend(httpcore.SyncBackend):
    """httpcore's own network backend, connecting only to addresses the policy allows."""

    def __init__(self, policy: _PolicySource):
        self.policy = policy

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            addresses = self.policy().addresses(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {getattr(exc, 'strerror', None) or exc}") from None
        deadline = _Deadline(timeout)
        failure: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout=deadline.left(), local_address=local_address,
                                           socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise DestinationRefused("a unix socket is not a destination")


class _AsyncCheckedBackend(httpcore.AsyncNetworkBackend):
    """As :class:`_CheckedBackend`, for httpx's async client (names are resolved in a worker thread)."""

    def __init__(self, policy: _PolicySource):
        self.policy = policy
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        import anyio.to_thread

        policy = self.policy()
        try:
            addresses = await anyio.to_thread.run_sync(policy.addresses, host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {getattr(exc, 'strerror', None) or exc}") from None
        deadline = _Deadline(timeout)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(address, port, timeout=deadline.left(),
                                                    local_address=local_address, socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise DestinationRefused("a unix socket is not a destination")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class _Pooled:
    """What the sync and async transports share: a pool whose connections can be dropped."""

    _pool: object

    def drop_connections(self) -> None:
        close = getattr(self._pool, "close", None)
        try:
            result = close() if close else None
            if hasattr(result, "close"):  # the async pool's close() is a coroutine: closing it is enough here
                result.close()
        except Exception:  # noqa: BLE001 - a pool being dropped may already be closing
            pass


_TRANSPORT_ARGS = ("verify", "cert", "limits", "http1", "http2", "retries", "socket_options", "local_address")
_REFUSED_ARGS = ("proxy", "proxies", "mounts", "transport", "trust_env", "uds", "app")


def _pool_args(verify, cert, limits: httpx.Limits, http1: bool, http2: bool, retries: int,
               socket_options, local_address) -> dict:
    if not isinstance(verify, (bool, ssl.SSLContext)):
        raise TypeError("verify is True, False or an ssl.SSLContext")
    # The trust store may come from SSL_CERT_FILE / SSL_CERT_DIR, as for any httpx client: that widens
    # whom TLS trusts, never where a connection goes (proxies and .netrc stay ignored).
    context = verify if not isinstance(verify, bool) else httpx.create_ssl_context(verify=verify, cert=cert,
                                                                                   trust_env=True)
    return dict(ssl_context=context, max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
                http1=http1, http2=http2, retries=retries, socket_options=socket_options, local_address=local_address)


class _OnePassPool(httpcore.ConnectionPool):
    """httpcore's connection pool, its bookkeeping done in one pass over the connections.

    httpcore 1.0 runs this bookkeeping whenever a request starts or ends: for every queued
    request it looks at every connection again, for every idle connection it counts all of
    them again, and it asks every idle socket whether the far end closed it (a ``poll``
    each). With a sending pool of 32 connections that was hundreds of calls and thirty
    system calls per request, a tenth of a send's CPU. The decisions are httpcore's: a
    closed connection is dropped, an expired one closed, idle ones beyond the keep-alive
    bound closed, a queued request given an available connection of its origin, else a new
    one while there is room, else one made by closing an idle one. A connection is asked
    whether it expired (its keep-alive time, or the far end closing it) just before it is
    given to a request, and all the idle ones every ``SWEEP`` seconds, so none is ever
    reused after it expired.
    """

    SWEEP = 1.0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._swept_at = 0.0

    def _assign_requests_to_connections(self) -> list:
        closing = []
        now = time.monotonic()
        sweep = now - self._swept_at >= self.SWEEP
        if sweep:
            self._swept_at = now
        held = {id(request.connection) for request in self._requests if request.connection is not None}
        kept = []
        for connection in self._connections:
            if connection.is_closed():
                continue
            if sweep and connection.has_expired():
                closing.append(connection)
                continue
            kept.append(connection)
        surplus = len(kept) - self._max_keepalive_connections
        if surplus > 0:
            still = []
            for connection in kept:
                if surplus > 0 and connection.is_idle() and id(connection) not in held:
                    closing.append(connection)
                    surplus -= 1
                else:
                    still.append(connection)
            kept = still
        self._connections = kept
        queued = [request for request in self._requests if request.is_queued()]
        if not queued:
            return closing
        free = [connection for connection in kept if id(connection) not in held and connection.is_available()]
        for pool_request in queued:
            origin = pool_request.request.url.origin
            connection = None
            for position, candidate in enumerate(free):
                if candidate.can_handle_request(origin):
                    del free[position]
                    if candidate.has_expired():  # its keep-alive ran out, or the far end closed it
                        self._connections.remove(candidate)
                        closing.append(candidate)
                        continue
                    connection = candidate
                    break
            if connection is None:
                if len(self._connections) >= self._max_connections:
                    idle = next((candidate for candidate in free if candidate.is_idle()), None)
                    if idle is None:
                        continue  # stays queued until a connection frees up
                    free.remove(idle)
                    self._connections.remove(idle)
                    closing.append(idle)
                connection = self.create_connection(origin)
                self._connections.append(connection)
            pool_request.assign_to_connection(connection)
        return closing


class EgressTransport(_Pooled, httpx.HTTPTransport):
    """httpx's own transport on a connection pool whose network backend is the policy's.

    httpx builds its pool in ``HTTPTransport.__init__`` without a way to pass a network
    backend, so this one builds the pool itself; everything else (requests, responses,
    error mapping) is httpx's.
    """

    def __init__(self, *, allow: Iterable[str] = (), verify=True, cert=None, limits: httpx.Limits | None = None,
                 http1: bool = True, http2: bool = False, retries: int = 0, socket_options=None,
                 local_address: str | None = None):
        self._pool = _OnePassPool(
            network_backend=_CheckedBackend(_PolicySource(allow)),
            **_pool_args(verify, cert, limits or httpx.Limits(max_connections=100, max_keepalive_connections=20),
                         http1, http2, retries, socket_options, local_address))
        _transports.add(self)


class AsyncEgressTransport(_Pooled, httpx.AsyncHTTPTransport):
    """The async twin of :class:`EgressTransport`."""

    def __init__(self, *, allow: Iterable[str] = (), verify=True, cert=None, limits: httpx.Limits | None = None,
                 http1: bool = True, http2: bool = False, retries: int = 0, socket_options=None,
                 local_address: str | None = None):
        self._pool = httpcore.AsyncConnectionPool(
            network_backend=_AsyncCheckedBackend(_PolicySource(allow)),
            **_pool_args(verify, cert, limits or httpx.Limits(max_connections=100, max_keepalive_connections=20),
                         http1, http2, retries, socket_options, local_address))
        _transports.add(self)


def egress_transport(*, allow: Iterable[str] = (), **transport_kwargs) -> EgressTransport:
    """The checked transport, for a client built elsewhere (keep ``trust_env=False`` on that client)."""
    return EgressTransport(allow=allow, **transport_kwargs)


def async_egress_transport(*, allow: Iterable[str] = (), **transport_kwargs) -> AsyncEgressTransport:
    """The async checked transport."""
    return AsyncEgressTransport(allow=allow, **transport_kwargs)


def _split(kwargs: dict) -> tuple[dict, dict]:
    refused = sorted(set(kwargs) & set(_REFUSED_ARGS))
    if refused:
        raise TypeError(f"an egress client takes no {', '.join(refused)}: its transport is the egress policy's")
    transport = {key: kwargs.pop(key) for key in _TRANSPORT_ARGS if key in kwargs}
    return transport, kwargs


def egress_client(*, allow: Iterable[str] = (), **httpx_kwargs) -> httpx.Client:
    """An ``httpx.Client`` whose every connection is checked by the policy; environment proxies ignored."""
    transport_kwargs, client_kwargs = _split(dict(httpx_kwargs))
    return httpx.Client(transport=EgressTransport(allow=allow, **transport_kwargs), trust_env=False, **client_kwargs)


def async_egress_client(*, allow: Iterable[str] = (), **httpx_kwargs) -> httpx.AsyncClient:
    """The async twin of :func:`egress_client`."""
    transport_kwargs, client_kwargs = _split(dict(httpx_kwargs))
    return httpx.AsyncClient(transport=AsyncEgressTransport(allow=allow, **transport_kwargs), trust_env=False,
                             **client_kwargs)


# ---------------------------------------------------------------------------------------------
# Showing a far end's words
# ---------------------------------------------------------------------------------------------

def shown_text(text, limit: int = 300) -> str:
    """``text`` fit to show a person: no control or format characters, whitespace folded, at most ``limit``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = "".join(ch if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn") else " "
                   for ch in str(text or ""))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


__all__ = ["NOT_ALLOWED", "SETTING", "AsyncEgressTransport", "DestinationRefused", "EgressPolicy", "EgressTransport",
           "async_egress_client", "async_egress_transport", "check_host", "check_url", "configure", "connect_socket",
           "current_policy", "egress_client", "egress_transport", "host_refusal", "literal_address", "parse_allow", "shown_text",
           "url_refusal"]
