// Redis for the Redis variants of the tests, while they are switched on.
export { default } from '../src/global-setup'
