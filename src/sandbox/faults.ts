/**
 * Fault injection for the sandbox: what the tests and the benchmark use to prove the client and
 * the uploader survive a misbehaving platform. Rules hit the user-batch endpoints unless they
 * say `all` (every ads API request). Deterministic: rules by schedule name request numbers
 * (1-based, arrival order, counting only the requests the rule applies to), rules by rate draw
 * from a seeded PRNG.
 */
import { ConfigError } from '../errors.js';
import type { SandboxErrorCode } from './errors.js';

export const SANDBOX_FAULT_KINDS = ['500', '503', '429', 'drop', 'slow', 'mismatch', 'html'] as const;
export type SandboxFaultKind = (typeof SANDBOX_FAULT_KINDS)[number];

export const SANDBOX_FAULT_ROUTES = ['users', 'all'] as const;
/** `users`: the user-batch requests; `all`: every ads API request (the OAuth endpoints never fault). */
export type SandboxFaultRoute = (typeof SANDBOX_FAULT_ROUTES)[number];

/** One fault rule: exactly one of `on` (request numbers) or `rate` (probability 0..1) is set. */
export interface FaultRule {
  kind: SandboxFaultKind;
  /** 503: retry-after seconds (default 1); slow: milliseconds before answering (default 1000). */
  arg?: number;
  on?: number[];
  rate?: number;
  /** Which requests the rule hits and counts (default `users`); `mismatch` only affects user batches. */
  route?: SandboxFaultRoute;
}

const ARG_KINDS: Partial<Record<SandboxFaultKind, { name: string; fallback: number }>> = {
  '503': { name: 'retry-after seconds', fallback: 1 },
  slow: { name: 'milliseconds', fallback: 1000 },
};

const SPEC_FIX =
  'Write kind[=arg]@N[+N...] or kind[=arg]%P, optionally followed by :all (every ads request; default :users, the user batches), comma-separated, e.g. "503=1@2,drop@4,mismatch%0.01,500@1:all"; kinds: ' +
  SANDBOX_FAULT_KINDS.join(', ');

const ITEM_RE = /^([a-z0-9]+)(?:=([^@%:]*))?(?:@([^%:]*)|%([^:]*))?(?::(.*))?$/;
const UINT_RE = /^\d+$/;
const RATE_RE = /^(?:0|1|0?\.\d+|1\.0*)$/;

function specError(position: number, item: string, why: string): ConfigError<SandboxErrorCode> {
  return new ConfigError<SandboxErrorCode>(
    'sandbox_fault_spec_invalid',
    `Fault spec item ${position} "${item}": ${why}`,
    {
      fix: SPEC_FIX,
    },
  );
}

function isRoute(route: string): route is SandboxFaultRoute {
  return (SANDBOX_FAULT_ROUTES as readonly string[]).includes(route);
}

/** Parses a fault spec (the `faults` option as text), e.g. `503=1@2,drop@4,mismatch%0.01,500@1:all`. An empty spec means no faults. */
export function parseFaultSpec(spec: string): FaultRule[] {
  const rules: FaultRule[] = [];
  const items = spec.split(',').map((s) => s.trim());
  if (items.length === 1 && items[0] === '') return rules;
  items.forEach((item, i) => {
    const position = i + 1;
    const m = ITEM_RE.exec(item);
    if (m === null) throw specError(position, item, 'not of the form kind[=arg]@N[:route] or kind[=arg]%P[:route]');
    const [, kindText = '', argText, onText, rateText, routeText] = m;
    if (!(SANDBOX_FAULT_KINDS as readonly string[]).includes(kindText)) {
      throw specError(position, item, `unknown kind "${kindText}"; allowed: ${SANDBOX_FAULT_KINDS.join(', ')}`);
    }
    const kind = kindText as SandboxFaultKind;
    const rule: FaultRule = { kind };
    if (argText !== undefined) {
      const argKind = ARG_KINDS[kind];
      if (argKind === undefined) throw specError(position, item, `kind ${kind} takes no =arg (only 503 and slow do)`);
      if (!UINT_RE.test(argText)) throw specError(position, item, `=arg must be a whole number of ${argKind.name}`);
      rule.arg = Number(argText);
    }
    if (onText !== undefined) {
      const parts = onText.split('+');
      if (!parts.every((p) => UINT_RE.test(p) && Number(p) >= 1)) {
        throw specError(position, item, '@ must be followed by request numbers >= 1 joined by +, e.g. @2+5');
      }
      rule.on = parts.map(Number);
    } else if (rateText !== undefined) {
      if (!RATE_RE.test(rateText))
        throw specError(position, item, '% must be followed by a probability from 0 to 1, e.g. %0.05');
      rule.rate = Number(rateText);
    } else {
      throw specError(position, item, 'needs @N (which requests) or %P (probability 0..1)');
    }
    if (routeText !== undefined) {
      if (!isRoute(routeText))
        throw specError(position, item, `unknown route "${routeText}"; allowed: ${SANDBOX_FAULT_ROUTES.join(', ')}`);
      rule.route = routeText;
    }
    rules.push(rule);
  });
  return rules;
}

