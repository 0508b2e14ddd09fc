// Redis for the Redis variants of the tests, while they are switched on.
export { default } from '@sluice/example-keyed-stores/global-setup'
