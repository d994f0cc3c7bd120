// Kubernetes object name rules.

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', at most 253 characters. */
export function isDns1123Subdomain(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 253 && DNS1123_SUBDOMAIN.test(value);
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A DNS-1123 label (what a namespace name is): at most 63 characters, no dots. */
export function isDns1123Label(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 63 && DNS1123_LABEL.test(value);
}
