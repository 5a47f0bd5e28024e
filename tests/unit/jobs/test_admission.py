"""Who may train and who goes next (llmviz.jobs.admission): pure logic, no threads, no processes, no clock."""

import pytest

from llmviz.jobs.admission import Budget, Claim, Ledger, Phase, device_refusal, snapshot_refusal
from llmviz.training.footprint import GB, MB, size_text


def ledger(**budget) -> Ledger:
    return Ledger(Budget(**{"slots": 4, **budget}))


def test_a_claim_that_fits_is_accepted_and_one_that_does_not_is_refused_with_the_numbers():
    book = ledger(memory=8 * GB, client_memory=3 * GB)
    book.add(Claim("a", "ann", memory=2 * GB))
    assert book.refusal(Claim("b", "ann", memory=GB)) is None  # 2 + 1 = her 3 GB
    said = book.refusal(
        Claim("b", "ann", memory=int(1.5 * GB), what="Training GPT mini (1.1 M parameters)"),
        suggest=lambda left: f": lower the batch to {left // (256 * MB)}",
    )
    assert said == (
        "Training GPT mini (1.1 M parameters) needs about 1.5 GB; your share has 1.0 GB left: lower the batch to 4."
    )
    assert "\n" not in said
    too_big = book.refusal(Claim("c", "bob", memory=9 * GB, what="Training X"))
    assert too_big == "Training X needs about 9.0 GB; this server trains in at most 8.0 GB at once."


def test_five_sessions_of_one_client_hold_one_share():
    """Shares count the client, not the tab: five sessions of one computer are one student."""
    book = ledger(runs_per_client=1, client_memory=4 * GB)
    book.add(Claim("tab1-run", "10.0.0.7", memory=GB))
    book.add(Claim("tab2-run", "10.0.0.7", memory=GB))
    said = book.refusal(Claim("tab3-run", "10.0.0.7", memory=GB), tabs=False)
    assert said is not None and "You already have 2 runs going" in said
    assert "each computer (all its browser tabs together) trains 1 run at a time" in said
    assert book.refusal(Claim("other", "10.0.0.8", memory=GB), tabs=False) is None  # another student
    assert book.client_bytes("10.0.0.7") == 2 * GB and book.client_bytes("10.0.0.8") == 0


def test_a_stopping_claim_no_longer_counts_against_new_runs():
    book = ledger(runs_per_client=1)
    book.add(Claim("a", "ann"))
    book.add(Claim("b", "ann"))
    assert book.refusal(Claim("c", "ann")) is not None
    book.stopping("a")
    assert book.refusal(Claim("c", "ann")) is None


def test_waiting_claims_start_round_robin_between_clients():
    """Ann queues five runs before Bob and Cy queue one each: Bob's and Cy's start before Ann's second."""
    book = ledger(slots=1)
    for number in range(5):
        book.add(Claim(f"ann{number}", "ann"))
    book.add(Claim("bob0", "bob"))
    book.add(Claim("cy0", "cy"))
    started = []
    while (claim := book.next()) is not None:
        book.start(claim.group)
        started.append(claim.group)
        book.end(claim.group)  # it trains and ends: the slot is free again
    assert started == ["ann0", "bob0", "cy0", "ann1", "ann2", "ann3", "ann4"]


def test_queue_positions_follow_the_order_they_will_start_in():
    book = ledger(slots=1)
    for name, client in [("a1", "ann"), ("a2", "ann"), ("b1", "bob")]:
        book.add(Claim(name, client))
    book.start(book.next().group)  # a1
    assert [book.position(g) for g in ("a1", "a2", "b1")] == [None, 2, 1]


def test_a_client_at_its_running_share_waits_for_its_own_run():
    book = ledger(slots=4, runs_per_client=1)
    book.add(Claim("a1", "ann"))
    book.start(book.next().group)
    book.add(Claim("a2", "ann"))
    assert book.next() is None and book.waits_for("a2") == "own run"
    book.end("a1")
    assert book.next().group == "a2"


def test_a_claim_waits_until_its_memory_is_free():
    book = ledger(memory=4 * GB)
    book.add(Claim("big1", "ann", memory=3 * GB))
    book.start(book.next().group)
    book.add(Claim("big2", "bob", memory=3 * GB))
    book.add(Claim("small", "cy", memory=512 * MB))
    assert book.waits_for("big2") == "memory"
    assert book.next().group == "small"  # what fits starts meanwhile
    book.start("small")
    book.end("big1")
    assert book.next().group == "big2"
    assert book.server_bytes() == 512 * MB


def test_a_parked_claim_holds_its_state_and_counts_what_it_needs_to_go_on():
    book = ledger(memory=4 * GB, client_memory=3 * GB)
    book.add(Claim("a", "ann", memory=2 * GB))
    book.start("a")
    book.park("a", held=300 * MB)  # paused: its worker has gone, its state is in the server
    assert book.server_bytes() == 300 * MB and book.running() == 0
    assert book.client_bytes("ann") == 2 * GB  # resuming needs its whole worker again
    book.wait("a")
    assert book.claims["a"].phase == Phase.WAITING and book.next().group == "a"


def test_an_idle_worker_gives_its_slot_back_but_not_its_memory():
    book = ledger(slots=1, memory=4 * GB)
    book.add(Claim("task", "ann", memory=GB))
    book.start("task")
    book.idle("task")
    assert book.running() == 0 and book.server_bytes() == GB


def test_snapshot_room():
    assert snapshot_refusal(4 * MB, 120 * MB, 128 * MB) is None
    said = snapshot_refusal(10 * MB, 120 * MB, 128 * MB)
    assert said.startswith("This run's snapshots (10.0 MB at least) would not fit in the 128 MB kept for your")
    assert snapshot_refusal(0, 500 * MB, 128 * MB) is None  # a run that keeps no snapshots


def test_the_gpu_room_counts_what_is_promised_to_waiting_runs():
    assert device_refusal("Training X", 2 * GB, 3 * GB) is None
    said = device_refusal("Training X", 2 * GB, 3 * GB, reserved=2 * GB)
    assert said.startswith("Training X needs about 2.0 GB on the GPU, which has 3.0 GB free (2.0 GB of it promised")


@pytest.mark.parametrize(("count", "text"), [(GB, "1.0 GB"), (1536 * MB, "1.5 GB"), (900 * MB, "900 MB")])
def test_sizes_read_as_a_student_reads_them(count, text):
    assert size_text(count) == text
