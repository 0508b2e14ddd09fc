import { createRequire } from 'node:module'
import { Reflector } from '@nestjs/core'
import { SluiceGuard } from '@sluice/nestjs'
import { describe, expect, it } from 'vitest'

const require = createRequire(import.meta.url)
const version = (name: string) => (require(`${name}/package.json`) as { version: string }).version

describe('this run', () => {
  it('is on NestJS 10, Express 4 and Fastify 4', () => {
    expect(version('@nestjs/core')).toMatch(/^10\./)
    const express = require.resolve('express', {
      paths: [require.resolve('@nestjs/platform-express')],
    })
    const fastify = require.resolve('fastify', {
      paths: [require.resolve('@nestjs/platform-fastify')],
    })
    expect(createRequire(express)('./package.json').version).toMatch(/^4\./)
    expect(createRequire(fastify)('./package.json').version).toMatch(/^4\./)
  })

  it("gives @sluice/nestjs's source NestJS 10's classes", () => {
    // SluiceGuard's @Inject(Reflector) names the Reflector its source imported.
    const injected = Reflect.getMetadata('self:paramtypes', SluiceGuard) as { param: unknown }[]
    expect(injected.map(({ param }) => param)).toContain(Reflector)
  })
})
