// The same throw-away redis-server the @sluice/redis tests use (skipped loudly without a
// redis-server binary, failing under CI).
export { default } from '../../redis/test/global-setup'
