/**
 * The global setup of every keyed-limiter example: the throw-away redis-server on a free
 * port that the @sluice/redis tests use. Without a redis-server binary the Redis variants
 * are skipped with a loud message, and the run fails under CI.
 */
export { default } from '../../../packages/redis/test/global-setup'
