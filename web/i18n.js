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
 *
 * Money is in the player's currency (`setCurrency`, from the hello reply's `currency`
 * and `decimals`): play money (no currency, every guest's) with two decimals and no
 * symbol; a currency as the language writes it (`Intl.NumberFormat`, style currency),
 * with as many decimals as its minor units have: "€1,234.56", "1 234,56 €", "¥1,234".
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

const pluralRules = new Map();

/** CLDR's plural category of `count` in `lang` ("one", "few", "many", "other"...):
 * Intl.PluralRules, the browser's copy of CLDR (French: 0 and 1 are "one"). */
export function pluralCategory(count, lang = current) {
  if (!pluralRules.has(lang)) pluralRules.set(lang, new Intl.PluralRules(lang));
  return pluralRules.get(lang).select(count);
}

/** The text of `key` in the current language, its placeholders filled:
 * t("ev.sat", {name: "Ann", seat: 3}) -> "Ann sits in seat 3". A message with plural
 * forms is chosen by its `{count}` (CLDR's rules): `KEY.one` (or `KEY.few`, ... as the
 * language has them) when the catalog has that form for the count's category, else
 * `KEY` itself, the "other" form: t("ev.shoe_ended", {shoe: 2, count: 1}) -> "... (1
 * coup)". A text missing from the catalog falls back to English, in English's rules. */
export function t(key, params = {}) {
  const own = catalogs[current]?.[key] !== undefined;
  const lang = own ? current : "en";
  const catalog = own ? catalogs[current] : en;
  let text = catalog[key] ?? key;
  if (typeof params.count === "number" && Number.isFinite(params.count)) {
    text = catalog[`${key}.${pluralCategory(params.count, lang)}`] ?? text;
  }
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

let money = { currency: null, decimals: 2 };

/** Show money in `currency` (an ISO 4217 code; null: play money) from now on, its minor
 * units `decimals` digits (the hello reply's). A code the browser does not know is
 * shown as play money. Returns the currency now used. */
export function setCurrency(currency, decimals) {
  money = { currency: null, decimals: 2 };
  if (typeof currency !== "string" || !/^[A-Z]{3}$/.test(currency)) return null;
  try {
    new Intl.NumberFormat("en", { style: "currency", currency });
  } catch {
    return null;
  }
  const digits = Number.isInteger(decimals) && decimals >= 0 && decimals <= 6 ? decimals : 2;
  money = { currency, decimals: digits };
  return currency;
}

/** The currency money is shown in (null: play money) and its minor units' digits. */
export function currency() {
  return { ...money };
}

const formats = new Map();

function currencyFormat(code, digits) {
  const key = `${current}|${code}|${digits}`;
  if (!formats.has(key)) {
    formats.set(key, new Intl.NumberFormat(current, { style: "currency", currency: code, minimumFractionDigits: digits, maximumFractionDigits: digits }));
  }
  return formats.get(key);
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

/** Minor units as money, as the current language writes it: play money with two
 * decimals, 123456 -> "1,234.56" (en), "1 234,56" (fr), "1.234,56" (de); in the current
 * currency (`setCurrency`) "€1,234.56", "1 234,56 €", and in yen "¥123,456". `compact`
 * leaves out minor units that are all zero (a chip's "€5"). Integers only: the amount
 * reaches Intl as the exact decimal text, never through a float. */
export function formatMoney(minor, { sign = false, compact = false } = {}) {
  if (!Number.isInteger(minor)) return "–";
  const prefix = minor < 0 ? "-" : sign && minor > 0 ? "+" : "";
  const abs = Math.abs(minor);
  const digits = money.decimals;
  const scale = 10 ** digits;
  const wholeUnits = Math.floor(abs / scale);
  const fraction = digits ? String(abs % scale).padStart(digits, "0") : "";
  const shown = compact && abs % scale === 0 ? 0 : digits;
  if (!money.currency) {
    const whole = new Intl.NumberFormat(current, { maximumFractionDigits: 0 }).format(wholeUnits);
    return shown ? `${prefix}${whole}${separators().decimal}${fraction}` : `${prefix}${whole}`;
  }
  const exact = shown ? `${wholeUnits}.${fraction}` : String(wholeUnits);
  return `${prefix}${currencyFormat(money.currency, shown).format(exact)}`;
}

/** Money text to minor units, exactly, as the current language writes it ("12.5" ->
 * 1250, "1,000" -> 100000 in English; "12,5" -> 1250, "1 000" -> 100000 in French), in
 * the current currency (its symbol may be written: "€12.50"; in yen "1,000" -> 1000);
 * null when it is not money (at most as many decimals as the currency's minor units
 * have, none in yen; digits only). */
export function parseMoney(text) {
  let s = String(text).trim().replaceAll("_", "");
  const digits = money.decimals;
  if (money.currency) {
    const symbol = currencyFormat(money.currency, digits).formatToParts(1).find((p) => p.type === "currency")?.value;
    for (const mark of [money.currency, symbol]) if (mark) s = s.replaceAll(mark, "");
    s = s.trim();
  }
  if (separators().decimal === ",") {
    s = s.replaceAll(/[\s\u202f\u00a0.]/g, "").replace(",", ".");
  } else {
    s = s.replaceAll(/[ ]/g, "");
    if (/^\d{1,3}(,\d{3})+(\.\d*)?$/.test(s)) s = s.replaceAll(",", "");
  }
  const m = new RegExp(digits ? `^(\\d{1,12})(?:\\.(\\d{1,${digits}}))?$` : "^(\\d{1,15})$").exec(s);
  if (!m) return null;
  return Number(m[1]) * 10 ** digits + Number((m[2] ?? "").padEnd(digits, "0") || "0");
}
