import { startChatServer } from './chat-server'

const chat = await startChatServer({ port: Number(process.env.PORT ?? 8080) })
console.log(
  `chat on ${chat.url}/?user=<name>: 5 messages at once per connection, then one a second; 30 a minute per user`,
)
