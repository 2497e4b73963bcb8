"""What every chapter family's opening step returns underneath its own fields: the clock the chapter's run
time is read from (the page's "This run took ... minutes")."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(kw_only=True)
class ChapterRun:
    """The clock of one chapter's run: ``started`` is :func:`time.perf_counter` when its opening step began."""

    started: float = field(default_factory=time.perf_counter)

    def minutes(self) -> float:
        """Minutes since the opening step began."""
        return (time.perf_counter() - self.started) / 60
