// A JSON Schema → TypeScript type mapping for the configuration schemas connectors write as `as const`
// literals, so the type of a validated config comes from its schema and cannot drift from it (issue 19.2).
// It covers what connector schemas use: objects (required vs optional properties), oneOf/anyOf unions (discriminated
// by a `const`), const, enum, arrays and the simple types. Unknown shapes map to `unknown`.

type Simple<T> = T extends 'string' ? string : T extends 'integer' | 'number' ? number : T extends 'boolean' ? boolean
  : T extends 'null' ? null : T extends 'array' ? unknown[] : T extends 'object' ? Record<string, unknown> : unknown;

type RequiredKeys<S> = S extends { required: readonly (infer R)[] } ? R : never;

type Props<P, R> = { -readonly [K in keyof P as K extends R ? K : never]: FromSchema<P[K]> }
  & { -readonly [K in keyof P as K extends R ? never : K]?: FromSchema<P[K]> };

type Flatten<T> = T extends object ? { [K in keyof T]: T[K] } : T;

/** The TypeScript type of values valid against the JSON Schema literal `S` (distributes over oneOf branches). */
export type FromSchema<S> =
  S extends { const: infer C } ? C
    : S extends { enum: readonly (infer E)[] } ? E
      : S extends { oneOf: readonly (infer B)[] } ? FromSchema<B>
        : S extends { anyOf: readonly (infer B)[] } ? FromSchema<B>
          : S extends { type: 'object'; properties: infer P } ? Flatten<Props<P, RequiredKeys<S>>>
            : S extends { type: 'array'; items: infer I } ? FromSchema<I>[]
              : S extends { type: readonly (infer T)[] } ? Simple<T>
                : S extends { type: infer T } ? Simple<T>
                  : unknown;
