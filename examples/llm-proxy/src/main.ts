import { startProxy } from './proxy'

const upstream = process.env.UPSTREAM_URL ?? 'https://api.openai.com'
const proxy = await startProxy({ upstream, port: Number(process.env.PORT ?? 8080) })
console.log(
  `Chat completions on ${proxy.url}/v1/chat/completions, passed to ${upstream}: per API key, 60 requests and 10,000 tokens a minute, 100,000 tokens a day`,
)
