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
