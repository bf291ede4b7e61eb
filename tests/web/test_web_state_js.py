"""state.js, the page's model of a table, run in the browser by itself: money as text
and back, and the server's actions as the only source of what a player may do (the
snapshot's ``you.actions``, replaced by an event's private ``actions``; a spectator's
free seats from ``sat`` and ``stood``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Page
from web_helpers import RELAXED, Inspector, ServerProcess, server_config

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tables = [{"id": "js", "name": "Model", "tier": "1-100", "timers": RELAXED}]
    s = ServerProcess(tmp_path_factory.mktemp("web-js"), server_config(tables)).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def run(server: ServerProcess, browser: Any) -> Iterator[Callable[[str], Any]]:
    """``run(body)``: the body of an async function with ``m`` = the state.js module,
    evaluated in a page of the server's origin; returns what it returns."""
    context = browser.new_context()
    page: Page = context.new_page()
    page.goto(server.http + "/?guest=1")

    def _run(body: str) -> Any:
        return page.evaluate(f"async () => {{ const m = await import('/state.js'); {body} }}")

    yield _run
    context.close()


def test_money(run: Callable[[str], Any]) -> None:
    assert run("return [123456, 5, -5, 0, 100000000].map((v) => m.formatMoney(v));") == [
        "1,234.56",
        "0.05",
        "-0.05",
        "0.00",
        "1,000,000.00",
    ]
    assert run(
        "return [m.formatMoney(250, {sign: true}), m.formatMoney(1.5), m.formatMoney(null)];"
    ) == [
        "+2.50",
        "\u2013",
        "\u2013",
    ]
    texts = [
        "12.5",
        "12.50",
        "1,000",
        "1,000.25",
        " 7 ",
        "0.1",
        "12.345",
        "1.2.3",
        "-5",
        "abc",
        "",
        "1,00",
    ]
    expected = [1250, 1250, 100000, 100025, 700, 10, None, None, None, None, None, None]
    assert run(f"return {json.dumps(texts)}.map((t) => m.parseMoney(t));") == expected


SNAPSHOT = {
    "table": "js",
    "seq": 7,
    "phase": "betting",
    "deadline": None,
    "options": {
        "name": "Model",
        "seats": 3,
        "areas": ["player", "banker", "tie"],
        "limits": {"min": 100},
    },
    "shoe": None,
    "coup_no": 1,
    "holder": "ann",
    "house_holds": False,
    "offer": None,
    "cutter": None,
    "seats": [
        {"seat": 1, "player": "ann", "name": "Ann", "connected": True, "bets": {}, "done": False}
    ],
    "spectators": 1,
    "coup": None,
    "last_result": None,
    "roads": {},
    "you": {
        "player": "me",
        "seat": None,
        "balance": 5000,
        "available": 5000,
        "bets": {},
        "last_bets": {},
        "actions": {"sit": {"seats": [2, 3]}, "leave": {}},
    },
}


def test_actions_come_from_the_server(run: Callable[[str], Any]) -> None:
    result = run(
        f"""
        const s = new m.TableState("me");
        s.load({json.dumps(SNAPSHOT)});
        const seen = [JSON.stringify(s.actions)];
        // Someone takes seat 2: a spectator's free seats follow the public free_seats.
        s.apply("sat", {{player: "bob", name: "Bob", seat: 2, free_seats: [3]}});
        seen.push(JSON.stringify(s.actions));
        // I sit: my new actions come privately with the step's last event.
        s.apply("sat", {{player: "me", name: "Me", seat: 3, free_seats: [],
                         actions: {{stand: {{}}, leave: {{}}, bet: {{areas: {{player: {{min: 100, max: 5000}}}}}}, done: {{}}}}}});
        seen.push(JSON.stringify(s.actions));
        // An event without actions leaves them as they are; one with them replaces them.
        s.apply("bets", {{player: "bob", seat: 2, bets: {{banker: 200}}, change: "place"}});
        seen.push(JSON.stringify(s.actions));
        s.apply("betting_closed", {{round_id: "js-1-1", bets: {{bob: {{banker: 200}}}}, totals: {{banker: 200}}, actions: {{}}}});
        seen.push(JSON.stringify(s.actions));
        return {{seen, seat: s.mySeat, phase: s.phase, stacks: s.stacks()}};
        """
    )
    seen = [json.loads(x) for x in result["seen"]]
    assert seen[0] == {"sit": {"seats": [2, 3]}, "leave": {}}
    assert seen[1] == {"sit": {"seats": [3]}, "leave": {}}
    assert set(seen[2]) == {"stand", "leave", "bet", "done"}
    assert seen[3] == seen[2]
    assert seen[4] == {}
    assert result["seat"] == 3 and result["phase"] == "turn"
    assert result["stacks"] == {"banker": [{"player": "bob", "amount": 200}]}


