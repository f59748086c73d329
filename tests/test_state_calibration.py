"""Calibration windows in one process (no Redis): rolling, sized, keyed, bounded."""

from __future__ import annotations

from rewardsvc.core.aggregate import WindowStats
from rewardsvc.storage.calibration import CalibrationWindows


async def test_window_rolls_and_returns_its_stats():
    windows = CalibrationWindows()
    stats = await windows.extend_and_stats("v1", "judge", 4, [0.1, 0.2, 0.3])
    assert stats == WindowStats.of([0.1, 0.2, 0.3])
    stats = await windows.extend_and_stats("v1", "judge", 4, iter([0.4, 0.5]))
    assert stats == WindowStats.of([0.2, 0.3, 0.4, 0.5])
    # Nothing new: the same window.
    assert await windows.extend_and_stats("v1", "judge", 4, []) == stats


async def test_windows_are_per_version_and_judge():
    windows = CalibrationWindows()
    await windows.extend_and_stats("v1", "a", 10, [0.9, 0.8])
    assert (await windows.extend_and_stats("v1", "b", 10, [0.1])).count == 1
    assert (await windows.extend_and_stats("v2", "a", 10, [0.1])).count == 1
    assert (await windows.extend_and_stats("v1", "a", 10, [])).count == 2


async def test_a_new_size_keeps_the_latest_scores():
    windows = CalibrationWindows()
    await windows.extend_and_stats("v", "j", 5, [0.1, 0.2, 0.3, 0.4, 0.5])
    assert await windows.extend_and_stats("v", "j", 2, []) == WindowStats.of([0.4, 0.5])
    grown = await windows.extend_and_stats("v", "j", 10, [0.6])
    assert grown == WindowStats.of([0.4, 0.5, 0.6])


async def test_least_recently_used_windows_go_beyond_max_keys():
    windows = CalibrationWindows(max_keys=2)
    await windows.extend_and_stats("v", "a", 10, [0.1])
    await windows.extend_and_stats("v", "b", 10, [0.2])
    await windows.extend_and_stats("v", "a", 10, [])  # a is used again, b is now oldest
    await windows.extend_and_stats("v", "c", 10, [0.3])
    assert (await windows.extend_and_stats("v", "a", 10, [])).count == 1
    assert (await windows.extend_and_stats("v", "b", 10, [])).count == 0
