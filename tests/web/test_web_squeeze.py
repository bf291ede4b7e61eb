"""The squeeze as players expect it (issue 34 §4), in Chromium: two players, Bob the
Player hand's turner and Alice watching it (she holds the shoe and turns the Banker
hand), a coup squeezed in each style.

- Bob drags the card's lifting corner (PEEK), long side (SIDE) or near edge (QUICK):
  the card's back peels off as far as he drags, and he sees the face only where it has
  (PEEK at a small bend: the lifted corner's index, not the far index nor the pips).
- Alice sees the same card bend as Bob bends it: the server's `progress` bends reach her
  page, which draws the same bend (a peel: the back clipped, its lifted part folded
  over), within a moment of Bob's; never its face: her page holds no rank, no suit and
  no pip of it until the card is turned, and then it flips up for her.
- CARD 2 (the keys' way) opens the next card at the speed of Options, bent for Alice too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from web_helpers import RELAXED, ServerProcess, TablePage, ms, scaled, server_config, shot

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

TABLES = [{"id": "sq", "name": "Squeeze", "tier": "1-100", "timers": RELAXED}]
# A card's shape and each style's fold (cards.js PEELS, CURL): the way the lifted corner
# or edge moves across the card, how far the fold goes, and where it starts.
W, H = 69, 100
DIAGONAL = (W**2 + H**2) ** 0.5
PEELS = {
    "peek": {
        "n": (-H / DIAGONAL, -W / DIAGONAL),
        "reach": 2 * W * H / DIAGONAL,
        "at": (0.97, 0.97),
    },
    "side": {"n": (-1.0, 0.0), "reach": W, "at": (0.97, 0.5)},
    "quick": {"n": (0.0, -1.0), "reach": H, "at": (0.5, 0.97)},
}
CURL = 0.5
SUITS = "♠♥♦♣"
# Game speed 3: CARD n opens a card in 1.2 s (squeeze.js SQUEEZE_SECONDS), a bend sent
# every 280 ms (SEND_MS) and tweened between: Alice's page, read every 60 ms, sees card 2
# at a dozen bends or more (speed 1's 2.6 s only made each coup slower to watch).
SLOW = "localStorage.setItem('chemmy.options', JSON.stringify({speed: 3}));"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-squeeze"), server_config(TABLES)).start()
    yield s
    s.stop()


CARD = "#cards-player .card[data-index='{i}']"


def bend_of(tp: TablePage, index: int) -> float | None:
    got = tp.page.evaluate(
        "(sel) => document.querySelector(sel)?.dataset.progress ?? null", CARD.format(i=index)
    )
    return None if got is None else float(got)


class Drag:
    """Bob's mouse on a card: pressed on its lifting corner or edge, moved to bends."""

    def __init__(self, tp: TablePage, index: int, style: str) -> None:
        self.tp = tp
        box = tp.page.locator(CARD.format(i=index)).bounding_box()
        assert box, "the card is on screen"
        peel = PEELS[style]
        self.x = box["x"] + box["width"] * peel["at"][0]
        self.y = box["y"] + box["height"] * peel["at"][1]
        self.n = peel["n"]
        # The lifted corner follows the pointer: it moves 1 + CURL times the fold.
        self.px_per_percent = peel["reach"] / 100 * (1 + CURL) * box["height"] / H
        tp.page.mouse.move(self.x, self.y)
        tp.page.mouse.down()

    def to(self, percent: float, steps: int = 6) -> None:
        d = percent * self.px_per_percent
        self.tp.page.mouse.move(self.x + self.n[0] * d, self.y + self.n[1] * d, steps=steps)

    def release(self) -> None:
        self.tp.page.mouse.up()


def hit(tp: TablePage, index: int, fx: float, fy: float) -> str:
    """What is on top at a point of the card (its fractions across and down): the back,
    the flap (the lifted back), or the face (its index, its pips, or a face turned away)."""
    return str(
        tp.page.evaluate(
            """([sel, fx, fy]) => {
                const card = document.querySelector(sel);
                const b = card.getBoundingClientRect();
                const el = document.elementFromPoint(b.left + b.width * fx, b.top + b.height * fy);
                if (!el || !card.contains(el)) return "outside";
                if (el.closest(".back")) return "back";
                if (el.closest(".flap")) return "flap";
                if (el.closest(".face")) return "face";
                return el.className || el.tagName;
            }""",
            [CARD.format(i=index), fx, fy],
        )
    )