def test_a_coup_in_words(run: Callable[[str], Any]) -> None:
    notes = run(
        f"""
        const s = new m.TableState("me");
        s.load({json.dumps(SNAPSHOT)});
        const out = [];
        const say = (kind, data) => out.push(...s.apply(kind, data).map((n) => [n.text, n.tone, n.say]));
        say("sat", {{player: "me", name: "Me", seat: 2, balance: 5000, available: 5000}});
        say("bets", {{player: "me", seat: 2, bets: {{player: 500}}, change: "place", available: 4500}});
        say("betting_closed", {{round_id: "js-1-1", bets: {{me: {{player: 500}}}}, totals: {{player: 500}}, balance: 4500}});
        say("dealt", {{round_id: "js-1-1", player: 2, banker: 2, turners: {{player: "me", banker: "ann"}}}});
        say("turn", {{hand: "player", turner: "me", third: false, deadline: 1}});
        say("card", {{hand: "player", index: 1, card: "9s", by: "croupier", on_behalf: "me", total: 9}});
        say("card", {{hand: "player", index: 2, card: "Kd", by: "croupier", on_behalf: "me", total: 9}});
        say("card", {{hand: "banker", index: 1, card: "2h", by: "ann", on_behalf: null, total: 2}});
        say("card", {{hand: "banker", index: 2, card: "5c", by: "ann", on_behalf: null, total: 7}});
        say("result", {{round_id: "js-1-1", coup_no: 1, player: ["9s", "Kd"], banker: ["2h", "5c"],
                        player_total: 9, banker_total: 7, outcome: "player", natural: true,
                        player_pair: false, banker_pair: false}});
        say("settled", {{round_id: "js-1-1", payouts: [], balance: 5500, net: 500}});
        return {{out, balance: s.balance, last: s.lastBets, line: s.resultLine}};
        """
    )
    texts = [t for t, _, _ in notes["out"]]
    assert texts[0] == "You sit in seat 2"
    assert "Your turn: turn the Player cards — TOSS, or squeeze: PEEK, SIDE, QUICK" in texts
    assert "The croupier turned Player card 1 (9♠) for you: time ran out" in texts
    # With a wager of mine in the coup the result is said once, by settled with my part
    # of it (issue 34 §7: the log had it three times); the result event only speaks.
    assert ["", "info", "Player wins"] in notes["out"]
    assert sum(t.startswith("Player wins 9 to 7") for t in texts) == 1
    assert notes["out"][-1] == [
        "Player wins 9 to 7 (natural) — You won 5.00 (finished by the croupier for you)",
        "win",
        "You win",
    ]
    assert notes["balance"] == 5500 and notes["last"] == {"player": 500}


def test_a_voided_round_in_words(run: Callable[[str], Any]) -> None:
    """A voided round's record (the history, the back office) has no outcome: it is said
    voided, with its reason, not "Banker wins 0 to 0"."""
    texts = run(
        """
        return [
          m.resultText({void: true, reason: "card dropped", outcome: null, player: ["9s"], banker: []}),
          m.resultText({outcome: "banker", banker_total: 7, player_total: 5}),
        ];
        """
    )
    assert texts == ["Voided (card dropped): every bet returned", "Banker wins 7 to 5"]


def test_a_refused_debit_in_words(run: Callable[[str], Any]) -> None:
    """Debiting has its sentence (also in a snapshot taken then); my refused debit is a
    note to hold on the display (app.js), another player's is not."""
    result = run(
        f"""
        const s = new m.TableState("me");
        const loaded = s.load({{...{json.dumps(SNAPSHOT)}, phase: "debiting"}});
        const out = [];
        const say = (kind, data) => out.push(...s.apply(kind, data));
        say("sat", {{player: "me", name: "Me", seat: 2, balance: 5000, available: 5000}});
        say("bets", {{player: "me", seat: 2, bets: {{player: 500}}, change: "place", available: 4500}});
        say("debiting", {{round_id: "js-1-1", players: ["me"], actions: {{}}}});
        const phase = s.phase;
        say("bets", {{player: "me", seat: 2, bets: {{}}, change: "refused", available: 5000}});
        say("debit_refused", {{round_id: "js-1-1", player: "me", reason: "limit_reached",
                               message: "these bets would go over a limit on your account"}});
        say("debit_refused", {{round_id: "js-1-1", player: "ann"}});
        return {{loaded, out, phase, bets: s.myBets, available: s.available}};
        """
    )
    assert result["loaded"] == [
        {"text": "Your wallet is taking the bets", "tone": "info", "say": None}
    ]
    assert result["phase"] == "debiting"
    notes = result["out"]
    assert notes[-3]["text"] == "No more bets: the wallet is taking the bets"
    assert notes[-2] == {
        "text": "Your bets were not placed: they would go over a limit on your account",
        "tone": "lose",
        "say": "Your bets were not placed: they would go over a limit on your account",
        "hold": True,
    }
    assert notes[-1]["text"].endswith("bets were not placed") and "hold" not in notes[-1]
    assert result["bets"] == {} and result["available"] == 5000


