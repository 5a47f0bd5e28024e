"""Helpers the tests share: starting the app and chromium, running a page under AppTest, waiting on a state.

Test modules import from here, never from each other (tests/project/test_test_layout.py checks it)."""
