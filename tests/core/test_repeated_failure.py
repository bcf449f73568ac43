"""A background loop failing at every tick during an outage logs its traceback once, then a line
every 30 s, then its recovery once."""

from __future__ import annotations

import logging

import pytest

from maestrale.core.repeated_failure import RepeatedFailure


def test_an_outage_is_logged_once_then_summarised(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    failure = RepeatedFailure(
        logging.getLogger("test.outage"), "writing failed", clock=lambda: now[0]
    )
    caplog.set_level(logging.INFO, "test.outage")
    for _ in range(200):  # 50 s of ticks every 0.25 s
        failure.failed(ConnectionRefusedError("refused"))
        now[0] += 0.25
    failure.succeeded()
    failure.succeeded()  # nothing more: the outage is over
    records = caplog.records
    assert [r.levelname for r in records] == ["ERROR", "ERROR", "WARNING"]
    assert records[0].exc_info is not None  # the first carries the traceback
    assert "still failing after 30 s (121 times): ConnectionRefusedError" in records[1].message
    assert records[1].exc_info is None
    assert "recovered after 50.0 s (200 failures)" in records[2].message
