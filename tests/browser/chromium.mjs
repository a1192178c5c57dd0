// chromium.mjs — headless Debian chromium through npm playwright-core, as
// the browser specs (ui.spec.mjs, names.spec.mjs) and
// bench/explorer_load.mjs drive it: a fresh profile directory, one window
// size, the same flags. launch() → { ctx, page, close }; close() shuts the
// browser and removes the profile directory.
//
// env: WT_CHROMIUM (default /usr/bin/chromium), WT_PLAYWRIGHT (path of
//      playwright-core's index.js; else resolved from here)
import { createRequire } from 'module';
import fs from 'fs';
import os from 'os';
import path from 'path';

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.WT_PLAYWRIGHT || 'playwright-core');

export async function launch() {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wt-chromium-'));
  const close = async (ctx) => {
    if (ctx) await ctx.close();
    fs.rmSync(userDir, { recursive: true, force: true });
  };
  let ctx = null;
  try {
    // playwright passes the directory as --user-data-dir
    ctx = await chromium.launchPersistentContext(userDir, {
      executablePath: process.env.WT_CHROMIUM || '/usr/bin/chromium',
      headless: true,
      viewport: { width: 1500, height: 950 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
        '--disable-sync', '--no-first-run', '--disable-quic'],
    });
    const page = ctx.pages()[0] || await ctx.newPage();
    return { ctx, page, close: () => close(ctx) };
  } catch (e) {
    await close(ctx);
    throw e;
  }
}
