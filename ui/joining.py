"""How students join the class: the address they open on their own machines, printed when the server starts and shown
to the teacher (Home and the class view) with a QR code a phone or a laptop's camera can read off the projector.

The address is :func:`llmviz.address.student_url`'s: ``LLMVIZ_PUBLIC_URL`` behind a proxy, else this machine's address
on the local network (found without sending anything) and the port Streamlit serves on. Students never see the card:
it is the teacher's (``ui.identity.is_teacher``).
"""

from __future__ import annotations

import base64
import functools
import html
import io

import streamlit as st

from llmviz import settings
from llmviz.address import join_line, lan_address, student_url


@functools.cache
def _lan() -> str | None:
    """This machine's LAN address, asked once per server process (it asks the routing table, sends nothing)."""
    return lan_address()


def server_port() -> int:
    return int(st.get_option("server.port") or 8501)


def student_address() -> str | None:
    """The address students open (``None``: this server cannot be reached from their machines)."""
    bind = st.get_option("server.address")
    lan = _lan() if not bind or bind in ("0.0.0.0", "::") else None
    return student_url(
        server_port(),
        bind,
        lan=lan,
        base_path=st.get_option("server.baseUrlPath") or "",
        public=settings.get("LLMVIZ_PUBLIC_URL"),
    )


def start_line() -> str:
    """What the server prints once when it starts: the address students open, or why they cannot."""
    return "llmviz: " + join_line(student_address(), server_port())


def qr_image(url: str) -> str:
    """The QR code of ``url``: an SVG picture (as a data address: st.html keeps no inline SVG), its alt text naming
    it for a screen reader (the address is also written beside it as text).

    >>> qr_image("http://192.168.1.20:8501")[:60]
    '<img alt="QR code of http://192.168.1.20:8501" width="165" s'
    """
    import segno

    code = segno.make(url, error="m")
    drawn = io.BytesIO()  # a standalone SVG (with its namespace: a picture, not inline markup)
    code.save(drawn, kind="svg", scale=5, border=4, dark="#000", light="#fff", xmldecl=False)
    size = code.symbol_size(scale=5, border=4)[0]
    alt = html.escape(f"QR code of {url}", quote=True)
    data = base64.b64encode(drawn.getvalue()).decode()
    return f'<img alt="{alt}" width="{size}" src="data:image/svg+xml;base64,{data}">'


def card() -> None:
    """The teacher's card: the address students open, in large type and as a QR code. Nothing for a student."""
    from ui import identity

    if not identity.is_teacher():
        return
    url = student_address()
    with st.container(border=True):
        if url is None:
            st.markdown(join_line(None, server_port()))
            return
        words, picture = st.columns([3, 1], vertical_alignment="center")
        with words:
            st.markdown("**Students join at**")
            st.code(url, language=None)
            reach = (
                "through the proxy (LLMVIZ_PUBLIC_URL)"
                if settings.get("LLMVIZ_PUBLIC_URL")
                else f"on the same network; the firewall must allow TCP port {server_port()}"
            )
            st.caption(f"On their own machines, {reach} (docs/classroom.md). Only you see this card.")
        with picture:
            st.html(qr_image(url))
