import type { AddressInfo } from 'node:net'
import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
  UseFilters,
  UseGuards,
} from '@nestjs/common'
import { WsAdapter } from '@nestjs/platform-ws'
import { MessageBody, SubscribeMessage, WebSocketGateway, WsException } from '@nestjs/websockets'
import { ManualClock } from '@sluice/core'
import { listen } from '@sluice/http/testing'
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import {
  RateLimit,
  SkipRateLimit,
  SluiceGuard,
  SluiceModule,
  type SluiceModuleOptions,
} from '../src/index'
import { nestApp } from './app'

/** Sends a gateway's WsException to a `ws` client (Nest's default filter only emits it locally). */
@Catch(WsException)
class SendWsErrors implements ExceptionFilter {
  catch(exception: WsException, host: ArgumentsHost) {
    host
      .switchToWs()
      .getClient<WebSocket>()
      .send(JSON.stringify({ event: 'exception', data: exception.getError() }))
  }
}

@WebSocketGateway()
@UseGuards(SluiceGuard)
@UseFilters(SendWsErrors)
class ChatGateway {
  @SubscribeMessage('chat')
  chat(@MessageBody() text: string) {
    return { event: 'chat', data: text }
  }

  @RateLimit({ limit: 1, window: '1m' })
  @SubscribeMessage('shout')
  shout(@MessageBody() text: string) {
    return { event: 'shout', data: text.toUpperCase() }
  }

  @SkipRateLimit()
  @SubscribeMessage('ping')
  ping() {
    return { event: 'pong', data: null }
  }
}

/** A `ws` client that sends events and reads the answers in order. */
async function connect(port: number) {
  const socket = new WebSocket(`ws://127.0.0.1:${port}`)
  const answers: unknown[] = []
  const waiting: ((answer: unknown) => void)[] = []
  socket.on('message', (raw) => {
    const answer = JSON.parse(String(raw))
    const next = waiting.shift()
    if (next !== undefined) next(answer)
    else answers.push(answer)
  })
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
  return {
    socket,
    send(event: string, data: unknown) {
      socket.send(JSON.stringify({ event, data }))
      return new Promise<unknown>((resolve) => {
        const ready = answers.shift()
        if (ready !== undefined) resolve(ready)
        else waiting.push(resolve)
      })
    },
  }
}

async function gatewayApp(options: SluiceModuleOptions) {
  const app = await nestApp(
    'express',
    {
      imports: [SluiceModule.forRoot({ clock: new ManualClock(), ...options })],
      providers: [ChatGateway],
    },
    (app) => app.useWebSocketAdapter(new WsAdapter(app)),
  )
  await app.listen(0, '127.0.0.1')
  const { port } = app.getHttpServer().address() as AddressInfo
  return connect(port)
}

describe('SluiceGuard on a WebSocket gateway (@nestjs/platform-ws)', () => {
  it("takes the module's dryRun: counts, publishes, refuses nothing", async () => {
    const client = await gatewayApp({ limit: 1, window: '1m', dryRun: true })
    const events = listen<{ policy: string; allowed: boolean }>('sluice:rate-limit')
    try {
      expect(await client.send('chat', 'a')).toEqual({ event: 'chat', data: 'a' })
      expect(await client.send('chat', 'b')).toEqual({ event: 'chat', data: 'b' })
      expect(await client.send('chat', 'c')).toEqual({ event: 'chat', data: 'c' })
    } finally {
      events.stop()
      client.socket.close()
    }
    expect(events.events.map(({ policy, allowed }) => [policy, allowed])).toEqual([
      ['1-per-1m', true],
      ['1-per-1m', false],
      ['1-per-1m', false],
    ])
  })

  it("takes the module's block: a refused client waits out the block", async () => {
    const client = await gatewayApp({ limit: 1, window: '1m', block: { for: '1h' } })
    try {
      expect(await client.send('chat', 'a')).toEqual({ event: 'chat', data: 'a' })
      expect(await client.send('chat', 'b')).toEqual({
        event: 'exception',
        data: { status: 'error', message: 'Too Many Requests', retryAfterMs: 3_600_000 },
      })
    } finally {
      client.socket.close()
    }
  })

  it('limits messages per client with the keyed limiter, and skips and overrides per handler', async () => {
    const app = await nestApp(
      'express',
      {
        imports: [SluiceModule.forRoot({ limit: 2, window: '1m', clock: new ManualClock() })],
        providers: [ChatGateway],
      },
      (app) => app.useWebSocketAdapter(new WsAdapter(app)),
    )
    await app.listen(0, '127.0.0.1')
    const { port } = app.getHttpServer().address() as AddressInfo
    const client = await connect(port)
    try {
      expect(await client.send('chat', 'a')).toEqual({ event: 'chat', data: 'a' })
      expect(await client.send('chat', 'b')).toEqual({ event: 'chat', data: 'b' })
      expect(await client.send('chat', 'c')).toEqual({
        event: 'exception',
        data: { status: 'error', message: 'Too Many Requests', retryAfterMs: 66_000 },
      })
      expect(await client.send('ping', null)).toEqual({ event: 'pong', data: null })
      expect(await client.send('shout', 'hi')).toEqual({ event: 'shout', data: 'HI' })
      expect(await client.send('shout', 'again')).toMatchObject({ event: 'exception' })
    } finally {
      client.socket.close()
    }
  })
})
