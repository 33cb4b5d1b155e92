"""Which source repositories' release lists a resync reads.

Release events are how a release is promoted; the resync's read of a source's releases only
recovers one whose event was lost. Reading every source on every pass costs one request per
installed source repository, so a pass reads:
- every source whose `pushed_at` in the installation's repository list moved since its last
  read (pushing a release's tag moves it), or that was never read, at most `MOVED_PER_PASS`
  of them;
- and the `ROTATION_PER_PASS` sources read longest ago: a release of a tag pushed before the
  last read, or of a tag whose creation did not move `pushed_at`.
With few sources every pass reads them all; with hundreds an idle pass costs a handful of
`304`s, and each source is still read every `sources / ROTATION_PER_PASS` passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

MOVED_PER_PASS = 30
ROTATION_PER_PASS = 5


@dataclass
class ReleasePolls:
    # lower-case source → (its `pushed_at` when its releases were read, the pass of that read)
    _read: dict[str, tuple[str, int]] = field(default_factory=dict)
    _passes: int = 0

    def due(self, sources: list[str], pushed: Mapping[str, str]) -> list[str]:
        """The sources (of `sources`, in their order) whose releases this pass reads;
        `pushed`: lower-case name → `pushed_at` as listed ("" when not known or too recent to
        prove that a later push moves it)."""
        self._passes += 1
        moved, settled = [], []
        for source in sources:
            read = self._read.get(source.lower())
            pushed_at = pushed.get(source.lower(), "")
            if read is None or not pushed_at or read[0] != pushed_at:
                moved.append(source)
            else:
                settled.append(source)
        # read longest ago first (never read: first of all), so that none waits forever
        moved.sort(key=self._last_pass)
        settled.sort(key=self._last_pass)
        due = set(moved[:MOVED_PER_PASS] + settled[:ROTATION_PER_PASS])
        return [source for source in sources if source in due]

    def _last_pass(self, source: str) -> int:
        return self._read.get(source.lower(), ("", 0))[1]

    def read(self, source: str, pushed_at: str) -> None:
        """The source's releases were read when the list showed `pushed_at`."""
        self._read[source.lower()] = (pushed_at, self._passes)

