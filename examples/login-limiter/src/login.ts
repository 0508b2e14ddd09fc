import { type KeyedLimiter, keyedLimiter, memoryStore, type Store } from '@sluice/keyed'
import type { Request, Response } from 'express'
import { authorise } from './users'

const maxWrongAttemptsByIPperDay = 100
const maxConsecutiveFailsByUsernameAndIP = 10
const blockByIPMs = 24 * 60 * 60 * 1000
const blockByUsernameAndIPMs = 60 * 60 * 1000

/** Options of {@link loginRoute}. */
export interface LoginRouteOptions {
  /** Where the failures are counted. Default: a `memoryStore()`; a `redisStore()` across processes. */
  store?: Store
}

/**
 * `POST /login` protected against password guessing, as rate-limiter-flexible's wiki
 * protects it ("Overall example", login endpoint protection), on `keyedLimiter`:
 *
 * - wrong passwords are counted by username+IP (for accounts that exist) and by IP;
 * - a key that already failed too often is refused with 429 and `Retry-After` before its
 *   password is even checked;
 * - the failure that goes over a limit blocks its key: username+IP for an hour, the IP
 *   for a day (429);
 * - a successful login forgets the username+IP failures.
 *
 * @example
 * ```ts
 * loginApp(loginRoute({ store: redisStore({ client }) })).listen(3000)
 * ```
 */
export function loginRoute(options: LoginRouteOptions = {}) {
  const store = options.store ?? memoryStore()
  // rate-limiter-flexible refuses once *more* than `points` were consumed: a key that has
  // failed 10 times may still try, and the 11th failure blocks it. A sluice limit is what
  // may be taken, so each holds one more than the failures allowed, and the failure that
  // takes the last permit is the one that blocks.
  const failsByIP = keyedLimiter({
    name: 'login-fails-by-ip-per-day',
    limit: maxWrongAttemptsByIPperDay + 1,
    window: '1d',
    store,
  })
  const failsByUsernameAndIP = keyedLimiter({
    name: 'login-fails-by-username-and-ip',
    limit: maxConsecutiveFailsByUsernameAndIP + 1,
    window: '90d',
    store,
  })

  return async function login(req: Request, res: Response) {
    const ip = req.ip ?? ''
    const { email, password } = req.body as { email: string; password: string }
    const usernameIPkey = `${email}_${ip}`

    // Reads first: a blocked key costs no write.
    const [byUsernameAndIP, byIP] = await Promise.all([
      failsByUsernameAndIP.get(usernameIPkey),
      failsByIP.get(ip),
    ])
    const refused = !byIP.allowed ? byIP : !byUsernameAndIP.allowed ? byUsernameAndIP : undefined
    if (refused) return tooManyRequests(res, refused.retryAfterMs)

    const user = authorise(email, password)
    if (!user.isLoggedIn) {
      // One failure each: penalty() takes it whatever is left, and says what is left after.
      const [ipAfter, keyAfter] = await Promise.all([
        failsByIP.penalty(ip),
        user.exists ? failsByUsernameAndIP.penalty(usernameIPkey) : undefined,
      ])
      const blocked = await Promise.all([
        ipAfter.allowed ? 0 : blockAfresh(failsByIP, ip, blockByIPMs),
        keyAfter === undefined || keyAfter.allowed
          ? 0
          : blockAfresh(failsByUsernameAndIP, usernameIPkey, blockByUsernameAndIPMs),
      ])
      if (blocked[0] > 0 || blocked[1] > 0) return tooManyRequests(res, Math.max(...blocked))
      res.status(400).end('email or password is wrong')
      return
    }

    if (byUsernameAndIP.remaining < failsByUsernameAndIP.policies[0]!.limit) {
      // Reset on successful authorisation
      await failsByUsernameAndIP.delete(usernameIPkey)
    }
    res.end('authorized')
  }
}

/**
 * Blocks `key` for `ms`, its failures forgotten, so that it starts afresh once the block
 * is over (rate-limiter-flexible's block replaces the count the same way). Returns `ms`.
 */
async function blockAfresh(limiter: KeyedLimiter, key: string, ms: number): Promise<number> {
  await limiter.delete(key)
  await limiter.block(key, ms)
  return ms
}

function tooManyRequests(res: Response, retryAfterMs: number): void {
  // RFC 9110 §10.2.3: delay-seconds is a whole number, so round up.
  res.set('Retry-After', String(Math.ceil(retryAfterMs / 1000)))
  res.status(429).send('Too Many Requests')
}
