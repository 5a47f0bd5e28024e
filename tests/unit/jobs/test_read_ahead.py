"""The server's end of a worker's pipe is read by a thread of its own (llmviz.jobs.channels.ReadAhead): a worker frozen
in the middle of a message (``SIGSTOP`` while it sent a snapshot) no longer holds its supervisor in ``recv``, so the
silence is noticed and the worker killed (``test_supervisor``'s hung-worker test failed under CI's load: its
``SIGSTOP`` landed mid-snapshot and the job never ended)."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import struct
import time

import pytest

from llmviz.jobs.channels import PipeChannel, ReadAhead, WorkerGone


def test_a_message_begun_and_never_finished_blocks_nobody_and_the_end_of_the_pipe_is_said():
    ours, theirs = multiprocessing.Pipe(duplex=True)
    reading = ReadAhead(PipeChannel(ours))
    theirs.send_bytes(pickle.dumps("step 1"))
    assert reading.poll(10.0) and reading.recv() == "step 1"
    os.write(theirs.fileno(), struct.pack("!i", 1_000_000) + b"only the first bytes of a snapshot")
    assert reading.poll(0.5) is False  # the rest never comes: poll answers, it does not wait for the rest
    theirs.close()  # the worker is killed: its end of the pipe closes
    assert reading.poll(10.0)
    with pytest.raises(WorkerGone):
        reading.recv()
    with pytest.raises(WorkerGone):  # and stays gone
        reading.recv()


def test_closing_wakes_the_reading_thread_and_only_that_thread_gives_up_the_pipe():
    """The supervisor's close ends the pipe and wakes its reader while the worker is still there (the worker's end
    open), and the file number is given up only by the reading thread once it has stopped: a pipe closed under a
    reading thread let it start a read on the next worker's pipe, which had been given the same number, and take
    the first bytes of its messages (a finished run then ended "stopped unexpectedly (exit code 0)")."""
    ours, theirs = multiprocessing.Pipe(duplex=True)
    reading = ReadAhead(PipeChannel(ours))
    theirs.send_bytes(pickle.dumps("done"))
    assert reading.poll(10.0) and reading.recv() == "done"
    reading.close()  # the reader is blocked in a read: the worker has said nothing more and is still there
    assert reading.poll(10.0)
    with pytest.raises(WorkerGone):
        reading.recv()
    reading._reading.join(10.0)
    assert not reading._reading.is_alive() and ours.closed  # closed by the reading thread, after its last read
    with pytest.raises(EOFError):  # the worker's end sees the pipe's end
        theirs.recv_bytes()


def test_a_reader_closed_with_a_full_inbox_ends_and_gives_up_the_pipe():
    """Messages nobody will read do not keep the reading thread (and its pipe) for ever."""
    ours, theirs = multiprocessing.Pipe(duplex=True)
    reading = ReadAhead(PipeChannel(ours))
    for step in range(20):  # more than the inbox holds: the reader waits to hand them on
        theirs.send_bytes(pickle.dumps(step))
    assert reading.poll(10.0)
    reading.close()
    reading._reading.join(10.0)
    assert not reading._reading.is_alive() and ours.closed


def test_a_reader_that_has_given_up_its_pipe_never_touches_the_pipe_that_gets_its_number():
    """Once the worker has gone and the reader has closed the pipe, the next pipe may get the same file number: the
    supervisor's close must then leave that pipe alone (it ended the next worker's pipe, had it shut it down)."""
    ours, theirs = multiprocessing.Pipe(duplex=True)
    number = ours.fileno()
    reading = ReadAhead(PipeChannel(ours))
    theirs.close()  # the worker has gone: the reader sees the end and gives up the pipe
    reading._reading.join(10.0)
    assert not reading._reading.is_alive() and ours.closed
    new_ours, new_theirs = multiprocessing.Pipe(duplex=True)
    try:
        if number not in (new_ours.fileno(), new_theirs.fileno()):
            pytest.skip("the new pipe did not get the old number (another thread took it)")
        reading.close()  # the supervisor, afterwards
        new_theirs.send_bytes(b"the next worker's message")
        assert new_ours.poll(5.0) and new_ours.recv_bytes() == b"the next worker's message"
        new_ours.send_bytes(b"a control")
        assert new_theirs.recv_bytes() == b"a control"
    finally:
        new_ours.close()
        new_theirs.close()


def test_a_send_blocked_on_a_frozen_worker_does_not_hold_the_close():
    """A control sent to a worker that has stopped reading (frozen, its pipe full) blocks its sender; closing the
    reader ends that send (a broken pipe) instead of waiting on it for ever."""
    import threading

    ours, theirs = multiprocessing.Pipe(duplex=True)
    channel = PipeChannel(ours)
    reading = ReadAhead(channel)
    failed = threading.Event()
    sent = [0]

    def flood():
        try:
            while True:
                channel.send(b"x" * 65536)
                sent[0] += 1
        except WorkerGone:
            failed.set()

    sender = threading.Thread(target=flood, daemon=True)
    sender.start()
    seen = -1
    deadline = time.monotonic() + 10
    while sent[0] != seen and time.monotonic() < deadline:  # until the pipe's buffer is full: the sender blocked
        seen = sent[0]
        time.sleep(0.2)
    theirs.send_bytes(pickle.dumps("a message while the reader closes"))
    closer = threading.Thread(target=reading.close, daemon=True)
    closer.start()
    closer.join(10.0)
    assert not closer.is_alive(), "close waited on the blocked send"
    assert failed.wait(10.0)
    reading._reading.join(10.0)
    assert not reading._reading.is_alive() and ours.closed
    theirs.close()
