import numpy as np
import pytest

from clirplug.resources import cpu_seconds, peak_rss_mb, reset_peak_rss

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
