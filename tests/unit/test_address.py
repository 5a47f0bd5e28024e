"""llmviz.address: the address students open, found without sending a packet."""

import ipaddress
import socket

import psutil

from llmviz.address import PRIVATE_TARGETS, join_line, lan_address, student_url


def machine_ipv4_addresses() -> set[str]:
    """Every IPv4 address of this machine's interfaces, as the operating system lists them (psutil)."""
    return {a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET}


def test_the_lan_address_is_one_of_this_machines_and_reachable_from_others():
    found = lan_address()
    if found is None:  # a machine with no route to a private network: nothing to offer (join_line says so)
        return
    assert found in machine_ipv4_addresses()
    parsed = ipaddress.ip_address(found)
    assert not parsed.is_loopback and not parsed.is_unspecified


def test_finding_the_address_sends_nothing():
    """A UDP socket listening on loopback is used as the probe's target: the probe connects to it (and skips the
    loopback answer), and the listener has received nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.setblocking(False)
        target = listener.getsockname()
        assert lan_address(targets=(target[0],)) is None  # loopback is no use to a student's machine
        try:
            received = listener.recv(65536)
        except BlockingIOError:
            received = None
        assert received is None


def test_an_unreachable_target_falls_back_to_the_next_and_then_to_none():
    # the broadcast address refuses a connect (no SO_BROADCAST): the next target is asked
    assert lan_address(targets=("255.255.255.255",)) is None
    assert lan_address(targets=("255.255.255.255", *PRIVATE_TARGETS)) == lan_address()


def test_the_url_students_open():
    assert student_url(8501, None, lan="10.1.2.3") == "http://10.1.2.3:8501"
    assert student_url(8501, "0.0.0.0", lan="10.1.2.3") == "http://10.1.2.3:8501"
    assert student_url(8600, "192.168.0.7", lan="10.1.2.3") == "http://192.168.0.7:8600"  # the address it binds
    assert student_url(8501, "localhost", lan="10.1.2.3") is None  # this machine's own name
    assert student_url(8501, "llm.school.example", lan="10.1.2.3") == "http://llm.school.example:8501"
    assert student_url(8501, "127.0.0.1", lan="10.1.2.3") is None
    assert student_url(8501, None, lan=None) is None
    assert student_url(8501, None, lan="fd00::5") == "http://[fd00::5]:8501"
    assert student_url(8501, None, lan="10.1.2.3", base_path="/llm/") == "http://10.1.2.3:8501/llm"
    assert student_url(8501, "127.0.0.1", public="http://server:8080/") == "http://server:8080"


def test_the_start_line_names_the_firewall_port_only_for_this_servers_own_port():
    assert "TCP port 8501" in join_line("http://10.1.2.3:8501", 8501)
    assert "port" not in join_line("http://server:8080", 8501)
    assert "cannot reach" in join_line(None, 8501)