def watcher_sees_no_face(tp: TablePage, index: int) -> None:
    """Alice's page holds nothing of the card's face: no rank, no suit, no pip."""
    card = tp.page.locator(CARD.format(i=index))
    expect(card).to_have_attribute("data-state", "squeeze")
    assert card.locator(".face.unseen").count() == 1
    assert card.locator(".pips, .corner, .face:not(.unseen)").count() == 0
    text = tp.page.evaluate("(sel) => document.querySelector(sel).outerHTML", CARD.format(i=index))
    assert not any(s in text for s in SUITS), text[:300]
    assert "?" not in card.inner_text()
    expect(card).to_have_accessible_name("face down, being squeezed")
    assert tp.state("Object.keys(s.coup.private).length") == 0, "no card is private to Alice"


def peeled(tp: TablePage, index: int) -> dict[str, str]:
    """The clip-paths of the card's back and of its lifted part (a peel, not a mask)."""
    return dict(
        tp.page.evaluate(
            """(sel) => { const c = document.querySelector(sel);
                return { back: getComputedStyle(c.querySelector('.back')).clipPath,
                         flap: getComputedStyle(c.querySelector('.flap')).clipPath }; }""",
            CARD.format(i=index),
        )
    )


def same_bend(alice: TablePage, bob: TablePage, index: int, seconds: float = 5.0) -> float:
    """Wait until Alice's card shows Bob's bend (to a percent); return it."""
    target = bend_of(bob, index)
    assert target is not None
    deadline = time.monotonic() + scaled(seconds)
    while True:
        seen = bend_of(alice, index)
        if seen is not None and abs(seen - target) <= 1:
            return seen
        assert time.monotonic() < deadline, f"Alice sees {seen}, Bob bent it to {target}"
        alice.page.wait_for_timeout(40)


def play_to_turn(alice: TablePage, bob: TablePage) -> str:
    """Bets (Alice Banker, Bob Player: he turns the Player hand), DONE, the deal."""
    # After a Player win the shoe is offered to the next seat: whoever is asked takes it.
    deadline = time.monotonic() + scaled(20)
    while not all(tp.state("Boolean(s.actions.done)") for tp in (alice, bob)):
        assert time.monotonic() < deadline, "betting never opened"
        for tp in (alice, bob):
            if tp.enabled("#act-accept"):
                tp.click("#act-accept")
        alice.page.wait_for_timeout(50)
    round_id = alice.round_id()
    alice.chip(0)
    alice.bet("banker")
    bob.chip(1)
    bob.bet("player")
    alice.click("#act-done")
    bob.click("#act-done")
    bob.page.wait_for_function("() => Boolean(chemmyPage.state.actions.squeeze)", timeout=ms(20))
    return round_id


def finish(alice: TablePage, bob: TablePage, round_id: str) -> None:
    """Whatever is left, tossed by whoever is to turn it, until the coup is settled."""
    deadline = time.monotonic() + scaled(60)
    while alice.state(f"s.lastCoup?.roundId !== {round_id!r}"):
        assert time.monotonic() < deadline, f"coup {round_id} not settled"
        for tp in (alice, bob):
            if tp.enabled("#sq-toss"):
                tp.toss()
        alice.page.wait_for_timeout(50)


