"""The fault run's check that no request was sent inside a secondary-limit window, against
the emulator's own lateness (pure: no socket)."""

from __future__ import annotations

from conveyor_emulator.driver.core import EmulatorCore
from conveyor_emulator.faults.switches import InWindow
from tests.reliability.fault_checks import sent_inside_windows

KEY = "installation:1"


def emulator_with(arrived_at: float, stalls: list[tuple[float, float]]) -> EmulatorCore:
    emulator = EmulatorCore(webhook_secret="checks")
    emulator.secondary.opened.append((KEY, 100.0, 160.0))
    emulator.secondary.inside.append(InWindow(KEY, arrived_at, "POST", "/repos/o/r/pulls"))
    emulator.stalls.spans.extend(stalls)
    return emulator


def test_a_request_arriving_after_the_in_flight_allowance_was_sent_inside() -> None:
    assert [hit.at for hit, _ in sent_inside_windows(emulator_with(100.6, []))] == [100.6]


def test_the_emulators_stall_after_the_window_opened_is_not_the_bots() -> None:
    assert sent_inside_windows(emulator_with(100.6, [(100.1, 100.5)])) == []


def test_a_stall_before_the_window_opened_excuses_nothing() -> None:
    assert len(sent_inside_windows(emulator_with(100.6, [(99.0, 99.9)]))) == 1


def test_only_the_part_of_a_stall_inside_the_window_counts() -> None:
    # 0.3 s of a 1.3 s stall fall after the window opened: 0.6 > 0.25 + 0.3
    assert len(sent_inside_windows(emulator_with(100.6, [(99.0, 100.3)]))) == 1
    assert sent_inside_windows(emulator_with(100.5, [(99.0, 100.3)])) == []
