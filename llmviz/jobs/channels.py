"""The message lines between the server and a worker (:mod:`llmviz.jobs.worker`): one :class:`Channel` interface
(``send``, ``poll(timeout)``, ``recv``), between two threads of one process (:func:`thread_channel_pair`: nothing is
pickled), over a ``multiprocessing`` pipe between two processes (:class:`PipeChannel`), and the server's end of a
pipe read by a thread of its own (:class:`ReadAhead`), so that a frozen worker never holds the server. A side that
has gone raises :class:`WorkerGone`.

>>> ours, theirs = thread_channel_pair()
>>> ours.send("pause"); theirs.poll(1.0), theirs.recv()
(True, 'pause')
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import queue
import socket
import threading

from llmviz.errors import LlmvizError

log = logging.getLogger(__name__)


class WorkerGone(LlmvizError):
    """The other end of a channel has gone (a worker process that died, or a server that closed)."""


class Channel:
    """One end of a two-way message line: ``send``, ``poll(timeout)``, ``recv``."""

    def send(self, message) -> None:
        raise NotImplementedError

    def poll(self, timeout: float = 0.0) -> bool:
        raise NotImplementedError

    def recv(self):
        raise NotImplementedError

    def close(self) -> None:
        pass

    def interrupt(self) -> None:
        """Wake a thread blocked reading this end, without closing it (see :meth:`PipeChannel.interrupt`)."""


class _QueueChannel(Channel):
    """Between two threads of one process: messages are passed as they are (nothing is pickled)."""

    _CLOSED = object()

    def __init__(self, inbox: queue.Queue, outbox: queue.Queue):
        self.inbox, self.outbox = inbox, outbox
        self._peeked: list = []

    def send(self, message) -> None:
        self.outbox.put(message)

    def poll(self, timeout: float = 0.0) -> bool:
        if self._peeked:
            return True
        try:
            self._peeked.append(self.inbox.get(timeout=timeout) if timeout > 0 else self.inbox.get_nowait())
        except queue.Empty:
            return False
        return True

    def recv(self):
        message = self._peeked.pop() if self._peeked else self.inbox.get()
        if message is self._CLOSED:
            self.inbox.put(message)  # stays closed for every later read
            raise WorkerGone("the other side has gone")
        return message

    def close(self) -> None:
        self.outbox.put(self._CLOSED)


def thread_channel_pair() -> tuple[Channel, Channel]:
    """Two connected channels for a worker thread: what one sends, the other receives."""
    a: queue.Queue = queue.Queue()
    b: queue.Queue = queue.Queue()
    return _QueueChannel(a, b), _QueueChannel(b, a)


class PipeChannel(Channel):
    """Between two processes over a ``multiprocessing`` pipe. Messages are pickled by our own code on both
    ends (never a file from elsewhere); tensors travel as bytes, so no shared-memory handle outlives a message.
    Several threads may send (a worker's heartbeat thread and its loop): one message at a time goes on the pipe."""

    def __init__(self, connection):
        self.connection = connection
        self._sending = threading.Lock()

    def send(self, message) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            with self._sending:
                self.connection.send_bytes(data)
        except (BrokenPipeError, ConnectionError, OSError) as error:
            raise WorkerGone(str(error)) from error

    def poll(self, timeout: float = 0.0) -> bool:
        try:
            return self.connection.poll(timeout)
        except (BrokenPipeError, ConnectionError, OSError, EOFError):
            return True  # recv() will say it has gone

    def recv(self):
        try:
            return pickle.loads(self.connection.recv_bytes())
        except (EOFError, BrokenPipeError, ConnectionError, OSError) as error:
            raise WorkerGone(str(error) or "the pipe was closed") from error

    def close(self) -> None:
        with self._sending:  # a send under way ends first: its file number is never freed under it
            self.connection.close()

    def interrupt(self) -> None:
        """End the pipe for both sides without giving up its file number: a thread blocked reading it wakes to the
        pipe's end (``socket.shutdown``; a duplex ``multiprocessing.Pipe`` is a socket pair). Closing it instead
        would free the number while that thread may still read it, and the next worker's pipe may get it."""
        try:
            with socket.socket(fileno=os.dup(self.connection.fileno())) as duplicate:
                duplicate.shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError):
            pass  # closed already, or not a socket: the reading thread ends at the worker's exit


class ReadAhead(_QueueChannel):
    """The server's end of a worker's pipe, read by a thread of its own: ``poll`` and ``recv`` never block on a
    message the worker has only begun to send. A worker stopped mid-message (frozen by the machine, ``SIGSTOP``)
    would otherwise hold the supervisor in ``recv`` for ever, so that it could never notice the silence and kill the
    worker; with this, the silence is noticed (no whole message for ``worker_timeout`` seconds) and the kill ends the
    pipe, which ends the reading thread. What it read waits in a short queue (the worker still waits when the server
    reads slowly), read as a thread worker's channel is (:class:`_QueueChannel`).

    Only the reading thread closes the pipe, once it has stopped reading: :meth:`close` ends the pipe and wakes it. A
    pipe closed under a reading thread freed its file number while the thread could still start a read on it; the
    next worker's pipe then got that number, and the old thread took the first bytes of the new worker's messages
    (under load, a finished run ended "stopped unexpectedly (exit code 0)" without its result).

    >>> a, b = thread_channel_pair()
    >>> reading = ReadAhead(a)
    >>> b.send("step 1"); reading.poll(5.0), reading.recv()
    (True, 'step 1')
    >>> b.close(); reading.poll(5.0)
    True
    >>> reading.recv()
    Traceback (most recent call last):
    ...
    llmviz.jobs.channels.WorkerGone: the other side has gone
    """

    def __init__(self, channel: Channel):
        super().__init__(queue.Queue(maxsize=8), queue.Queue())
        self.channel = channel
        self._closing = threading.Event()
        self._pipe = threading.Lock()  # held while the pipe is closed or interrupted: never one under the other
        self._pipe_open = True
        self._reading = threading.Thread(target=self._read, name="llmviz-worker-reader", daemon=True)
        self._reading.start()

    def _read(self) -> None:
        try:
            while not self._closing.is_set():
                try:
                    message = self.channel.recv()
                except WorkerGone:
                    break
                except Exception:  # noqa: BLE001 - a message that cannot be read: the worker is as good as gone
                    if not self._closing.is_set():
                        log.exception("a worker's message could not be read: its run ends as if the worker had gone")
                    break
                self._hand_on(message)
        finally:
            with self._pipe:
                self.channel.interrupt()  # a send blocked on a frozen worker ends first (close waits for sends)
                self.channel.close()  # this thread reads no more: the file number may go to another pipe now
                self._pipe_open = False
            self._hand_on(self._CLOSED)

    def _hand_on(self, message) -> None:
        """Into the inbox; once closing, what nobody will read makes room for the end mark (never a thread blocked
        for ever on a full inbox)."""
        while True:
            try:
                self.inbox.put(message, timeout=0.5)
                return
            except queue.Full:
                if self._closing.is_set():
                    with contextlib.suppress(queue.Empty):
                        self.inbox.get_nowait()

    def send(self, message) -> None:
        self.channel.send(message)

    def close(self) -> None:
        self._closing.set()
        with self._pipe:
            if self._pipe_open:  # (once closed, its number may be another pipe's: never touched again)
                self.channel.interrupt()
