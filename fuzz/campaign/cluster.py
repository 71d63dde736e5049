"""Campaigns on a Dask cluster (the optional ``dask`` extra).

``cluster_executor(spec, modules)`` opens a ``distributed.Client`` (to an
existing scheduler at ``spec``, or to a ``LocalCluster`` of N worker processes
for ``local:N``), checks that refc and each plug-in module import on every
worker, and yields a ``ClusterExecutor`` (the ``submit`` protocol the campaign
runner takes) with the cluster's thread count. On exit every future still on
the cluster is cancelled and the client (and a local cluster) is closed.

Dask is imported here only, and only when a cluster is asked for: without the
extra, ``--cluster`` is a ``UsageError`` naming the install command.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import sys
from concurrent.futures import Executor, Future
from typing import Any, Callable, Iterator

from refcompiler.errors import UsageError
from refcompiler.limits import clipped

from fuzz.campaign.pool import LostChunk

__all__ = ["ClusterExecutor", "cluster_executor", "parse_cluster", "CONNECT_SECONDS"]

CONNECT_SECONDS = 10.0
_INSTALL = "pip install -e '.[dask]'"


def parse_cluster(text: str) -> str:
    """``--cluster``'s value: a scheduler address, or ``local:N`` (N >= 1)."""
    if not text:
        raise UsageError("--cluster: expected a scheduler address or local:N, got an empty string")
    if text.startswith("local:"):
        n = text.partition(":")[2]
        if not n.isdigit() or int(n) < 1:
            raise UsageError(f"--cluster {text}: local:N needs a whole number of workers N >= 1")
    return text


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--cluster needs Dask's distributed scheduler, which is not installed: {_INSTALL}") from None
    return distributed


class ClusterExecutor(Executor):
    """``submit`` on a Dask client; each call's result comes back in a
    ``concurrent.futures.Future`` (what the runner waits on). The Dask futures
    are kept until they end, so that ``cancel_all`` can cancel them."""

    def __init__(self, client: Any):
        self.client = client
        self.running: dict[Any, Future[Any]] = {}

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        result: Future[Any] = Future()
        task = self.client.submit(fn, *args, pure=False, **kwargs)
        self.running[task] = result
        task.add_done_callback(self._done)
        return result

    def _done(self, task: Any) -> None:
        result = self.running.pop(task, None)
        if result is None or result.done():
            return
        try:
            result.set_result(task.result())
        except BaseException as e:  # the runner's result() raises it, as with a pool
            # a chunk whose workers kept dying (Dask retries it elsewhere first) costs only that chunk
            result.set_exception(LostChunk(None) if type(e).__name__ == "KilledWorker" else e)

    def cancel_all(self) -> None:
        """Cancel every future still on the cluster (interruption, the hard
        deadline): queued chunks never start; a chunk already running on a
        worker finishes there, but its result is dropped."""
        running, self.running = self.running, {}  # first, so that _done leaves them alone
        for result in running.values():
            result.cancel()
        if running:
            self.client.cancel(list(running), force=True)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.cancel_all()


def _import_problems(modules: list[str]) -> list[tuple[str, str]]:
    """Run on each worker: (module, error) for each module that does not import."""
    problems = []
    for name in ["fuzz.campaign.chunk", *modules]:
        try:
            importlib.import_module(name)
        except BaseException as e:  # a plug-in's import can raise anything
            problems.append((name, f"{type(e).__name__}: {e}"))
    return problems


def _single_file(module: str) -> str | None:
    """The path of ``module`` here if it is one top-level ``.py`` file (which
    ``upload_file`` can send to the workers), else ``None``."""
    if "." in module:
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.submodule_search_locations is not None or not (spec.origin or "").endswith(".py"):
        return None
    return spec.origin


def _probe(client: Any) -> Callable[[list[str]], dict[str, list[tuple[str, str]]]]:
    def run(modules: list[str]) -> dict[str, list[tuple[str, str]]]:
        try:
            answers = client.run(_import_problems, modules)
        except Exception as e:  # e.g. the workers cannot unpickle refc's own function
            raise UsageError(f"--cluster: refc does not run on the cluster's workers ({type(e).__name__}: {e}); install refc there (pip install -e . on each worker)") from None
        return {worker: problems for worker, problems in answers.items() if problems}
    return run


def check_workers(client: Any, modules: list[str]) -> None:
    """Every worker imports refc and each plug-in module; a missing single-file
    plug-in module is uploaded to the workers (``client.upload_file``, said on
    stderr); anything else that is missing is a ``UsageError`` saying how to
    install it there."""
    probe = _probe(client)
    bad = probe(modules)
    missing = {name for problems in bad.values() for name, _ in problems}
    uploaded = [m for m in modules if m in missing and (path := _single_file(m)) is not None and _upload(client, m, path)]
    if uploaded:
        bad = probe(modules)
    for worker, problems in sorted(bad.items()):
        name, error = problems[0]
        where = "install refc there (pip install -e . on each worker)" if name == "fuzz.campaign.chunk" else (
            "install it there: put its directory on the workers' PYTHONPATH, or pip install it on each worker")
        raise UsageError(f"--cluster: module {name} does not import on worker {worker} ({error}); {where}")


def _upload(client: Any, module: str, path: str) -> bool:
    try:
        client.upload_file(path)  # the workers import it as it arrives
    except Exception as e:  # it imports a module of its own the workers lack (a sibling file), or fails there
        raise UsageError(f"--cluster: plug-in module {module} ({path}) was sent to the cluster's workers but does not import there "
                         f"({type(e).__name__}: {clipped(str(e), 200)}); put its directory on the workers' PYTHONPATH, "
                         "or pip install it on each worker") from None
    print(f"refc fuzz: uploaded plug-in module {module} ({path}) to the cluster's workers", file=sys.stderr)
    return True


def _client(spec: str, connect_seconds: float) -> tuple[Any, Any]:
    """(client, the local cluster to close or ``None``)."""
    distributed = _distributed()
    if spec.startswith("local:"):
        # its processes' own logs (a plug-in that does not import there: pages of tracebacks) stay quiet: refc says what failed
        cluster = distributed.LocalCluster(n_workers=int(spec.partition(":")[2]), threads_per_worker=1, processes=True, dashboard_address=None,
                                           silence_logs=logging.CRITICAL)
        return distributed.Client(cluster), cluster
    try:
        return distributed.Client(spec, timeout=connect_seconds), None
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise UsageError(f"--cluster {spec}: cannot connect to a Dask scheduler there ({type(e).__name__}: {e})") from None


@contextlib.contextmanager
def cluster_executor(spec: str, modules: list[str], connect_seconds: float | None = None) -> Iterator[tuple[ClusterExecutor, int]]:
    """(executor, the number of chunks the cluster runs at once: its threads).
    ``connect_seconds``: how long to try to reach a scheduler (default
    ``CONNECT_SECONDS``)."""
    client, cluster = _client(parse_cluster(spec), CONNECT_SECONDS if connect_seconds is None else connect_seconds)
    executor = ClusterExecutor(client)
    try:
        check_workers(client, modules)
        workers = client.scheduler_info()["workers"].values()
        if not workers:
            raise UsageError(f"--cluster {spec}: the cluster has no workers")
        yield executor, sum(w.get("nthreads", 1) for w in workers)
    finally:
        executor.cancel_all()
        client.close()
        if cluster is not None:
            cluster.close()
