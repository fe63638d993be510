// Drives Chromium through the report site for tests/browser.rs: every page
// in the light and the dark colour scheme (or those `schemes` names); prints
// one JSON document of what it saw (console errors, failed or outside
// requests, links, marks per chart, regressions per kernel, flaky rows, each
// chart's tick labels and the drawn size of its golden line and noise band,
// the pull request cells, the page's text) for the Rust test to judge.
// Usage: node drive.js CONFIG.json  (site, screenshots, playwright, chromium;
// optional: schemes, follow_links (default true), shot_names: 'page' for
// PAGE.png instead of PAGE-SCHEME.png)
'use strict';
const fs = require('fs');
const path = require('path');
const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const { chromium } = require(config.playwright);

const PAGES = ['index.html', 'tests.html', 'bench.html', 'integrate.html', 'releases.html', 'speed.html'];

(async () => {
  const browser = await chromium.launch({ executablePath: config.chromium, headless: true });
  const out = { pages: {}, errors: [], requests: [], links: [] };
  const schemes = config.schemes || ['light', 'dark'];
  const followLinks = config.follow_links !== false;
  for (const scheme of schemes) {
    const context = await browser.newContext({ colorScheme: scheme, viewport: { width: 1280, height: 900 } });
    // Nothing may be fetched from outside the site's directory.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('file://')) return route.continue();
      out.requests.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') out.errors.push(`${scheme} console ${m.type()}: ${m.text()}`); });
    page.on('pageerror', (e) => out.errors.push(`${scheme} page error: ${e.message}`));
    page.on('requestfailed', (r) => out.errors.push(`${scheme} request failed: ${r.url()} ${r.failure() && r.failure().errorText}`));
    for (const name of PAGES) {
      const url = 'file://' + path.join(config.site, name);
      const response = await page.goto(url);
      const facts = await page.evaluate(() => {
        // The drawn size of the first element matching `selector` in `f`
        // (null when there is none): a line of one point is 0 by 0.
        const size = (f, selector) => {
          const e = f.querySelector(selector);
          if (!e) return null;
          const b = e.getBBox();
          return { width: b.width, height: b.height };
        };
        const texts = (f, selector) => [...f.querySelectorAll(selector)].map((t) => t.textContent);
        const charts = [...document.querySelectorAll('figure.chart')].map((f) => {
          const section = f.closest('section[data-kernel]');
          return {
            chart: f.dataset.chart,
            kernel: section ? section.dataset.kernel : null,
            test: f.dataset.test || null,
            marks: f.querySelectorAll('[data-point]').length,
            regressions: f.querySelectorAll('[data-verdict="regression"]').length,
            role: f.querySelector('svg').getAttribute('role'),
            label: f.querySelector('svg').getAttribute('aria-label'),
            title: (f.querySelector('svg > title') || {}).textContent || null,
            desc: (f.querySelector('svg > desc') || {}).textContent || null,
            axis_texts: f.querySelectorAll('svg text').length,
            y_ticks: texts(f, 'svg text.ytick'),
            x_ticks: texts(f, 'svg text.xtick'),
            golden: size(f, 'svg .golden'),
            band: size(f, 'svg .band'),
          };
        });
        return {
          title: document.title,
          h1: (document.querySelector('h1') || {}).textContent,
          background: getComputedStyle(document.body).backgroundColor,
          links: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
          ids: [...document.querySelectorAll('[id]')].map((e) => e.id),
          charts,
          flaky: [...document.querySelectorAll('tr[data-flaky]')].map((r) => r.dataset.flaky),
          scripts: document.querySelectorAll('script[src], link[rel=stylesheet]').length,
          pulls: [...document.querySelectorAll('td.pull')].map((td) => {
            const a = td.querySelector('a[href]');
            return { text: td.textContent, href: a ? a.getAttribute('href') : null };
          }),
          // Hover titles included: they are read too.
          text: document.body.textContent,
        };
      });
      facts.ok = response === null || response.ok();
      out.pages[`${scheme}/${name}`] = facts;
      fs.mkdirSync(config.screenshots, { recursive: true });
      const shot = config.shot_names === 'page' ? name.replace('.html', '') : `${name.replace('.html', '')}-${scheme}`;
      await page.screenshot({ path: path.join(config.screenshots, `${shot}.png`), fullPage: true });
    }
    // Follow every link between pages (and to anchors) once, in light.
    if (scheme === 'light' && followLinks) {
      for (const name of PAGES) {
        const hrefs = out.pages[`light/${name}`].links;
        for (const href of hrefs) {
          if (/^[a-z]+:/i.test(href)) { out.links.push({ from: name, href, external: true }); continue; }
          const [file, anchor] = href.split('#');
          const target = file === '' ? name : file;
          const url = 'file://' + path.join(config.site, target) + (anchor ? '#' + anchor : '');
          let ok = false;
          let h1 = null;
          try {
            const r = await page.goto(url);
            ok = r === null || r.ok();
            h1 = await page.evaluate((a) => {
              if (a && !document.getElementById(a)) return null;
              return (document.querySelector('h1') || {}).textContent || null;
            }, anchor || null);
          } catch (e) {
            ok = false;
          }
          out.links.push({ from: name, href, external: false, ok: ok && h1 !== null, h1 });
        }
      }
    }
    await context.close();
  }
  await browser.close();
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