@pytest.mark.parametrize("viewport", [(1280, 800)])
def test_every_viewer_sees_the_card_turned_as_it_is_turned(
    server: ServerProcess,
    open_page: Callable[..., Page],
    artifacts: Path,
    viewport: tuple[int, int],
) -> None:
    alice = TablePage(open_page(viewport=viewport), "alice").open(
        server, "alice", "Alice", table="sq"
    )
    bob_page = open_page(viewport=viewport)
    bob_page.add_init_script(SLOW)  # CARD n opens a card in 1.2 s: bends to watch
    bob = TablePage(bob_page, "bob").open(server, "bob", "Bob", table="sq")
    alice.sit(1)
    alice.click("#act-accept")
    alice.click("#act-cut")
    bob.sit(2)
    for style in ("peek", "side", "quick"):
        round_id = play_to_turn(alice, bob)
        bob.click(f"#sq-{style}")
        bob.page.wait_for_function("() => Boolean(chemmyPage.state.actions.turn)", timeout=ms(10))
        # Before any bend: Bob's card lies ready, its back whole; Alice's is face down.
        expect(bob.page.locator(CARD.format(i=1))).to_have_attribute("data-state", "squeeze")
        assert hit(bob, 1, 0.5, 0.5) == "back" and hit(bob, 1, 0.95, 0.95) == "back"
        assert bob.page.locator(CARD.format(i=1) + " .pips").count() == 1  # his to see

        drag = Drag(bob, 1, style)
        steps: list[tuple[float, float]] = []
        for percent in (12, 30, 55):
            drag.to(percent)
            mine = bend_of(bob, 1)
            assert mine is not None and abs(mine - percent) <= 3, (style, percent, mine)
            steps.append((mine, same_bend(alice, bob, 1)))
            watcher_sees_no_face(alice, 1)
            # Both see a peel: the back clipped, its lifted part folded over.
            for tp in (alice, bob):
                clips = peeled(tp, 1)
                assert clips["back"].startswith("polygon(") and clips["flap"].startswith(
                    "polygon("
                ), (tp.label, clips)
            if percent == 12:
                # What the bend has reached shows; the rest stays under the back.
                lifted = {"peek": (0.93, 0.95), "side": (0.95, 0.5), "quick": (0.5, 0.96)}[style]
                far = {"peek": (0.1, 0.07), "side": (0.1, 0.5), "quick": (0.5, 0.06)}[style]
                assert hit(bob, 1, *lifted) == "face", f"{style}: Bob sees the lifted {style}"
                assert hit(bob, 1, *far) == "back", f"{style}: the far side is still covered"
                assert hit(bob, 1, 0.5, 0.5) == "back", f"{style}: the middle pips are covered"
                assert hit(alice, 1, *far) == "back" and hit(alice, 1, *lifted) == "face"
            if percent == 30 and style == "peek":
                bob.page.locator("#hands").screenshot(
                    path=str(artifacts / "squeeze-peek-turner.png")
                )
                alice.page.locator("#hands").screenshot(
                    path=str(artifacts / "squeeze-peek-watcher.png")
                )
        drag.release()
        assert [a for _, a in steps] == sorted(a for _, a in steps), (
            f"Alice's bends go forward: {steps}"
        )
        # Still bent for both after he lets go (under 70%: it stays where it is).
        bob.page.wait_for_timeout(400)
        assert abs((bend_of(bob, 1) or 0) - steps[-1][0]) <= 1
        assert abs((bend_of(alice, 1) or 0) - steps[-1][1]) <= 1

        # CARD 1 opens it the rest of the way and turns it: it flips up for Alice.
        bob.click("#sq-card1")
        bob.page.wait_for_function(
            "() => chemmyPage.state.coup?.player?.[0]?.up === true", timeout=ms(15)
        )
        up = alice.page.locator(CARD.format(i=1))
        expect(up).to_have_attribute("data-state", "up")
        card = str(up.get_attribute("data-card"))
        assert up.locator(".face .pips").count() == 1
        # CARD 2, by the buttons: Alice sees it bend as it opens, forward only.
        seen: list[float] = []
        bob.click("#sq-card2")
        deadline = time.monotonic() + scaled(10)
        while alice.state("!s.coup?.player?.[1]?.up") and time.monotonic() < deadline:
            now = alice.page.evaluate(
                """(sel) => { const c = document.querySelector(sel);
                    return c && { state: c.dataset.state, bend: c.dataset.progress ?? null, html: c.outerHTML }; }""",
                CARD.format(i=2),
            )
            if now and now["state"] == "squeeze" and now["bend"] is not None:
                seen.append(float(now["bend"]))
                assert not any(s in now["html"] for s in SUITS), now["html"][:300]
            alice.page.wait_for_timeout(60)
        assert len(set(seen)) >= 2, f"{style}: Alice saw card 2 bend: {seen}"
        assert seen == sorted(seen)
        if style == "peek":
            shot(alice.page, artifacts / "squeeze-watching-peel.jpg")
        finish(alice, bob, round_id)
        assert card == alice.state("s.lastCoup.player[0].card")
