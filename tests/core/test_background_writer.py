"""The background writer: calls run in order in one thread, an error surfaces in the caller's thread, and nothing
after a failure is written."""

from __future__ import annotations

import threading

import pytest

from bertlens.core.background import BackgroundWriter


def test_calls_run_in_order_in_one_other_thread():
    seen: list[tuple[int, str]] = []
    with BackgroundWriter(depth=1) as writer:
        for i in range(20):
            writer.submit(lambda i=i: seen.append((i, threading.current_thread().name)))
    assert [i for i, _ in seen] == list(range(20))
    assert {name for _, name in seen} == {"bertlens-writer"}


def test_an_error_is_raised_in_the_callers_thread_and_stops_the_writing():
    seen: list[int] = []

    def fail() -> None:
        raise OSError("disk full")

    writer = BackgroundWriter()
    writer.submit(lambda: seen.append(1))
    writer.submit(fail)
    writer.submit(lambda: seen.append(2))  # queued behind the failure: never written
    with pytest.raises(OSError, match="disk full"):
        writer.close()
    assert seen == [1]


def test_the_callers_own_error_is_the_one_raised_and_the_writer_ends():
    def fail() -> None:
        raise OSError("disk full")

    with pytest.raises(KeyError), BackgroundWriter(name="writer-under-test") as writer:
        writer.submit(fail)
        raise KeyError("computing failed")
    assert "writer-under-test" not in {thread.name for thread in threading.enumerate()}
