/**
 * embed.js — the host page's side of the web table in an iframe (docs/embedding.md §3),
 * as a file, so that an operator's page under a strict Content-Security-Policy (no
 * inline script, no inline style) embeds the table by copying two tags:
 *
 *     <iframe id="chemmy" title="Baccarat table" src="/chemmy/?parent=https://casino.example&table=t1"
 *             data-chemmy-token="/api/chemmy-token" allow="autoplay"></iframe>
 *     <script type="module" src="/chemmy/embed.js"></script>
 *
 * For every `iframe[data-chemmy-token]` of the page it:
 * - sizes the frame (the CSSOM, which a CSP allows where a `style` attribute is not):
 *   `data-width` (default 100%), `data-height` (default 820px), no border;
 * - answers the table's `chemmy:ready` with `chemmy:connect` and a token fetched from
 *   the operator's own endpoint (`data-chemmy-token`, same origin, with the visitor's
 *   cookies: it returns `{"token": "..."}`), and a refused sign-in (`chemmy:status`,
 *   closed, `token_expired`/`bad_token`) with `chemmy:token` and a fresh one;
 * - hands the table a fresh token every 10 minutes (`data-refresh`, seconds), used at
 *   its next reconnection;
 * - passes every message of the table on as a DOM event on the frame, of the message's
 *   type (`chemmy:ready`, `chemmy:status`), the message as its `detail`: the host's own
 *   code listens with `frame.addEventListener("chemmy:status", (ev) => ...)`.
 *
 * It talks only to the frame's own window, and to the origin of its `src`: it accepts
 * no message from anywhere else, and sends the token nowhere else. It holds no rule of
 * the game and never writes HTML. Served by chemmy-server at `/embed.js` (with CORS, for
 * a page that frames Chemmy from another origin).
 */

const REFRESH_SECONDS = 600;
const EXPIRED = /^(token_expired|bad_token)\b/;

/** Embed every marked frame of the page (called at once when this module loads). */
export function embedAll(root = document) {
  return [...root.querySelectorAll("iframe[data-chemmy-token]")].map((frame) => embed(frame));
}

/** The host side of one frame; returns a function that stops it. */
export function embed(frame) {
  const d = frame.dataset;
  frame.style.width = d.width ?? "100%";
  frame.style.height = d.height ? (/^\d+$/.test(d.height) ? `${d.height}px` : d.height) : "820px";
  frame.style.border = "0";
  frame.style.display = "block";
  const origin = new URL(frame.getAttribute("src"), location.href).origin;
  const tokenUrl = new URL(d.chemmyToken, location.href);

  async function freshToken() {
    const res = await fetch(tokenUrl, { credentials: "same-origin", cache: "no-store" });
    if (!res.ok) throw new Error(`${tokenUrl.pathname}: HTTP ${res.status}`);
    const { token } = await res.json();
    if (typeof token !== "string" || !token) throw new Error(`${tokenUrl.pathname}: no token`);
    return token;
  }

  async function send(type) {
    let token;
    try {
      token = await freshToken();
    } catch (err) {
      frame.dispatchEvent(new CustomEvent("chemmy:error", { detail: { message: String(err.message ?? err) } }));
      return false;
    }
    frame.contentWindow?.postMessage({ type, token }, origin);
    return true;
  }

  // The table says `chemmy:ready` until it is answered (this module may run after its
  // first one): one `chemmy:connect` per page the frame loads.
  let connected = false;
  frame.addEventListener("load", () => (connected = false));

  async function onMessage(ev) {
    if (ev.source !== frame.contentWindow || ev.origin !== origin) return;
    const m = ev.data;
    if (!m || typeof m !== "object" || typeof m.type !== "string" || !m.type.startsWith("chemmy:")) return;
    frame.dispatchEvent(new CustomEvent(m.type, { detail: m }));
    if (m.type === "chemmy:ready" && !connected) {
      connected = true;
      connected = await send("chemmy:connect");
    } else if (m.type === "chemmy:status" && m.state === "closed" && EXPIRED.test(m.reason ?? "")) {
      send("chemmy:token");
    }
  }

  addEventListener("message", onMessage);
  const seconds = Number(d.refresh) > 0 ? Number(d.refresh) : REFRESH_SECONDS;
  const timer = setInterval(() => send("chemmy:token"), seconds * 1000);
  return () => {
    removeEventListener("message", onMessage);
    clearInterval(timer);
  };
}

embedAll();
