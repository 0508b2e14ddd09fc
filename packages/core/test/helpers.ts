/** Lets everything already due (promise callbacks, immediates) run, without moving any clock. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

export interface Tracked<T> {
  status: 'pending' | 'resolved' | 'rejected'
  value?: T
  reason?: unknown
}

/** Records how a promise settles, so a test can look without awaiting it. */
export function track<T>(promise: Promise<T>): Tracked<T> {
  const state: Tracked<T> = { status: 'pending' }
  promise.then(
    (value) => {
      state.status = 'resolved'
      state.value = value
    },
    (reason: unknown) => {
      state.status = 'rejected'
      state.reason = reason
    },
  )
  return state
}
