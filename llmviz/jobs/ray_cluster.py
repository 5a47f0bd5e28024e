"""The Ray cluster as the job manager sees it (:mod:`llmviz.jobs.ray_executor` runs the workers on it): the ``ray``
package (an optional extra), the resources one worker actor asks for, and what the cluster's alive nodes offer.
:func:`resource_refusal` refuses, before anything is sent, a job the cluster could never place (a GPU run on a
cluster with no GPU, more memory than its largest node has), with the reason.

>>> ray_resources(cpus=2, memory_bytes=300 * 2**20, gpu=False)
{'num_cpus': 2, 'memory': 314572800}
>>> ray_resources(cpus=0, memory_bytes=0, gpu=True)
{'num_cpus': 1, 'num_gpus': 1}
"""

from __future__ import annotations

import threading
from typing import Any

import cachetools

from llmviz.errors import LlmvizError


class RayUnavailable(LlmvizError):
    """The Ray cluster named by ``LLMVIZ_RAY_ADDRESS`` cannot be used (ray missing, or the head unreachable)."""


def ray_module() -> Any:
    """The ``ray`` package (an optional extra: ``pip install -r requirements-hall.txt``)."""
    try:
        import ray
    except ImportError as error:
        raise RayUnavailable(
            "LLMVIZ_RAY_ADDRESS is set but Ray is not installed: pip install -r requirements-hall.txt"
        ) from error
    return ray


def ray_resources(cpus: int, memory_bytes: int, gpu: bool) -> dict[str, int]:
    """The resources one worker actor asks for: its torch threads as CPUs (at least 1), its estimated peak memory
    (when known) and one GPU for a run on the GPU."""
    wanted: dict[str, int] = {"num_cpus": max(1, int(cpus))}
    if memory_bytes > 0:
        wanted["memory"] = int(memory_bytes)
    if gpu:
        wanted["num_gpus"] = 1
    return wanted


def refusal_for(wanted: dict[str, int], nodes: list[dict[str, float]], address: str) -> str | None:
    """Why no node of the cluster (each node's total resources, as ``ray.nodes()`` gives them) can ever run a worker
    that wants ``wanted``; None when one can.

    >>> refusal_for({"num_cpus": 1, "num_gpus": 1}, [{"CPU": 2.0, "memory": 4e9}], "127.0.0.1:6390")
    'This run asks for a GPU, but the Ray cluster at 127.0.0.1:6390 has none (2 CPUs on 1 node): train it on the CPU.'
    >>> refusal_for({"num_cpus": 1, "memory": 8 * 2**30}, [{"CPU": 2.0, "memory": 4 * 2**30}], "head")[:60]
    'This job needs 8.0 GiB of memory, but the largest node of th'
    >>> refusal_for({"num_cpus": 1}, [{"CPU": 2.0, "memory": 4e9}], "head") is None
    True
    """
    cpus = sum(node.get("CPU", 0.0) for node in nodes)
    where = f"the Ray cluster at {address}"
    if wanted.get("num_gpus") and not any(node.get("GPU", 0.0) >= wanted["num_gpus"] for node in nodes):
        return (
            f"This run asks for a GPU, but {where} has none ({cpus:g} CPUs on {len(nodes)} node"
            f"{'s' if len(nodes) != 1 else ''}): train it on the CPU."
        )
    largest = max((node.get("memory", 0.0) for node in nodes), default=0.0)
    memory = wanted.get("memory", 0)
    if memory and memory > largest:
        return (
            f"This job needs {memory / 2**30:.1f} GiB of memory, but the largest node of {where} offers "
            f"{largest / 2**30:.1f} GiB: choose a smaller model, batch or context."
        )
    if not any(node.get("CPU", 0.0) >= wanted["num_cpus"] for node in nodes):
        return f"This job asks for {wanted['num_cpus']} CPUs, but no node of {where} has that many."
    return None


def alive_nodes() -> list[dict[str, float]]:
    """The resources of each node of the connected cluster that is alive now (``ray.nodes()``)."""
    return [node.get("Resources", {}) for node in ray_module().nodes() if node.get("Alive")]


@cachetools.cached(cachetools.TTLCache(maxsize=1, ttl=5.0), lock=threading.Lock())
def nodes_for_pages() -> list[dict[str, float]]:
    """:func:`alive_nodes`, at most 5 s old (every rerun of the Training page asks; admission asks afresh)."""
    return alive_nodes()


def resource_refusal(wanted: dict[str, int], address: str) -> str | None:
    """:func:`refusal_for` on the nodes of the connected cluster that are alive now."""
    return refusal_for(wanted, alive_nodes(), address)


def offered_devices(nodes: list[dict[str, float]]) -> list[str]:
    """The devices a run may ask of a cluster whose alive nodes have these resources, best first: ``cuda`` where a
    node has a GPU, and ``cpu`` (the pages offer these, not the web server's own).

    >>> offered_devices([{"CPU": 2.0, "memory": 4e9}])
    ['cpu']
    >>> offered_devices([{"CPU": 8.0, "GPU": 1.0}, {"CPU": 2.0}])
    ['cuda', 'cpu']
    """
    return (["cuda"] if any(node.get("GPU", 0.0) >= 1 for node in nodes) else []) + ["cpu"]


def offer_line(nodes: list[dict[str, float]], address: str) -> str:
    """What the cluster offers a run, in one line for the Training page.

    >>> offer_line([{"CPU": 2.0, "memory": 4 * 2**30}], "127.0.0.1:6390")[49:]
    '2 CPUs and no GPU on 1 node (4.0 GiB on the largest), so a run on the GPU would be refused.'
    >>> offer_line([{"CPU": 8.0, "GPU": 2.0, "memory": 2**34}, {"CPU": 4.0, "memory": 2**33}], "head:6379")
    'Runs train on the Ray cluster at head:6379: 12 CPUs and 2 GPUs on 2 nodes (16.0 GiB on the largest).'
    """
    cpus = sum(node.get("CPU", 0.0) for node in nodes)
    gpus = sum(node.get("GPU", 0.0) for node in nodes)
    largest = max((node.get("memory", 0.0) for node in nodes), default=0.0)
    line = (
        f"Runs train on the Ray cluster at {address}: {cpus:g} CPUs and {f'{gpus:g} GPUs' if gpus else 'no GPU'} on "
        f"{len(nodes)} node{'s' if len(nodes) != 1 else ''} ({largest / 2**30:.1f} GiB on the largest)"
    )
    return line + (", so a run on the GPU would be refused." if not gpus else ".")


def bundle_of(wanted: dict[str, int]) -> dict[str, float]:
    """The placement-group bundle that reserves what :func:`ray_resources` asks for.

    >>> bundle_of({"num_cpus": 2, "memory": 1024, "num_gpus": 1})
    {'CPU': 2, 'memory': 1024, 'GPU': 1}
    """
    names = {"num_cpus": "CPU", "memory": "memory", "num_gpus": "GPU"}
    return {names[key]: value for key, value in wanted.items()}
