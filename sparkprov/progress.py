"""Progress bars of long work (data generation, loads, reindex, large exports): a tqdm bar on
stderr when stderr is a terminal, nothing at all otherwise or when ``CI`` is set to a true value,
so logs and CI output stay quiet.

    with Progress(total, "publishing", unit="records") as bar:
        for ...:
            bar.update(done)  # absolute: how much is done so far
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from types import TracebackType
from typing import TextIO

from tqdm import tqdm

from sparkprov.defaults import is_on

__all__ = ["Progress", "shown"]


def shown(stream: TextIO | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a bar is drawn: on a terminal, outside CI."""
    stream = sys.stderr if stream is None else stream
    environ = os.environ if environ is None else environ
    if is_on(environ.get("CI")):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """A bar of ``total`` units (``None``: unknown, a counter with its rate)."""

    def __init__(self, total: int | None, what: str, *, unit: str = "records") -> None:
        self._bar = tqdm(
            total=total,
            desc=what,
            unit=unit,
            unit_scale=True,
            file=sys.stderr,
            disable=not shown(),
            dynamic_ncols=True,
        )

    @property
    def enabled(self) -> bool:
        return not self._bar.disable

    def update(self, done: int) -> None:
        """Sets how much is done so far (never moves back)."""
        step = done - self._bar.n
        if step > 0:
            self._bar.update(step)

    def advance(self, step: int = 1) -> None:
        self._bar.update(step)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
