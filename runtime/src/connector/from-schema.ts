// A JSON Schema → TypeScript type mapping for schemas written as `as const` literals (connector configs, the
// plane's catalog), so the type of a validated value comes from its schema and cannot drift from it (issue 19.2).
// It covers what those schemas use: objects (required vs optional properties; `additionalProperties` maps),
// oneOf/anyOf unions (discriminated by a `const`), const, enum, arrays, the simple types, and local references
// `#/$defs/<name>` (resolved against the root schema). An object or array the schema says nothing more of is a
// JsonObject or JsonValue[]; anything unconstrained is a JsonValue (validated input is JSON).
import type { JsonObject, JsonValue } from '../protocol/specs.ts';

/** What FromSchema is told about validation: `defaults: true` when it applies `default`s (the runtime's ConfigValidator). */
export interface FromSchemaOptions { defaults?: boolean }

type Simple<T> = T extends 'string' ? string : T extends 'integer' | 'number' ? number : T extends 'boolean' ? boolean
  : T extends 'null' ? null : T extends 'array' ? JsonValue[] : T extends 'object' ? JsonObject : JsonValue;

type RequiredKeys<S> = S extends { required: readonly (infer R)[] } ? R : never;
/** Properties present after validation: the required ones, and with defaults applied those that have a default. */
type PresentKeys<S, P, D extends boolean> = RequiredKeys<S> | (D extends true ? { [K in keyof P]: P[K] extends { default: unknown } ? K : never }[keyof P] : never);

type Props<P, Present, Root, D extends boolean> = { -readonly [K in keyof P as K extends Present ? K : never]: Resolve<P[K], Root, D> }
  & { -readonly [K in keyof P as K extends Present ? never : K]?: Resolve<P[K], Root, D> };

type Flatten<T> = T extends object ? { [K in keyof T]: T[K] } : T;

type Ref<N, Root, D extends boolean> = Root extends { $defs: infer Defs } ? N extends keyof Defs ? Resolve<Defs[N], Root, D> : JsonValue : JsonValue;

// ajv applies no default inside oneOf/anyOf branches: their properties stay optional.
type Resolve<S, Root, D extends boolean> =
  S extends { $ref: `#/$defs/${infer N}` } ? Ref<N, Root, D>
    : S extends { const: infer C } ? C
      : S extends { enum: readonly (infer E)[] } ? E
        : S extends { oneOf: readonly (infer B)[] } ? Resolve<B, Root, false>
          : S extends { anyOf: readonly (infer B)[] } ? Resolve<B, Root, false>
            : S extends { type: 'object'; properties: infer P } ? Flatten<Props<P, PresentKeys<S, P, D>, Root, D>>
              : S extends { type: 'object'; additionalProperties: infer A extends object } ? Record<string, Resolve<A, Root, D>>
                : S extends { type: 'array'; items: infer I } ? Resolve<I, Root, D>[]
                  : S extends { type: readonly (infer T)[] } ? Simple<T>
                    : S extends { type: infer T } ? Simple<T>
                      : JsonValue;

/**
 * The TypeScript type of values valid against the JSON Schema literal `S` (distributes over oneOf/anyOf
 * branches). With `{ defaults: true }`, properties that have a `default` are present (the validator applied it).
 */
export type FromSchema<S, O extends FromSchemaOptions = FromSchemaOptions> = Resolve<S, S, O extends { defaults: true } ? true : false>;

/** The type of `#/$defs/<N>` of the root schema `Root` (its references resolved against `Root`). */
export type FromSchemaDef<Root, N extends string, O extends FromSchemaOptions = FromSchemaOptions> = Ref<N, Root, O extends { defaults: true } ? true : false>;
