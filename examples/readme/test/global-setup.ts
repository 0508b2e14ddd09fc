// README blocks that use Redis talk to the same throw-away redis-server the @sluice/redis
// tests start (skipped loudly without a redis-server binary, failing under CI).
export { default } from '../../../packages/redis/test/global-setup'
