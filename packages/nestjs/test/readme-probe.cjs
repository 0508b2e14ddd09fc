// What the README's app answers once started (see run-block.cjs): on the Express app its
// bootstrap() started, and on Fastify as the README says to make it (a FastifyAdapter
// trusting one proxy). Two clients come through one proxy, so X-Forwarded-For tells them
// apart only where the proxy is trusted.
const { NestFactory } = require('@nestjs/core')
const { FastifyAdapter } = require('@nestjs/platform-fastify')

async function answers(url) {
  const ask = async (method, path, client = '203.0.113.7') => {
    const res = await fetch(`${url}${path}`, { method, headers: { 'x-forwarded-for': client } })
    return {
      status: res.status,
      body: await res.text(),
      policy: res.headers.get('ratelimit-policy'),
      // Without `t`, which depends on the wall clock (a sliding window's slots).
      ratelimit: res.headers.get('ratelimit')?.replace(/;t=\d+$/, '') ?? null,
      retryAfter: res.headers.get('retry-after'),
    }
  }
  const hello = await ask('GET', '/')
  const other = await ask('GET', '/', '203.0.113.8')
  const logins = []
  for (let i = 0; i < 8; i++) logins.push(await ask('POST', '/login'))
  return {
    hello,
    otherClient: other.ratelimit,
    logins: logins.map((r) => r.status),
    lastLogin: logins[7].retryAfter,
    report: (await ask('GET', '/report')).body,
    health: await ask('GET', '/health'),
  }
}

module.exports = async ({ exported, url }) => {
  const express = await answers(url)
  const app = await NestFactory.create(exported.AppModule, new FastifyAdapter({ trustProxy: 1 }), {
    logger: false,
  })
  await app.listen(0, '127.0.0.1')
  const fastify = await answers(await app.getUrl())
  await app.close()
  return { express, fastify }
}
