"""The bounded memories of llmviz.lab.identity: new students per address, and wrong teacher keys."""

from llmviz.lab.identity import Guesses, NewStudents


def test_new_students_forget_the_least_recently_seen_address_first():
    limit = NewStudents(1, clock=lambda: 0.0, remembered=2)
    assert limit.admit("a", "s1") and not limit.admit("a", "s2")  # one a minute
    assert limit.admit("b", "s3")
    assert limit.wait_s("a") == 60  # seen again: "b" is now the least recently seen
    assert limit.admit("c", "s4")  # a third address: "b" is forgotten, "a" is not
    assert not limit.admit("a", "s5") and limit.admit("b", "s6")


def test_new_students_admitted_once_are_remembered_up_to_the_bound():
    limit = NewStudents(2, clock=lambda: 0.0, remembered=2)
    assert limit.admit("a", "s1") and limit.admit("a", "s2")
    assert limit.admit("a", "s1")  # admitted before: not counted again
    assert limit.admit("b", "s3")  # "s1", the first admitted, is forgotten
    assert not limit.admit("a", "s1")  # so it counts as new, and the address has made its two


def test_wrong_keys_forget_the_least_recently_used_entries_first():
    guesses = Guesses(clock=lambda: 0.0, remembered=4)  # each wrong key keeps two: (address, browser) and address
    guesses.wrong("10.0.0.1", "x")
    guesses.wrong("10.0.0.2", "y")
    assert guesses.count("10.0.0.1", "x") == 1  # used now: the address's entry becomes the oldest
    guesses.wrong("10.0.0.3", "z")
    assert guesses.count("10.0.0.1") == 0 and guesses.count("10.0.0.2", "y") == 0  # the two oldest forgotten
    assert guesses.count("10.0.0.1", "x") == 1 and guesses.count("10.0.0.3", "z") == 1
