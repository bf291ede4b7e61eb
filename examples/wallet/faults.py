"""Failures on cue, and the log of every request: what a test needs from a wallet.

Nothing here belongs in an operator's wallet. It lets Chemmy's tests make the wallet
misbehave the ways a real one does (docs/wallet.md §5) through ``POST /_control/faults``:

``{"latency": 0.02, "rules": [{"endpoint": "debit", "fault": "http500", "count": 2, "player": "bob"}]}``

``latency`` is added to every answer; each rule fires on the calls it matches (its
``endpoint`` and ``player``, each any if omitted), ``count`` times or forever, the first
matching rule with some count left winning. The faults:

=============== ==========================================================================
``http500``     answer ``500``, apply nothing
``timeout``     hold the request ``seconds`` (default 30), apply nothing, drop the socket
``reset``       drop the socket (RST) at once, apply nothing
``lost_answer`` apply the call, then drop the socket: the wallet moved the money and
                Chemmy never heard
``refuse``      refuse the call with ``code`` (one of :data:`REFUSALS`), answered
                ``http`` (``200`` unless told; a ``4xx`` may carry any code of
                ``a-z _``, as ``debit_closed``); a debit's ``200`` refusal is recorded
                as its first answer, anything else is not
``slow``        wait ``seconds`` (default 1), then apply and answer: a late delivery
``held``        apply the call at once, then hold its answer ``seconds`` (default 30): a
                credit the wallet took long ago, its answer still on the way
``drip``        apply the call, then dribble the whole answer (status line, headers,
                body) one byte every ``seconds`` (default 0.5): a wallet (or a proxy)
                that sends, slowly, for minutes
=============== ==========================================================================

``POST /_control/reset`` clears every rule and the latency, and lets go at once of the
requests a ``timeout``, ``slow``, ``held`` or ``drip`` holds (they are dropped, or
answered, as if their time were up).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Final

from .ledger import ENDPOINTS

__all__ = ["FAULTS", "REFUSALS", "Faults", "Rule", "parse_faults"]

FAULTS: Final = ("http500", "timeout", "reset", "lost_answer", "refuse", "slow", "held", "drip")
#: The refusals a ``refuse`` rule may answer ``200``: a debit's (docs/wallet.md §3).
REFUSALS: Final = (
    "insufficient_funds",
    "limit_reached",
    "player_blocked",
    "account_locked",
    "session_expired",
    "unknown_player",
    "currency_mismatch",
)
_CODE: Final = re.compile(r"[a-z_]{1,64}")
#: How long a ``timeout`` holds a request, a ``slow`` delays one, a ``held`` holds an
#: answer, and a ``drip`` waits between two bytes of one, unless told.
DEFAULT_SECONDS: Final = {"timeout": 30.0, "slow": 1.0, "held": 30.0, "drip": 0.5}


@dataclass
class Rule:
    """One fault, for the calls it matches; ``count`` is how many times it has left to
    fire (None: forever), ``fired`` how many times it did."""

    fault: str
    endpoint: str | None = None
    player: str | None = None
    count: int | None = None
    seconds: float = 0.0
    code: str | None = None
    http: int = 200
    fired: int = 0

    def matches(self, endpoint: str, player: str) -> bool:
        return (
            (self.count is None or self.count > 0)
            and self.endpoint in (None, endpoint)
            and self.player in (None, player)
        )


def _rule(data: Any) -> Rule:
    if not isinstance(data, dict):
        raise ValueError("a rule is a JSON object")
    unknown = set(data) - {"fault", "endpoint", "player", "count", "seconds", "code", "http"}
    if unknown:
        raise ValueError(f"a rule has no {', '.join(sorted(unknown))}")
    fault, endpoint, player = data.get("fault"), data.get("endpoint"), data.get("player")
    count, code, http = data.get("count"), data.get("code"), data.get("http", 200)
    seconds = data.get("seconds", DEFAULT_SECONDS.get(str(fault), 0.0))
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {', '.join(FAULTS)}")
    if endpoint is not None and endpoint not in ENDPOINTS:
        raise ValueError(f"endpoint must be one of {', '.join(ENDPOINTS)}")
    if player is not None and not isinstance(player, str):
        raise ValueError("player must be a string")
    if count is not None and (type(count) is not int or count < 0):
        raise ValueError("count must be a whole number")
    if type(seconds) not in (int, float) or not 0 <= seconds <= 3600:
        raise ValueError("seconds must be a number from 0 to 3600")
    if (
        type(http) is not int
        or not (http == 200 or 400 <= http <= 499)
        or (http != 200 and fault != "refuse")
    ):
        raise ValueError("http is 200 or a 4xx, for a refuse rule")
    allowed = code in REFUSALS if http == 200 else isinstance(code, str) and _CODE.fullmatch(code)
    if (fault == "refuse") != (code is not None) or (code is not None and not allowed):
        raise ValueError(
            f"a refuse rule needs a code, one of {', '.join(REFUSALS)} (with a 4xx: any a-z _)"
        )
    return Rule(fault, endpoint, player, count, float(seconds), code, http)


def parse_faults(data: Any) -> tuple[float, list[Rule]]:
    """The latency and rules of a ``/_control/faults`` body, or ValueError."""
    if not isinstance(data, dict) or set(data) - {"latency", "rules"}:
        raise ValueError('the body is {"latency": seconds, "rules": [...]}')
    latency, rules = data.get("latency", 0), data.get("rules", [])
    if type(latency) not in (int, float) or not 0 <= latency <= 60:
        raise ValueError("latency must be a number of seconds from 0 to 60")
    if not isinstance(rules, list):
        raise ValueError("rules must be a list")
    return float(latency), [_rule(rule) for rule in rules]


class Faults:
    """The faults in force and the log of requests; shared by the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.latency = 0.0
        self.rules: list[Rule] = []
        self._log: list[dict[str, Any]] = []
        self._release = threading.Event()

    def configure(self, latency: float, rules: list[Rule]) -> None:
        """Put these faults in force in place of the ones before."""
        with self._lock:
            self.latency, self.rules = latency, rules

    def reset(self) -> None:
        """No more faults; every request held now goes on at once."""
        with self._lock:
            self.latency, self.rules = 0.0, []
            self._release.set()
            self._release = threading.Event()

    def take(self, endpoint: str, player: str) -> Rule | None:
        """The first rule that matches this call, counted as fired, or None."""
        with self._lock:
            for rule in self.rules:
                if rule.matches(endpoint, player):
                    rule.fired += 1
                    if rule.count is not None:
                        rule.count -= 1
                    return rule
            return None

    def hold(self, seconds: float) -> None:
        """Wait ``seconds``, or until :meth:`reset`."""
        if seconds > 0:
            with self._lock:
                release = self._release
            release.wait(seconds)

    def released(self) -> threading.Event:
        """What the next :meth:`reset` sets: a wait on it ends with that reset."""
        with self._lock:
            return self._release

    def delay(self) -> None:
        """The latency in force, before an answer."""
        self.hold(self.latency)

    def record(self, **entry: Any) -> None:
        """Log one request (endpoint, ids, and its answer or the fault that took it)."""
        with self._lock:
            self._log.append({"seq": len(self._log) + 1, "time": time.time(), **entry})

    def log(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self._log]

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {"latency": self.latency, "rules": [asdict(rule) for rule in self.rules]}
