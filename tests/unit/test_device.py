"""llmviz.device: how the device in use is described."""

from llmviz.device import describe_device


def test_one_cpu_thread_is_singular():
    # before: "CPU (1 threads)"
    assert describe_device("cpu", threads=1) == "CPU (1 thread)"
    assert describe_device("cpu", threads=2) == "CPU (2 threads)"
