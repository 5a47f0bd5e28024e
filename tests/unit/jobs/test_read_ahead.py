"""The server's end of a worker's pipe is read by a thread of its own (llmviz.jobs.worker.ReadAhead): a worker frozen
in the middle of a message (``SIGSTOP`` while it sent a snapshot) no longer holds its supervisor in ``recv``, so the
silence is noticed and the worker killed (``test_supervisor``'s hung-worker test failed under CI's load: its
``SIGSTOP`` landed mid-snapshot and the job never ended)."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import struct

import pytest

from llmviz.jobs.worker import PipeChannel, ReadAhead, WorkerGone


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
