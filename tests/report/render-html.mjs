// Opens a fabric-report html page from its file in headless Chromium
// (Debian's /usr/bin/chromium, driven by playwright-core), offline, and
// prints what the html test asserts as one JSON object: console errors,
// page errors, every request the page made, each <svg>'s bounding box.
// Saves a full-page screenshot. Exit 3 when Chromium does not start.
// usage: node render-html.mjs PAGE.html SHOT.png
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [page_path, shot] = process.argv.slice(2);
const url = pathToFileURL(path.resolve(page_path)).href;

let browser;
try {
  browser = await chromium.launch({
    executablePath: process.env.FB_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    timeout: 60000,
  });
} catch (e) {
  console.error(`chromium did not start: ${String(e.message).split('\n')[0]}`);
  process.exit(3);
}
const context = await browser.newContext({ offline: true, viewport: { width: 1200, height: 900 } });
const page = await context.newPage();
const out = { console_errors: [], page_errors: [], requests: [], svgs: [] };
page.on('console', (m) => { if (m.type() === 'error') out.console_errors.push(m.text()); });
page.on('pageerror', (e) => out.page_errors.push(String(e)));
page.on('request', (r) => out.requests.push(r.url()));
// Anything but the page itself is refused, so a stray reference cannot
// reach a network even where one exists.
await page.route('**/*', (r) => (r.request().url() === url ? r.continue() : r.abort()));
await page.goto(url, { waitUntil: 'load', timeout: 60000 });
out.title = await page.title();
out.svgs = await page.$$eval('svg', (els) => els.map((e) => {
  const b = e.getBoundingClientRect();
  return { width: b.width, height: b.height };
}));
out.script_elements = await page.$$eval('script', (els) => els.length);
await page.screenshot({ path: shot, fullPage: true });
await browser.close();
console.log(JSON.stringify(out));
