"""The clock under every chapter family's opening step."""

import time

from mtllib.book.chapter_run import ChapterRun


def test_minutes_are_read_from_when_the_opening_step_began():
    assert abs(ChapterRun(started=time.perf_counter() - 90).minutes() - 1.5) < 0.01
    fresh = ChapterRun()  # the clock starts when the run is made
    assert 0 <= fresh.minutes() < 0.01
