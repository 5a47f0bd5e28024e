"""The Training page with the lab's runs on a Ray cluster (a real local head, CPU-only: tests/support/ray_cluster.py):
it offers the cluster's devices, not this server's, and says before Train is pressed what the cluster has, and that
a run on the GPU would be refused."""

from __future__ import annotations

import pytest

from llmviz.jobs import default
from llmviz.jobs.manager import JobManager
from tests.support.pages import assert_clean, by_label, run_page, texts

pytestmark = pytest.mark.slow  # a Ray head: not the fast lane


def test_the_training_page_offers_only_the_cpu_of_a_cpu_only_ray_cluster(ray_address, monkeypatch):
    import ray

    hall = JobManager(max_running=1, session_timeout=None, workers="ray", ray_address=ray_address)
    monkeypatch.setattr(default, "_default", hall)  # the server's manager, as LLMVIZ_RAY_ADDRESS makes it
    try:
        at = run_page("stages/training.py", corpus="names")
        assert_clean(at)
        assert by_label(at.selectbox, "Train on").options == ["cpu"]
        cpus = ray.cluster_resources()["CPU"]
        line = texts(at.caption)
        assert f"Runs train on the Ray cluster at {ray_address}: {cpus:g} CPUs and no GPU on 1 node" in line
        assert "so a run on the GPU would be refused." in line
    finally:
        hall.shutdown()
