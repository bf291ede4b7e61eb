/**
 * dom.js — the web table's helpers (app.js and its screens): building elements without
 * HTML as text (the CSP enforces Trusted Types), and the browser's storage, where there
 * is any.
 */

export const $ = (sel, root = document) => root.querySelector(sel);

/** Build an element: h("button", {class: "x", onclick: fn}, "text", child, ...). */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v == null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else if (k === "vars") for (const [p, val] of Object.entries(v)) el.style.setProperty(p, String(val));
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replace an element's children, skipping the empty ones. */
export function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c != null && c !== false));
}

/** Show or hide, enable or disable: written only when it changes (no needless layout). */
export function show(el, on) {
  if (el.hidden !== !on) el.hidden = !on;
}

export function enable(el, on) {
  if (el.disabled !== !on) el.disabled = !on;
}


/** The browser's storage, where there is any: an iframe on another site may be denied
 * it (third-party storage), and the page then remembers for this visit only. */
const memory = new Map();
function storage(kind) {
  try {
    const s = kind === "local" ? globalThis.localStorage : globalThis.sessionStorage;
    s.length; // throws when access is denied
    return s;
  } catch {
    return null;
  }
}
export const store = {
  get(kind, key) {
    const s = storage(kind);
    return s ? s.getItem(key) : (memory.get(`${kind}:${key}`) ?? null);
  },
  set(kind, key, value) {
    const s = storage(kind);
    try {
      if (s) s.setItem(key, value);
      else memory.set(`${kind}:${key}`, value);
    } catch {
      memory.set(`${kind}:${key}`, value); // full, or private browsing
    }
  },
  remove(kind, key) {
    storage(kind)?.removeItem(key);
    memory.delete(`${kind}:${key}`);
  },
};
