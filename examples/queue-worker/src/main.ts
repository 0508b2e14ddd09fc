import { createWorker, type Job } from './worker'

// A stand-in for the model: answers are as long as the job allows, one in three twice that.
const worker = createWorker({
  run: async (job) => ({
    totalTokens:
      job.promptTokens + job.maxOutputTokens * (Number(job.id.split('-')[1]) % 3 === 0 ? 2 : 1),
  }),
})
const jobs: Job[] = ['acme', 'acme', 'acme', 'globex', 'acme', 'acme', 'acme'].map((tenant, i) => ({
  id: `${tenant}-${i + 1}`,
  tenant,
  prompt: 'summarise the quarterly report',
  promptTokens: 1200,
  maxOutputTokens: 800,
}))
for (const job of jobs) worker.add(job)
const next = await worker.runDue()
for (const event of worker.events) console.log(event)
console.log(next === undefined ? 'queue empty' : `next job due in ${next} ms`)
