import { startApi } from './api'

const api = await startApi({ port: Number(process.env.PORT ?? 4000) })
console.log(`GraphQL on ${api.url}: 1000 points per x-api-key, 50 restored a second`)
