/** What a login attempt found out. */
export interface Authorisation {
  /** Whether the account exists: failures are counted per username only for real accounts. */
  exists: boolean
  isLoggedIn: boolean
}

/** The accounts of this example: one, with its password in plain text for brevity. */
const accounts = new Map([['ann@example.com', 'correct horse']])

/**
 * Checks a username and password. A real app compares a slow hash (argon2, bcrypt) of the
 * password with the stored one.
 *
 * @example
 * ```ts
 * authorise('ann@example.com', 'correct horse') // { exists: true, isLoggedIn: true }
 * ```
 */
export function authorise(email: string, password: string): Authorisation {
  const stored = accounts.get(email)
  return { exists: stored !== undefined, isLoggedIn: stored !== undefined && stored === password }
}
