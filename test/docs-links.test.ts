import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Every relative link and #anchor in README.md and docs/*.md must resolve: pages were split from one
// README and are edited by several people, so a renamed heading or moved section breaks links silently.

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pages = [
  'README.md',
  'examples/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The page's text with fenced code blocks and inline code spans blanked (links inside them are not links). */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '``');
}

/** GitHub's heading anchors: lowercase, punctuation dropped, spaces to hyphens, duplicates suffixed -1, -2, … */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const withoutFences = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const match of withoutFences.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const slug = (match[1] ?? '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  for (const match of withoutFences.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(match[1] ?? '');
  return anchors;
}

function linksOf(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1] ?? '');
}

describe('docs links', () => {
  it.each(pages)('%s: every relative link and anchor resolves', (page) => {
    const broken: string[] = [];
    for (const link of linksOf(readFileSync(join(root, page), 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
      const [pathPart = '', anchor] = link.split('#', 2);
      const target = pathPart === '' ? join(root, page) : resolve(dirname(join(root, page)), pathPart);
      if (!existsSync(target)) {
        broken.push(`${link} (no file ${relative(root, target)})`);
        continue;
      }
      if (anchor === undefined) continue;
      if (statSync(target).isDirectory() || !target.endsWith('.md')) {
        broken.push(`${link} (anchor into a non-markdown target)`);
      } else if (!anchorsOf(readFileSync(target, 'utf8')).has(decodeURIComponent(anchor))) {
        broken.push(`${link} (no heading #${anchor} in ${relative(root, target)})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it.each(pages)('%s: every src/, test/ and examples/ path it names exists', (page) => {
    const named = readFileSync(join(root, page), 'utf8').matchAll(/`((?:src|test|examples)\/[\w./-]*\w)`/g);
    const missing = [...named]
      .map((m) => m[1] ?? '')
      .filter((p) => !p.startsWith('test/bench/data') && !existsSync(join(root, p)));
    expect(missing).toEqual([]);
  });
});
