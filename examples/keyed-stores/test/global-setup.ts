// Redis for the Redis variants of the tests (skipped loudly without a redis-server binary,
// failing under CI).
export { default } from '../src/global-setup'
