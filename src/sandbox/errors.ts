/** Codes of the errors only the embedded sandbox throws (with the library's classes: `new ConfigError<SandboxErrorCode>(…)`). */
export const SANDBOX_ERROR_CODES = [
  'sandbox_fault_spec_invalid',
  'sandbox_listen_failed',
  'sandbox_option_invalid',
  'sandbox_unknown_account',
  'sandbox_unknown_audience',
  'sandbox_dnr_list_exists',
] as const;

export type SandboxErrorCode = (typeof SANDBOX_ERROR_CODES)[number];
