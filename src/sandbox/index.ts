/**
 * The embedded sandbox: a local stand-in for the ads platform (see server.ts). Exported names
 * are Sandbox-prefixed (or the contract's `FaultRule`/`parseFaultSpec`) so `export *` from the
 * package root never collides.
 */
export {
  startSandbox,
  DEFAULT_SANDBOX_RATE_LIMIT,
  DEFAULT_SANDBOX_TOTAL_COUNT_RATE_LIMIT,
  type Sandbox,
  type SandboxOptions,
  type SandboxCredentials,
  type SandboxAccounts,
} from './server.js';
export {
  parseFaultSpec,
  SANDBOX_FAULT_KINDS,
  SANDBOX_FAULT_ROUTES,
  type FaultRule,
  type SandboxFaultKind,
  type SandboxFaultRoute,
} from './faults.js';
export type { SandboxRateLimit } from './ratelimit.js';
export type {
  SandboxStateHandle,
  SandboxRequestLog,
  SandboxCampaignInput,
  SandboxLineItemInput,
  SandboxTargetingRecord,
  SandboxCustomAudience,
  SandboxDoNotReachList,
  SandboxPermission,
  SandboxPermissionLevel,
} from './state.js';
