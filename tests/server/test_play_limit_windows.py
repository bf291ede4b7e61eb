"""The arithmetic of a player's limits (``server.protection.play_limits``), pure: which days a
window holds, what each kind counts, which limit is the nearest, and the guards the
store holds."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from server.protection.play_limits import first_day, guards, nearest, used

NOON = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC).timestamp()


def day(offset: int) -> str:
    return (dt.date(2026, 12, 1) - dt.timedelta(days=offset)).isoformat()


def row(staked: int = 0, net: int = 0, deposited: int = 0) -> dict[str, int]:
    return {"staked": staked, "net": net, "deposited": deposited}


DAYS = {
    day(0): row(staked=500, net=-300, deposited=1000),
    day(6): row(staked=200, net=100),
    day(7): row(staked=4000, net=-4000, deposited=9000),
    day(29): row(staked=1, net=-1),
    day(30): row(staked=70_000, net=-70_000),
}


def test_a_day_is_today_a_week_seven_days_a_month_thirty() -> None:
    assert first_day(NOON, 1) == "2026-12-01"
    assert first_day(NOON, 7) == "2026-11-25"
    assert first_day(NOON, 30) == "2026-11-02"
    assert used("wager_day", DAYS, NOON) == 500
    assert used("wager_week", DAYS, NOON) == 700
    assert used("wager_month", DAYS, NOON) == 4701
    assert used("deposit_day", DAYS, NOON) == 1000
    assert used("deposit_month", DAYS, NOON) == 10_000


@given(st.floats(-2e9, 5e9), st.sampled_from([1, 7, 30]))
def test_a_windows_first_day_is_the_utc_calendars(now: float, days: int) -> None:
    """Made once a day for each window (every bet asks it), from the UTC day's number:
    the same day as the calendar's, at every moment, midnight and before 1970 included."""
    today = dt.datetime.fromtimestamp(now, dt.UTC).date()
    assert first_day(now, days) == (today - dt.timedelta(days=days - 1)).isoformat()


def test_a_windows_first_day_changes_at_utc_midnight() -> None:
    midnight = dt.datetime(2026, 12, 2, tzinfo=dt.UTC).timestamp()
    assert first_day(midnight - 1e-6, 1) == "2026-12-01"
    assert first_day(midnight, 1) == "2026-12-02"
    assert first_day(midnight, 30) == "2026-11-03"


def test_a_loss_is_the_net_loss_never_below_nothing() -> None:
    assert used("loss_day", DAYS, NOON) == 300
    assert used("loss_week", DAYS, NOON) == 200  # -300 + 100
    assert used("loss_month", DAYS, NOON) == 4201
    assert used("loss_day", {day(0): row(net=900)}, NOON) == 0  # winnings raise nothing


def test_the_nearest_limit_leaves_the_least() -> None:
    limits = {"loss_day": {"amount": 1000}, "wager_week": {"amount": 1000}}
    assert nearest(limits, DAYS, NOON, ("loss_day", "wager_week")) == {
        "kind": "wager_week",
        "amount": 1000,
        "remaining": 300,
    }
    # The chips on the felt are in the days already (a stake counts when placed).
    assert guards(limits, NOON, ("loss_day", "wager_week")) == [
        ["loss_day", 1000, day(0)],
        ["wager_week", 1000, day(6)],
    ]
    assert nearest({}, DAYS, NOON, ("loss_day",)) is None
    assert nearest({"session": {"amount": 30}}, DAYS, NOON, ("loss_day",)) is None


@given(
    st.dictionaries(
        st.integers(0, 40).map(day),
        st.builds(row, st.integers(0, 10**6), st.integers(-(10**6), 10**6), st.integers(0, 10**6)),
    ),
    st.sampled_from(["loss", "wager", "deposit"]),
)
def test_a_longer_window_never_counts_less(days: dict[str, dict[str, int]], what: str) -> None:
    counted = [used(f"{what}_{period}", days, NOON) for period in ("day", "week", "month")]
    if what != "loss":  # (a loss nets out: a winning week may hide a losing day)
        assert counted == sorted(counted)
    assert all(n >= 0 for n in counted)
