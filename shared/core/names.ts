// Kubernetes object name rules.

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', at most 253 characters. */
export function isDns1123Subdomain(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 253 && DNS1123_SUBDOMAIN.test(value);
}