/** Validates rules given as objects (library callers) with the same rules as the spec syntax. */
export function checkFaultRules(rules: readonly FaultRule[]): FaultRule[] {
  return rules.map((r, i) => {
    const position = i + 1;
    const item = JSON.stringify(r);
    if (!(SANDBOX_FAULT_KINDS as readonly string[]).includes(r.kind)) {
      throw specError(position, item, `unknown kind; allowed: ${SANDBOX_FAULT_KINDS.join(', ')}`);
    }
    if ((r.on === undefined) === (r.rate === undefined))
      throw specError(position, item, 'set exactly one of on or rate');
    if (r.on !== undefined && !r.on.every((n) => Number.isInteger(n) && n >= 1)) {
      throw specError(position, item, 'on must hold request numbers >= 1');
    }
    if (r.rate !== undefined && !(r.rate >= 0 && r.rate <= 1)) throw specError(position, item, 'rate must be 0..1');
    if (r.arg !== undefined && (ARG_KINDS[r.kind] === undefined || !Number.isInteger(r.arg) || r.arg < 0)) {
      throw specError(position, item, 'arg is a whole number, only for 503 and slow');
    }
    if (r.route !== undefined && !isRoute(r.route))
      throw specError(position, item, `route must be one of ${SANDBOX_FAULT_ROUTES.join(', ')}`);
    return { ...r };
  });
}

/** mulberry32: tiny, fast, good enough for reproducible test randomness (not for secrets). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ChosenFault {
  kind: SandboxFaultKind;
  /** Resolved argument (defaults applied) for 503 and slow. */
  arg: number;
}

/** Decides, request by request, which fault (if any) to inject. */
export class FaultPlan {
  /** Requests seen, per route: request numbers of a rule count only the requests it applies to. */
  private readonly count: Record<SandboxFaultRoute, number> = { users: 0, all: 0 };
  constructor(
    private readonly rules: readonly FaultRule[],
    private readonly random: () => number,
  ) {}

  /** Call once per ads API request that passed authentication and rate limits, in arrival order. */
  next(userBatch: boolean): ChosenFault | undefined {
    this.count.all += 1;
    if (userBatch) this.count.users += 1;
    let chosen: FaultRule | undefined;
    for (const rule of this.rules) {
      const route = rule.route ?? 'users';
      // A rule draws only on requests it applies to: list or get calls never shift a users rule's random stream.
      if (route === 'users' && !userBatch) continue;
      if (rule.on !== undefined) {
        if (chosen === undefined && rule.on.includes(this.count[route])) chosen = rule;
      } else if (rule.rate !== undefined) {
        // Always draw, so one rule's outcome never shifts the random stream of the others.
        const hit = this.random() < rule.rate;
        if (chosen === undefined && hit) chosen = rule;
      }
    }
    if (chosen === undefined) return undefined;
    return { kind: chosen.kind, arg: chosen.arg ?? ARG_KINDS[chosen.kind]?.fallback ?? 0 };
  }
}
