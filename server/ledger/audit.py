"""The ledger's audit: what a store's books must show after any run, crash or failover.

:func:`hold_problems` checks that every held wager has exactly one outcome (GAME_RULES
§7, §8); :func:`audit_report` is the dict :meth:`Store.audit` returns (the sum of every
balance is zero, each balance equals its ledger sum, the holds are whole). Each store
gathers the entries and balances; the judging is here, once, and the pure table's tests
judge their own wallets with it too.

Pure: it reads what it is handed and never does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from server.ledger.accounts import Entry
from server.ledger.rules import OUTCOME_KINDS

__all__ = ["audit_report", "hold_problems"]


def hold_problems(
    entries: Iterable[Entry], recorded: Iterable[str], balances: Mapping[str, int]
) -> list[str]:
    """What is wrong with the held wagers, one line each.

    ``entries`` holds at least every ``hold`` and outcome (``lose``, ``return``,
    ``refund``, ``void``) entry; ``recorded`` the round ids among theirs that have a round record;
    ``balances`` at least every ``held:<table>`` balance. The rules (GAME_RULES §7, §8):

    - a hold (key ``<round_id>:<player>:<area>:hold``, into ``held:<table>``) has exactly
      one outcome, keyed ``<round_id>:<player>:<area>:<kind>``, out of the same held
      account and for the same amount;
    - a hold may lack its outcome only while its round is open (no round record yet),
      and a table has at most one open round;
    - each ``held:<table>`` balance is the sum of that table's open holds (zero between
      coups).
    """
    holds: dict[str, Entry] = {}
    outcomes: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.kind == "hold":
            if entry.key.endswith(":hold"):
                holds[entry.key.removesuffix(":hold")] = entry
        elif entry.kind in OUTCOME_KINDS and entry.key.endswith(f":{entry.kind}"):
            outcomes.setdefault(entry.key.removesuffix(f":{entry.kind}"), []).append(entry)
    recorded = set(recorded)
    problems: list[str] = []
    open_rounds: dict[str, set[str]] = {}
    open_sums: dict[str, int] = {}
    for base, hold in holds.items():
        if not hold.dst.startswith("held:"):
            problems.append(f"hold {hold.key!r} is not into a held account")
            continue
        table = hold.dst.removeprefix("held:")
        found = outcomes.pop(base, [])
        if len(found) > 1:
            kinds = ", ".join(sorted(e.kind for e in found))
            problems.append(f"hold {hold.key!r} has {len(found)} outcomes ({kinds})")
        elif found:
            (outcome,) = found
            if outcome.src != hold.dst or outcome.amount != hold.amount:
                problems.append(
                    f"outcome {outcome.key!r} does not give back hold {hold.key!r} "
                    f"({outcome.amount} from {outcome.src}, held {hold.amount} in {hold.dst})"
                )
        elif hold.round_id is None:
            problems.append(f"hold {hold.key!r} has no round and no outcome")
        elif hold.round_id in recorded:
            problems.append(f"hold {hold.key!r} has no outcome after its round was recorded")
        else:
            open_rounds.setdefault(table, set()).add(hold.round_id)
            open_sums[table] = open_sums.get(table, 0) + hold.amount
    for base, found in sorted(outcomes.items()):
        for outcome in found:
            problems.append(f"outcome {outcome.key!r} has no hold {base + ':hold'!r}")
    for table, rounds in sorted(open_rounds.items()):
        if len(rounds) > 1:
            problems.append(f"table {table!r} has {len(rounds)} open rounds: {sorted(rounds)}")
    held = {a.removeprefix("held:") for a, b in balances.items() if a.startswith("held:")}
    for table in sorted(held | open_sums.keys()):
        balance = balances.get(f"held:{table}", 0)
        if balance != open_sums.get(table, 0):
            problems.append(
                f"held:{table} holds {balance}, its open holds {open_sums.get(table, 0)}"
            )
    return problems


def audit_report(
    balances: Mapping[str, int], flows: Mapping[str, int], count: int, problems: list[str]
) -> dict[str, Any]:
    """The dict :meth:`Store.audit` returns, from every balance and every account's
    ledger sum."""
    accounts = balances.keys() | flows.keys()
    return {
        "sum": sum(balances.values()),
        "ledger_matches": all(balances.get(a, 0) == flows.get(a, 0) for a in accounts),
        "entries": count,
        "holds_ok": not problems,
        "problems": problems,
    }
