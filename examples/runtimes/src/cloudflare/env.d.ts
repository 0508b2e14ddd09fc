// The Worker's bindings, as `wrangler types` would declare them.
declare module 'cloudflare:workers' {
  export const env: { SLUICE: import('@sluice/cloudflare').DurableObjectNamespaceLike }
}
