/**
 * The peer: rate-limiter-flexible's login endpoint protection, as its wiki's "Overall
 * example" gives it (failures counted by username+IP and by IP, each blocked once over
 * its limit, the username+IP count deleted on a successful login), with RateLimiterMemory
 * for RateLimiterRedis and TypeScript types. The test runs it beside the port.
 */
import type { Request, Response } from 'express'
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'
import { authorise } from '../src/users'

const maxWrongAttemptsByIPperDay = 100
const maxConsecutiveFailsByUsernameAndIP = 10

/** The wiki's `loginRoute`, with limiters of its own. */
export function rateLimiterFlexibleLoginRoute() {
  const limiterSlowBruteByIP = new RateLimiterMemory({
    keyPrefix: 'login_fail_ip_per_day',
    points: maxWrongAttemptsByIPperDay,
    duration: 60 * 60 * 24,
    blockDuration: 60 * 60 * 24, // Block for 1 day, if 100 wrong attempts per day
  })

  const limiterConsecutiveFailsByUsernameAndIP = new RateLimiterMemory({
    keyPrefix: 'login_fail_consecutive_username_and_ip',
    points: maxConsecutiveFailsByUsernameAndIP,
    // The wiki stores the number for 90 days (on Redis). RateLimiterMemory forgets a key
    // with a setTimeout, which Node fires at once past 2^31 - 1 ms (24.8 days): 90 days
    // would forget every failure as soon as it is counted, so the peer keeps 24.
    duration: 60 * 60 * 24 * 24,
    blockDuration: 60 * 60, // Block for 1 hour
  })

  const getUsernameIPkey = (username: string, ip: string) => `${username}_${ip}`

  return async function loginRoute(req: Request, res: Response) {
    const ipAddr = req.ip ?? ''
    const usernameIPkey = getUsernameIPkey(req.body.email, ipAddr)

    const [resUsernameAndIP, resSlowByIP] = await Promise.all([
      limiterConsecutiveFailsByUsernameAndIP.get(usernameIPkey),
      limiterSlowBruteByIP.get(ipAddr),
    ])

    let retrySecs = 0

    // Check if IP or Username + IP is already blocked
    if (resSlowByIP !== null && resSlowByIP.consumedPoints > maxWrongAttemptsByIPperDay) {
      retrySecs = Math.round(resSlowByIP.msBeforeNext / 1000) || 1
    } else if (
      resUsernameAndIP !== null &&
      resUsernameAndIP.consumedPoints > maxConsecutiveFailsByUsernameAndIP
    ) {
      retrySecs = Math.round(resUsernameAndIP.msBeforeNext / 1000) || 1
    }

    if (retrySecs > 0) {
      res.set('Retry-After', String(retrySecs))
      res.status(429).send('Too Many Requests')
    } else {
      const user = authorise(req.body.email, req.body.password)
      if (!user.isLoggedIn) {
        // Consume 1 point from limiters on wrong attempt and block if limits reached
        try {
          const promises = [limiterSlowBruteByIP.consume(ipAddr)]
          if (user.exists) {
            // Count failed attempts by Username + IP only for registered users
            promises.push(limiterConsecutiveFailsByUsernameAndIP.consume(usernameIPkey))
          }

          await Promise.all(promises)

          res.status(400).end('email or password is wrong')
        } catch (rlRejected) {
          if (!(rlRejected instanceof RateLimiterRes)) {
            throw rlRejected
          }
          res.set('Retry-After', String(Math.round(rlRejected.msBeforeNext / 1000)) || '1')
          res.status(429).send('Too Many Requests')
        }
      }

      if (user.isLoggedIn) {
        if (resUsernameAndIP !== null && resUsernameAndIP.consumedPoints > 0) {
          // Reset on successful authorisation
          await limiterConsecutiveFailsByUsernameAndIP.delete(usernameIPkey)
        }

        res.end('authorized')
      }
    }
  }
}
