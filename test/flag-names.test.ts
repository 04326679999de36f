/**
 * Library errors name library options; the CLI prints them with its flags and variables
 * (src/cli/flag-names.ts). Real errors from the library, reworded as reportError does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { flagNames, withFlagNames } from '../src/cli/flag-names.js';
import { parseStateUrl } from '../src/state/open-store.js';
import { fixForStatus } from '../src/api/parse-error.js';
import { AudienceKitError, ConfigError } from '../src/errors.js';
import { createClient, type ClientOptions } from '../src/api/client.js';
import { resolveMapping } from '../src/identifiers/mapping.js';
import { parseRemovalCap } from '../src/upload/sync-plan.js';

function thrown(f: () => unknown): AudienceKitError {
  try {
    f();
  } catch (error) {
    if (error instanceof AudienceKitError) return error;
    throw error;
  }
  throw new Error('expected an AudienceKitError');
}

const SECRETS = { consumerKey: 'k', consumerSecret: 's', accessToken: 't', accessTokenSecret: 'u' };

describe('withFlagNames', () => {
  it('turns client options into the variables and flags the CLI reads', () => {
    const noUrl = withFlagNames(thrown(() => createClient({ credentials: SECRETS } as unknown as ClientOptions)));
    expect(noUrl.message).toBe('Invalid client configuration: AUDIENCE_KIT_ADS_BASE_URL (--base-url) is missing');
    expect(noUrl.fix).toMatch(/^Set AUDIENCE_KIT_ADS_BASE_URL \(--base-url\) to the platform's origin/);
    const { consumerSecret: _dropped, ...rest } = SECRETS;
    const noSecret = withFlagNames(
      thrown(() => createClient({ adsBaseUrl: 'https://ads.example.com', credentials: rest } as ClientOptions)),
    );
    expect(noSecret.message).toContain('AUDIENCE_KIT_CONSUMER_SECRET is missing');
    expect(noSecret.fix).toBe('Set the four AUDIENCE_KIT_* credential variables (or run `audience-kit auth login`)');
    // The fix of a 401 (an AuthError's; only the fix is reworded here).
    const unauthorized = withFlagNames(new ConfigError('invalid_option', 'x', { fix: fixForStatus(401, false) }));
    expect(unauthorized.fix).toContain('(AUDIENCE_KIT_CONSUMER_KEY, AUDIENCE_KIT_CONSUMER_SECRET,');
    expect(unauthorized.fix).toContain('or run `audience-kit auth login`');
  });

  it('turns mapping, sync and journal options into flags', () => {
    const header = ['Email', 'Phone'];
    expect(withFlagNames(thrown(() => resolveMapping(header, { map: ['email'] }))).message).toBe(
      '--map "email" is not type=Column Name',
    );
    expect(withFlagNames(thrown(() => resolveMapping(header, { countryColumn: 'Land' }))).message).toBe(
      '--country-column: no column "Land" in the header',
    );
    expect(withFlagNames(thrown(() => resolveMapping(header, { onlyMapped: true }))).message).toBe(
      '--only-mapped needs at least one --map type=Column',
    );
    expect(withFlagNames(thrown(() => parseRemovalCap('lots'))).fix).toBe(
      'pass --max-removals 500 or --max-removals 5%, or omit it for 10% of the snapshot',
    );
    const journal = withFlagNames(
      new ConfigError('invalid_option', 'x', {
        fix: "pass unfinished: 'resume' to continue it, or unfinished: 'restart'",
      }),
    );
    expect(journal.fix).toBe('pass --resume to continue it, or --restart');
  });

  it('every message of src/ reads right reworded, once or twice: no flag next to itself (--state-dir / --state-dir)', () => {
    const texts = sourceStrings();
    expect(texts.length).toBeGreaterThan(1000);
    const doubled = /(--[a-z][a-z-]*)(?: \/ | or |, | \()\1(?![\w-])/;
    expect(texts.map(flagNames).filter((t) => doubled.test(t))).toEqual([]);
    // reportError rewords what a command reworded already: the second pass changes nothing.
    expect(texts.filter((t) => flagNames(flagNames(t)) !== flagNames(t))).toEqual([]);
    expect(withFlagNames(withFlagNames(new ConfigError('invalid_option', 'concurrency must be 1..64'))).message).toBe(
      '--concurrency must be 1..64',
    );
    expect(withFlagNames(thrown(() => parseStateUrl('mysql://x', '--state'))).fix).toBe(
      'pass a postgres:// or postgresql:// URL (a state directory is given with --state-dir)',
    );
  });
});

/** Every one-line string literal and template text of src/ (what messages and fixes are made of). */
function sourceStrings(): string[] {
  const root = fileURLToPath(new URL('../src/', import.meta.url));
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const literal = /'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g;
  return files.flatMap((f) => readFileSync(join(root, f), 'utf8').match(literal) ?? []);
}
