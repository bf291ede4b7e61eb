/**
 * i18n.js — the page's words in the player's language: message catalogs, the choice of
 * language, and numbers and money as that language writes them.
 *
 * The catalogs are `locales/<language>.json` (shared with the terminal client,
 * docs/architecture.md "Languages"): one JSON object per language, message id -> text,
 * with `{name}` placeholders. English is imported with the module (so `t` works at
 * once, and state.js stays usable on its own); another language is loaded by
 * `setLanguage` before it is used. A text missing from a catalog falls back to English,
 * then to its id.
 *
 * Which language (`chooseLanguage`): the one chosen in Options, once chosen; else the
 * operator's word (the token's `language` claim, from the hello reply; else the page's
 * `?lang=` parameter); else the browser's (`navigator.languages`); else English.
 *
 * The static page's words are marked in index.html: `data-i18n="id"` (the element's
 * text), `data-i18n-placeholder`, `data-i18n-aria-label`, `data-i18n-title` (an
 * attribute); `translatePage` fills them. No innerHTML: text only.
 */

import en from "./locales/en.json" with { type: "json" };

/** The languages with a catalog, English (the reference) first. */
export const LANGUAGES = ["en", "fr", "de"];
/** Each language's name in itself (the Options' choices). */
export const LANGUAGE_NAMES = { en: "English", fr: "Français", de: "Deutsch" };

const catalogs = { en };
let current = "en";

/** The catalog's language for a tag ("fr-CA" -> "fr"), or null. */
export function supported(tag) {
  if (typeof tag !== "string" || !tag) return null;
  const primary = tag.trim().split(/[-_.@]/)[0].toLowerCase();
  return LANGUAGES.includes(primary) ? primary : null;
}

/** Options (unless "auto") > the token's claim > the page's ?lang= > the browser's > English. */
export function chooseLanguage({ option = "auto", token = null, param = null, browser = [] } = {}) {
  return (
    (option && option !== "auto" ? supported(option) : null) ??
    supported(token) ??
    supported(param) ??
    [...(browser ?? [])].map(supported).find(Boolean) ??
    "en"
  );
}

/** Speak `lang` from now on (its catalog loaded first); resolves to the language used. */
export async function setLanguage(lang) {
  const chosen = supported(lang) ?? "en";
  if (!catalogs[chosen]) {
    try {
      catalogs[chosen] = (await import(`./locales/${chosen}.json`, { with: { type: "json" } })).default;
    } catch (err) {
      console.warn(`no catalog for ${chosen}: ${err.message}`);
      return current;
    }
  }
  current = chosen;
  return current;
}

export function language() {
  return current;
}

/** The text of `key` in the current language, its placeholders filled:
 * t("ev.sat", {name: "Ann", seat: 3}) -> "Ann sits in seat 3". */
export function t(key, params = {}) {
  const text = catalogs[current]?.[key] ?? en[key] ?? key;
  return text.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name) => (name in params ? String(params[name]) : m));
}

/** A server refusal in words: the server's own message in English (its language, and
 * more precise), the catalog's `error.<code>` in another language, else the message. */
export function refusalText(code, message) {
  const text = message || code || "";
  if (current === "en") return text;
  return catalogs[current]?.[`error.${code}`] ?? text;
}

/** The static page's marked words in the current language (and <html lang>). */
export function translatePage(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const attr of ["placeholder", "aria-label", "title"]) {
    for (const el of root.querySelectorAll(`[data-i18n-${attr}]`)) el.setAttribute(attr, t(el.getAttribute(`data-i18n-${attr}`)));
  }
  if (root === document) document.documentElement.lang = current;
}

/** A number as the current language writes it (Intl.NumberFormat). */
export function formatNumber(n, options = {}) {
  return new Intl.NumberFormat(current, options).format(n);
}

function separators() {
  const parts = new Intl.NumberFormat(current).formatToParts(1234567.5);
  return {
    decimal: parts.find((p) => p.type === "decimal")?.value ?? ".",
    group: parts.find((p) => p.type === "group")?.value ?? ",",
  };
}

/** Minor units as money with two decimals, as the current language writes it:
 * 123456 -> "1,234.56" (en), "1 234,56" (fr), "1.234,56" (de). Integers only: the
 * whole part and the cents are formatted apart, never through a float. */
export function formatMoney(minor, { sign = false } = {}) {
  if (!Number.isInteger(minor)) return "–";
  const prefix = minor < 0 ? "-" : sign && minor > 0 ? "+" : "";
  const abs = Math.abs(minor);
  const whole = new Intl.NumberFormat(current, { maximumFractionDigits: 0 }).format(Math.floor(abs / 100));
  const cents = String(abs % 100).padStart(2, "0");
  return `${prefix}${whole}${separators().decimal}${cents}`;
}

/** Money text to minor units, exactly, as the current language writes it ("12.5" ->
 * 1250, "1,000" -> 100000 in English; "12,5" -> 1250, "1 000" -> 100000 in French);
 * null when it is not money (at most two decimals, digits only). */
export function parseMoney(text) {
  let s = String(text).trim().replaceAll("_", "");
  if (separators().decimal === ",") {
    s = s.replaceAll(/[\s\u202f\u00a0.]/g, "").replace(",", ".");
  } else {
    s = s.replaceAll(/[ ]/g, "");
    if (/^\d{1,3}(,\d{3})+(\.\d*)?$/.test(s)) s = s.replaceAll(",", "");
  }
  const m = /^(\d{1,12})(?:\.(\d{1,2}))?$/.exec(s);
  if (!m) return null;
  return Number(m[1]) * 100 + Number((m[2] ?? "0").padEnd(2, "0"));
}
