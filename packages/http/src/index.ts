export type * from './store'
