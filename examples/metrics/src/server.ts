import { createMetricsApp } from './app'

const port = Number(process.env.PORT ?? 3000)
const { app, shutdown } = createMetricsApp()
const server = app.listen(port, () => {
  console.log(`metrics example on http://localhost:${port} (Prometheus: /metrics)`)
})
process.once('SIGINT', () => {
  server.close()
  void shutdown()
})
