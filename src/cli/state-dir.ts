/**
 * Where upload, sync and audit keep their state (journals, snapshots, the audit log) when
 * `--state-dir` is not given: a directory of the user's, the same whatever the working
 * directory, so a daily sync run from another directory still finds its target's snapshot.
 *
 * Before this default, the state lived in `.audience-kit` under the working directory. Such a
 * directory holding this command's state is used (with a notice) while the default has none,
 * rather than silently starting a fresh snapshot; a sync target whose snapshot is in both is
 * refused with a fix.
 */
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Options } from 'yargs';
import { ConfigError } from '../errors.js';
import { describeTarget, targetSnapshot } from '../upload/target.js';
import type { UploadTarget } from '../platform/targets.js';
import { parseStateUrl, type StateSpec } from '../state/open-store.js';
import type { CliContext } from './context.js';
import { writeLine } from './output.js';
import type { CliErrorCode } from './exit-codes.js';

export const STATE_DIR_ENV = 'AUDIENCE_KIT_STATE_DIR';
export const STATE_URL_ENV = 'AUDIENCE_KIT_STATE_URL';

/** `--state URL`: the PostgreSQL store instead of a state directory. */
export const STATE_URL_OPTION: Options = {
  type: 'string',
  requiresArg: true,
  describe: `PostgreSQL state store instead of a directory: postgres://user@host:5432/db (or $${STATE_URL_ENV}); not with --state-dir`,
};
/** The working-directory state of earlier versions. */
const LEGACY_STATE_DIR = '.audience-kit';

const present = (v: string | undefined): string | undefined => (v === undefined || v.trim() === '' ? undefined : v);

/**
 * `$AUDIENCE_KIT_STATE_DIR` (relative: to the working directory), else `%LOCALAPPDATA%\audience-kit`
 * on Windows, else `$XDG_STATE_HOME/audience-kit`, else `~/.local/state/audience-kit`.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv, cwd: string, platform = process.platform): string {
  const explicit = present(env[STATE_DIR_ENV]);
  if (explicit !== undefined) return resolve(cwd, explicit);
  const localAppData = present(env.LOCALAPPDATA);
  if (platform === 'win32' && localAppData !== undefined) return join(localAppData, 'audience-kit');
  const xdg = present(env.XDG_STATE_HOME);
  const home = present(env.HOME) ?? homedir();
  return join(xdg ?? join(home, '.local', 'state'), 'audience-kit');
}

export interface StateDirChoice {
  dir: string;
  /** Set when the working directory's `.audience-kit` is used instead of the default. */
  notice?: string;
}

/** The sync target whose snapshot decides between the default and a legacy directory. */
export interface StateTarget {
  accountId: string;
  target: UploadTarget;
}

/**
 * The state directory of a command: `--state-dir` (relative to the working directory), else the
 * default, else the working directory's `.audience-kit` when it holds this command's state and
 * the default does not (see the module comment).
 */
export function chooseStateDir(
  env: NodeJS.ProcessEnv,
  cwd: string,
  given: string | undefined,
  sync?: StateTarget,
): StateDirChoice {
  if (given !== undefined) return { dir: resolve(cwd, given) };
  const dir = defaultStateDir(env, cwd);
  const legacy = resolve(cwd, LEGACY_STATE_DIR);
  if (present(env[STATE_DIR_ENV]) !== undefined || legacy === dir || !holdsState(legacy)) return { dir };
  const notice = `using ${legacy} (state kept in the working directory by an earlier version); the default state directory is now ${dir}: move its contents there, or pass --state-dir`;
  if (sync === undefined) return existsSync(dir) ? { dir } : { dir: legacy, notice };
  const inLegacy = existsSync(targetSnapshot(legacy, sync.accountId, describeTarget(sync.target)).dir);
  const inDefault = existsSync(targetSnapshot(dir, sync.accountId, describeTarget(sync.target)).dir);
  if (!inLegacy) return { dir };
  if (!inDefault) return { dir: legacy, notice };
  throw new ConfigError<CliErrorCode>(
    'state_dir_ambiguous',
    `both ${legacy} (an earlier version's default) and ${dir} hold a snapshot of this target`,
    {
      fix: `pass --state-dir with the one the last sync used (its audit.jsonl has the latest run), then remove the other`,
    },
  );
}

function holdsState(dir: string): boolean {
  try {
    return readdirSync(dir).some((f) => f === 'snapshots' || f === 'runs' || f === 'audit.jsonl');
  } catch {
    return false;
  }
}

/**
 * Choose the command's state directory once, at its entry: `args['state-dir']` becomes the
 * absolute directory used, and a notice says so on stderr when it is the legacy one.
 */
export function settleStateDir(
  ctx: CliContext,
  args: { 'state-dir'?: string | undefined },
  sync?: StateTarget,
): string {
  const choice = chooseStateDir(ctx.env, ctx.cwd, args['state-dir'], sync);
  if (choice.notice !== undefined) writeLine(ctx.stderr, `notice: ${choice.notice}`);
  args['state-dir'] = choice.dir;
  return choice.dir;
}

/**
 * The command's state store, chosen once at its entry: `--state URL`, else `--state-dir DIR`, else
 * `$AUDIENCE_KIT_STATE_URL`, else the state directory settleStateDir picks. Both a URL and a
 * directory given at the same level (two flags, two variables) is a usage error: which one holds
 * the snapshot cannot be guessed.
 */
export function settleState(
  ctx: CliContext,
  args: { state?: string | undefined; 'state-dir'?: string | undefined },
  sync?: StateTarget,
): StateSpec {
  const fix = 'pass one of them: --state for the PostgreSQL store, --state-dir for a directory';
  if (args.state !== undefined && args['state-dir'] !== undefined)
    throw new ConfigError('invalid_option', '--state and --state-dir both name a state store', { fix });
  if (args.state !== undefined) return parseStateUrl(args.state, '--state');
  const url = present(ctx.env[STATE_URL_ENV]);
  if (args['state-dir'] === undefined && url !== undefined) {
    if (present(ctx.env[STATE_DIR_ENV]) !== undefined)
      throw new ConfigError('invalid_option', `${STATE_URL_ENV} and ${STATE_DIR_ENV} both name a state store`, {
        fix: 'unset one of them, or pass --state or --state-dir',
      });
    return parseStateUrl(url, STATE_URL_ENV);
  }
  return { kind: 'directory', dir: settleStateDir(ctx, args, sync) };
}
