"""The progress bar long runs show (documents/s, ETA): tqdm when asked for, else a bar that draws nothing, so the
code that counts never asks whether one is shown."""

from __future__ import annotations

from typing import Any


class NoProgressBar:
    """Takes the counts a tqdm bar would and shows nothing."""

    total: int | None = None

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def set_description_str(self, desc: str | None = None) -> None:
        pass

    def refresh(self) -> None:
        pass


def progress_bar(enabled: bool, *, desc: str, total: int | None = None, unit: str = " docs") -> Any:
    """A tqdm bar counting ``unit`` (documents by default; ``desc`` before the count), or a
    :class:`NoProgressBar` when not enabled. tqdm is imported only when a bar is shown."""
    if not enabled:
        return NoProgressBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, dynamic_ncols=True)
