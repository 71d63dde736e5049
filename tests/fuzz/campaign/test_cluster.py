"""Campaigns on a Dask cluster (a LocalCluster of two worker processes): the
same summary as in this process for the same seed and count, a plug-in module
reaching the workers (uploaded when it is one file; an error saying how to
install it otherwise), and the errors for a missing extra and a bad address."""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from distributed import LocalCluster

from refcompiler.errors import UsageError

from fuzz.campaign import CampaignConfig, Summary, run_campaign
from fuzz.campaign.cluster import cluster_executor, parse_cluster
from fuzz.campaign.repeatable import no_local_constants

PLUGINS = Path(__file__).resolve().parents[2] / "data" / "plugins"
TIMINGS = {"seconds", "cases_per_second", "schedules_per_second", "workers", "seconds_by_stage", "progress"}


@pytest.fixture(scope="module")
def address():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def _untimed(summary: Summary) -> dict:
    doc = {k: v for k, v in summary.to_doc().items() if k not in TIMINGS}
    for entry in doc["signatures"]:
        entry.pop("seconds_to_find")
    return doc


def _on_cluster(address: str, config: CampaignConfig, modules: list[str] = []) -> Summary:
    with cluster_executor(address, modules) as (executor, threads):
        assert threads == 2
        return run_campaign(replace(config, workers=threads), executor=executor)


def test_a_count_bounded_campaign_gives_the_same_summary_on_the_cluster(address):
    config = CampaignConfig(budget=None, max_cases=24, seed=3, chunk_cases=6, out=None)
    here, there = run_campaign(config), _on_cluster(address, config)
    assert here.chunks == there.chunks == 4 and here.cases > 12
    assert _untimed(here) == _untimed(there)


def test_a_mutant_campaign_finds_the_same_shrunk_case_on_the_cluster(address):
    config = CampaignConfig(budget=None, max_cases=10, seed=2, chunk_cases=5, mutant="dse-drop-state-write",
                            max_nodes=6, shrink_calls=5, reduce_attempts=5, out=None)
    here, there = run_campaign(config), _on_cluster(address, config)
    assert here.found and _untimed(here) == _untimed(there)
    assert {s: f.case_doc for s, f in here.found.items()} == {s: f.case_doc for s, f in there.found.items()}


def test_a_single_file_plugin_is_uploaded_to_the_workers(address, tmp_path, monkeypatch, capsys):
    shutil.copy(PLUGINS / "flaky_scheduler.py", tmp_path / "cluster_scheduler.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = CampaignConfig(budget=None, max_cases=10, seed=1, chunk_cases=5, schedulers=("cluster_scheduler:fixed",), out=None)
    there = _on_cluster(address, config, ["cluster_scheduler"])
    assert "uploaded plug-in module cluster_scheduler" in capsys.readouterr().err
    assert there.cases > 0 and _untimed(there) == _untimed(run_campaign(config))


def test_a_plugin_package_the_workers_cannot_import_is_an_error_saying_how_to_install_it(address, tmp_path, monkeypatch):
    (tmp_path / "cluster_pkg").mkdir()
    (tmp_path / "cluster_pkg" / "__init__.py").write_text("def schedule(graph, deps, seed):\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UsageError, match=r"module cluster_pkg does not import on worker .*PYTHONPATH"):
        with cluster_executor(address, ["cluster_pkg"]):
            pass


def test_a_single_file_plugin_importing_a_sibling_the_workers_lack_is_an_error_saying_how_to_install_it(address, tmp_path, monkeypatch):
    # uploaded, it failed to import there: dask's tracebacks and "internal error", exit 4
    (tmp_path / "cluster_sibling.py").write_text("ORDER = None\n")
    (tmp_path / "cluster_uses_sibling.py").write_text("import cluster_sibling\n\ndef schedule(graph, deps, seed):\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UsageError, match=r"plug-in module cluster_uses_sibling .* does not import there \(ModuleNotFoundError: "
                                         r"No module named 'cluster_sibling'\); put its directory on the workers' PYTHONPATH"):
        with cluster_executor(address, ["cluster_uses_sibling"]):
            pass


def test_without_the_extra_the_error_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    with pytest.raises(UsageError, match=r"pip install -e '\.\[dask\]'"):
        with cluster_executor("local:1", []):
            pass


def test_a_bad_address_is_an_error_soon():
    start = time.time()
    with pytest.raises(UsageError, match="cannot connect to a Dask scheduler"):
        with cluster_executor("tcp://127.0.0.1:1", [], connect_seconds=1):
            pass
    assert time.time() - start < 10


@pytest.mark.parametrize("bad", ["", "local:0", "local:x"])
def test_a_malformed_cluster_spec_is_an_error(bad):
    with pytest.raises(UsageError, match="--cluster"):
        parse_cluster(bad)


def test_no_local_constants_empties_hypothesis_local_pool_and_restores_it():
    from hypothesis.internal.conjecture import providers

    before = providers._get_local_constants
    with no_local_constants(), no_local_constants():
        assert len(providers._get_local_constants()) == 0
    assert providers._get_local_constants is before


def test_a_chunk_whose_workers_kept_dying_is_a_lost_chunk():
    from fuzz.campaign.cluster import ClusterExecutor
    from fuzz.campaign.pool import LostChunk

    class KilledWorker(Exception):  # distributed's name for it
        pass

    class Task:
        def result(self):
            raise KilledWorker("chunk")

        def add_done_callback(self, callback):
            callback(self)

    class Client:
        def submit(self, fn, *args, pure=True):
            return Task()

    with pytest.raises(LostChunk):
        ClusterExecutor(Client()).submit(len, ()).result()


def test_leaving_the_cluster_cancels_its_futures(address):
    with cluster_executor(address, []) as (executor, _):
        running = [executor.submit(time.sleep, 30) for _ in range(3)]
        tasks = list(executor.running)
    assert all(f.cancelled() for f in running) and all(t.status == "cancelled" for t in tasks)
