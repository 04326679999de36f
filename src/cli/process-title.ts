/**
 * The process list must not show a password given in a URL (`--state postgres://user:secret@…`):
 * `ps` and /proc/<pid>/cmdline read the process's argument area, which Node rewrites when
 * `process.title` is set. The command line is shown again with every URL's password removed, as
 * soon as the CLI starts (the arguments are visible in the instant before: a password is better
 * kept out of them, in AUDIENCE_KIT_STATE_URL, PGPASSWORD or ~/.pgpass).
 */

/**
 * `scheme://user:password@` and a `password=` or `sslpassword=` query parameter, in any argument. The user info
 * ends at the authority's last `@` and the password begins at its first `:`, as URL parsing (and
 * so `pg`) reads them: a raw `@` in the user (`admin@server`) or in the password is covered too.
 */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^/?#\s:]*):[^/?#\s]*@/gi;
const QUERY_PASSWORD = /([?&](?:ssl)?password=)[^&\s]*/gi;

/** The argument with the password of every URL in it removed. */
export function withoutPasswords(arg: string): string {
  return arg.replace(URL_PASSWORD, '$1@').replace(QUERY_PASSWORD, '$1');
}

/** Set the process title to the command line without passwords, when an argument holds one. */
export function hidePasswordsFromProcessList(argv: readonly string[]): void {
  const shown = argv.map(withoutPasswords);
  if (shown.every((arg, i) => arg === argv[i])) return;
  process.title = shown.join(' ');
}