def test_a_snapshot_mid_coup_gives_the_servers_totals(
    server: ServerProcess, run: Callable[[str], Any]
) -> None:
    """Joined mid-coup, the page shows the totals the server's snapshot gives
    (``coup.totals``): it counts no cards itself."""
    ann = Inspector(server, "tot-ann", "Ann")
    ann.request("join", table="js")
    ann.request("sit", table="js")
    ann.request("accept_shoe", table="js")
    ann.request("cut", table="js", position=100)
    ann.request("bet", table="js", area="player", amount=100)
    ann.request("done", table="js")
    ann.request("squeeze", table="js", hand="player", style="peek")
    ann.request("turn", table="js", hand="player", card=1)
    watcher = Inspector(server, "tot-watcher", "Watcher")
    snap = watcher.snapshot("js")
    totals = snap["coup"]["totals"]
    assert isinstance(totals["player"], int) and totals["banker"] is None
    seen = run(
        f"""const s = new m.TableState("tot-watcher");
        s.load({json.dumps(snap)});
        return s.coup.totals;"""
    )
    assert seen == {"player": totals["player"]}
    ann.close()
    watcher.close()


def test_a_bettor_without_a_seat_as_they_and_the_others_see_it(
    run: Callable[[str], Any],
) -> None:
    """GAME_RULES §5: the felt's totals and bettors are the server's for everyone; a
    bettor's bets, wager and payouts come only in their own copies, and nobody else's
    page can name them."""
    options = {**SNAPSHOT["options"], "bettors": 1000}
    snap = {**SNAPSHOT, "options": options, "felt": {"totals": {}, "bettors": 0}}
    result = run(
        f"""
        const me = new m.TableState("me");
        me.load({json.dumps(snap)});
        const ann = new m.TableState("ann");
        ann.load({json.dumps({**snap, "you": {**snap["you"], "player": "ann", "seat": 1}})});
        const felt = {{totals: {{player: 700}}, bettors: 1}};
        me.apply("bets", {{player: "me", seat: null, bets: {{player: 700}}, change: "place",
                           ...felt, available: 4300}});
        ann.apply("bets", {{player: null, seat: null, bets: null, change: "place", ...felt}});
        const betting = {{
          me: [me.takesBettors, me.bettingWithoutSeat, me.areaTotal("player"), me.stacks(), me.available],
          ann: [ann.felt, ann.bettors, ann.areaTotal("player"), ann.stacks(), ann.nextChips],
        }};
        const closed = {{round_id: "js-1-1", bets: {{}}, totals: {{player: 700}}, bettors: 1}};
        me.apply("betting_closed", {{...closed, balance: 4300, available: 4300, own: {{player: 700}}}});
        ann.apply("betting_closed", closed);
        const held = {{me: [me.myStake, me.coup.bets], ann: [ann.coup.bets, ann.coup.felt]}};
        const paid = {{player: "me", area: "player", stake: 700, returned: 1400, win: 700,
                       commission: 0, outcome: "win"}};
        const notes = me.apply("settled", {{round_id: "js-1-1", payouts: [], totals: {{}}, bettors: 0,
                                           balance: 5700, available: 5700, net: 700, own: [paid]}});
        ann.apply("settled", {{round_id: "js-1-1", payouts: [], totals: {{}}, bettors: 0}});
        return {{betting, held, notes: notes.map((n) => n.text), payouts: me.lastCoup.payouts,
                 after: [me.available, me.felt, me.bettors, ann.lastCoup.payouts]}};
        """
    )
    me, ann = result["betting"]["me"], result["betting"]["ann"]
    assert me == [True, True, 700, {"player": [{"player": "me", "amount": 700}]}, 4300]
    assert ann == [{"player": 700}, 1, 700, {}, True]
    assert result["held"]["me"] == [700, {"me": {"player": 700}}]
    assert result["held"]["ann"] == [{}, {"player": 700}]
    assert len(result["notes"]) == 1 and "You won 7.00" in result["notes"][0]
    assert result["payouts"] == [
        {"player": "me", "area": "player", "stake": 700, "returned": 1400, "win": 700,
         "commission": 0, "outcome": "win"}
    ]  # fmt: skip
    assert result["after"] == [5700, {}, 0, []]
