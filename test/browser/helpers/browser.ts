// Debian's Chromium driven by playwright-core (no browser download: the machine has no network).
// The flags turn off what Chromium would otherwise try to reach (sync, component updates, QUIC,
// background fetches); each launch gets a fresh profile directory from Playwright.
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserServer, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.FLAKEHOUSE_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** What page functions use of the DOM (the project's TypeScript has no DOM lib: it is Node code). */
export interface PageGlobals {
  document: {
    querySelector(selector: string): unknown;
    querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>;
    documentElement: { scrollWidth: number; clientWidth: number };
  };
}

export const REPO_ROOT = path.resolve(import.meta.dirname, '../../..');
export const SCREENSHOT_DIR = path.join(REPO_ROOT, 'test-results/screenshots');

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

/** A browser the test files connect to over its websocket, so they share one process. */
export async function launchChromiumServer(): Promise<BrowserServer> {
  return chromium.launchServer({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

export async function connectChromium(wsEndpoint: string): Promise<Browser> {
  return chromium.connect(wsEndpoint);
}

/** A page whose console errors, uncaught exceptions and failed or 5xx requests are collected. */
export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  problems: string[];
}

export async function watchedPage(context: BrowserContext): Promise<WatchedPage> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()} (${msg.location().url})`);
  });
  page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
  page.on('requestfailed', (req) => {
    // A navigation away cancels the requests still in flight; that is not the page's fault.
    if (req.failure()?.errorText !== 'net::ERR_ABORTED') problems.push(`request failed: ${req.method()} ${req.url()} ${req.failure()?.errorText}`);
  });
  page.on('response', (res) => {
    if (res.status() >= 500) problems.push(`${res.status()} from ${res.request().method()} ${res.url()}`);
  });
  return { page, context, problems };
}

/** Signs the context in through the API (the cookie lands in the context's jar, as a form post would). */
export async function signInContext(context: BrowserContext, baseUrl: string, token: string): Promise<{ csrfToken: string }> {
  const res = await context.request.post(`${baseUrl}/v1/session`, { data: { token }, headers: { origin: baseUrl } });
  if (res.status() !== 200) throw new Error(`POST /v1/session: ${res.status()} ${await res.text()}`);
  return (await res.json()) as { csrfToken: string };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * axe-core's serious and critical violations on the page as it is now. The source goes in through
 * the DevTools protocol (page.evaluate), which the page's CSP does not govern, so the page is
 * checked with its real CSP on.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const result = await axe.run((globalThis as unknown as PageGlobals).document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map((n) => n.target.map(String).join(' ')) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Widths the page content takes beyond the viewport (0 when nothing overflows horizontally). */
export async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => {
    const root = (globalThis as unknown as PageGlobals).document.documentElement;
    return root.scrollWidth - root.clientWidth;
  });
}
