"""The address students type on their own machines to reach the app: this machine's address on the local network.

Found without sending anything. Connecting a UDP socket only asks the operating system which of its interfaces
would carry a datagram to that destination (its routing table); no packet leaves until something is sent, and
nothing is. The destinations are private addresses (RFC 1918), so the interface found is the one facing the class's
network, not a VPN's route to the internet. No name is looked up either (a DNS query would be traffic). Only the
standard library: ``run.py`` imports this before the virtual environment exists.

>>> student_url(8501, "", lan="192.168.1.20")
'http://192.168.1.20:8501'
>>> student_url(8501, "127.0.0.1", lan="192.168.1.20") is None  # the server listens on this machine only
True
>>> student_url(8501, "", lan=None, public="https://llm.school.example/")
'https://llm.school.example'
"""

from __future__ import annotations

import ipaddress
import socket

# one address inside each private range: the routing table picks the interface that faces that network
PRIVATE_TARGETS = ("10.255.255.255", "192.168.255.255", "172.31.255.255")
DISCARD_PORT = 9  # any port: a UDP connect sends nothing


def lan_address(targets: tuple[str, ...] = PRIVATE_TARGETS) -> str | None:
    """This machine's IPv4 address on the local network, or ``None`` when it has none (no network, loopback only).

    A UDP ``connect`` picks the source address the kernel would use for ``target`` and sends no packet; a target
    with no route raises ``OSError`` and the next one is tried. A loopback or unspecified answer is no use to a
    student's machine and is skipped."""
    for target in targets:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect((target, DISCARD_PORT))
                found = probe.getsockname()[0]
        except OSError:
            continue
        if usable(found):
            return found
    return None


def usable(address: str) -> bool:
    """Can another machine open the app at ``address``? Not a loopback, unspecified or link-local one.

    >>> usable("192.168.1.20"), usable("127.0.0.1"), usable("0.0.0.0"), usable("169.254.3.4"), usable("nonsense")
    (True, False, False, False, False)
    """
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return not (parsed.is_loopback or parsed.is_unspecified or parsed.is_link_local)


def _other_machines_name(name: str) -> bool:
    """A host name (not an address) other machines may resolve to this one: any but localhost's."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return name.lower() not in ("localhost", "localhost.localdomain")
    return False


def student_url(
    port: int, bind_address: str | None, lan: str | None = None, base_path: str = "", public: str | None = None
) -> str | None:
    """The address students open: ``public`` (the proxy's address, ``LLMVIZ_PUBLIC_URL``) when given; else
    ``http://<address>:<port>/<base_path>`` with the address the server listens on (``server.address``) when
    that is one other machines can reach, or this machine's LAN address (``lan``) when it listens on every
    interface (Streamlit's default). ``None`` when students cannot reach it: it listens on loopback only, or the
    machine has no network address."""
    if public:
        return public.rstrip("/")
    if bind_address and bind_address not in ("0.0.0.0", "::"):
        host = bind_address if usable(bind_address) or _other_machines_name(bind_address) else None
    else:
        host = lan
    if host is None:
        return None
    if ":" in host:  # an IPv6 address in a URL is bracketed
        host = f"[{host}]"
    path = "/" + base_path.strip("/") if base_path.strip("/") else ""
    return f"http://{host}:{port}{path}"


def join_line(url: str | None, port: int) -> str:
    """The one line the server prints at start, for the teacher.

    >>> join_line("http://192.168.1.20:8501", 8501)
    'Students open http://192.168.1.20:8501 on their own machines (the firewall must allow TCP port 8501).'
    >>> join_line(None, 8501)[:60]
    'Students cannot reach this server from their machines: it li'
    """
    if url is None:
        return (
            "Students cannot reach this server from their machines: it listens on this machine only, or the machine "
            "has no network address (docs/classroom.md, 'How students connect')."
        )
    if url.endswith(f":{port}") or f":{port}/" in url:  # this server's own port (not a proxy's address)
        return f"Students open {url} on their own machines (the firewall must allow TCP port {port})."
    return f"Students open {url} on their own machines."
