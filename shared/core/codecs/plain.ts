// Small type guards shared by the core. Inputs may come straight from JSON or an event.

/** A non-null, non-array object whose prototype is Object.prototype or null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

export function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** An own property's value, or undefined; tolerant of junk containers. */
export function ownValue(container: unknown, key: string): unknown {
  if (typeof container !== 'object' || container === null) return undefined;
  return Object.prototype.hasOwnProperty.call(container, key)
    ? (container as Record<string, unknown>)[key]
    : undefined;
}
