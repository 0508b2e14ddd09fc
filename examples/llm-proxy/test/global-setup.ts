// Redis for the Redis variants of the tests (skipped loudly without a redis-server binary,
// failing under CI).
export { default } from '@sluice/example-keyed-stores/global-setup'
