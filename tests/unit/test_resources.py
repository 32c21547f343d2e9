import numpy as np
import pytest

from clirplug.resources import cpu_seconds, peak_rss_mb, reset_peak_rss, return_freed_memory, rss_mb

pytestmark = pytest.mark.unit


def test_peak_memory_is_this_process_since_the_last_reset():
    reset_peak_rss()
    before = peak_rss_mb()
    block = np.ones(300 * 2**20 // 8)  # 300 MB, touched
    grown = peak_rss_mb()
    assert grown - before > 250
    del block
    reset_peak_rss()
    assert peak_rss_mb() < grown - 250


def test_cpu_seconds_grow_with_work():
    start = cpu_seconds()
    total = 0
    for i in range(3_000_000):
        total += i
    assert cpu_seconds() > start


def test_freed_memory_goes_back_to_the_system():
    chunks = [bytearray(64 * 1024) for _ in range(4000)]  # 250 MB in malloc'd blocks below mmap's threshold
    above = bytearray(64 * 1024)  # above them on the heap: freeing them alone gives nothing back
    grown = rss_mb()
    del chunks
    assert rss_mb() > grown - 50
    return_freed_memory()
    assert rss_mb() < grown - 200
    assert len(above) == 64 * 1024


class _Loaded:
    closed = False

    def close(self):
        self.closed = True


@pytest.mark.parametrize("machine_mb, dropped", [(1.0, True), (1e12, False)])
def test_a_stage_process_over_its_memory_share_drops_what_it_keeps_loaded(monkeypatch, machine_mb, dropped):
    from clirplug.executor import ExecutorSettings
    from clirplug.experiment import runner
    from clirplug.experiment.kinds import Context

    monkeypatch.setattr("clirplug.resources.physical_memory_mb", lambda: machine_mb)
    ctx = Context(config=None, workers=ExecutorSettings(jobs=2))
    searcher = ctx.get("index|bm25", _Loaded)
    runner._stay_within_memory_share(ctx)
    assert searcher.closed is dropped
    assert (ctx.get("index|bm25", _Loaded) is searcher) is not dropped
