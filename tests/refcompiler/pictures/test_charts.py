"""The throughput chart reads a progress series defensively."""

from __future__ import annotations

from refcompiler.pictures.charts import progress_points, throughput_svg


def test_progress_points_keep_only_complete_numeric_points_in_time_order():
    summary = {"progress": [{"seconds": 2, "cases": 4, "schedules": 9}, {"seconds": 1, "cases": 1, "schedules": 3},
                            {"seconds": 3, "cases": True, "schedules": 1}, {"seconds": 4}, "junk", {"seconds": float("nan"), "cases": 1, "schedules": 1}]}
    assert progress_points(summary) == [(1.0, 1.0, 3.0), (2.0, 4.0, 9.0)]
    assert progress_points({"progress": "no"}) == [] and progress_points({}) == []


def test_the_chart_marks_each_finding_and_says_where_its_rates_come_from():
    flat = throughput_svg({"seconds": 10, "cases_per_second": 2.0, "schedules_per_second": 50.0}, [1.5, 7.0])
    assert flat.count('class="found"') == 2 and "averages over the campaign" in flat
    series = throughput_svg({"seconds": 2, "progress": [{"seconds": 1, "cases": 1, "schedules": 3}, {"seconds": 2, "cases": 5, "schedules": 9}]}, [])
    assert "progress series" in series and 'class="found"' not in series
