// The byte writer's two nested shapes, so their rows are written from the pages as flat columns are
// (parquet-flat.ts) instead of through hyparquet's assembled objects, which held a whole row group's values
// (one JS array or object per row) and kept a nested file's peak RSS over 200 MB:
//   - a struct of leaves (`{"a":…,"b":…}`): one column per field, read in step; the struct is null when its
//     first field's definition level is below the struct's own;
//   - a list of one leaf (LIST-annotated, the three-level form or the legacy two-level one): one column whose
//     entries carry repetition levels (0 starts a row, 1 continues its list) and definition levels telling a
//     null list, an empty list, a null element and a value apart.
// The text is what parquet-json.ts's converters write for hyparquet's values of the same shape
// (test/parquet-nested.test.ts compares both on the same files). Other nested shapes (maps, lists of structs,
// structs holding lists, repeated fields without LIST) still go through hyparquet.
import type { LineSink } from './lines.ts';
import type { FlatColumn } from './parquet-flat.ts';

/** What writes one top-level column's value of each row into the sink. */
export interface ColumnWriter {
  write(sink: LineSink, where: string): void;
}

const NULL = new Uint8Array([0x6e, 0x75, 0x6c, 0x6c]);

function writeByte(sink: LineSink, b: number): void {
  sink.ensure(1);
  sink.buf[sink.len++] = b;
}

/** A struct whose fields are leaves: `{"a":…,"b":…}`, or null. */
export class StructWriter implements ColumnWriter {
  readonly #fields: { prefix: Uint8Array; column: FlatColumn }[];
  readonly #def: number;

  /**
   * `fields`: each field's column and the text before its value (`"name":`, with a comma after the first);
   * `def`: the struct's own definition level (0 when it and its parents are required: never null).
   */
  constructor(fields: { prefix: Uint8Array; column: FlatColumn }[], def: number) {
    if (fields.length === 0) throw new Error('a struct without fields has no column to read');
    this.#fields = fields;
    this.#def = def;
  }

  write(sink: LineSink, where: string): void {
    const fields = this.#fields;
    if ((fields[0] as (typeof fields)[number]).column.def(where) < this.#def) {
      for (const f of fields) {
        f.column.def(where);
        f.column.skip();
      }
      sink.writeShort(NULL);
      return;
    }
    writeByte(sink, 0x7b); // {
    for (const f of fields) {
      sink.writeShort(f.prefix);
      f.column.write(sink, where);
    }
    writeByte(sink, 0x7d); // }
  }
}

/** A list of one leaf: `[…]`, `[]` or null. */
export class ListWriter implements ColumnWriter {
  readonly #column: FlatColumn;
  readonly #listDef: number;
  readonly #entryDef: number;

  /**
   * `listDef`: the list's own definition level (below it the list is null); `entryDef`: its repeated node's
   * (below it, and at least listDef, the list is empty); at or above it each entry is an element (the
   * column writes null for a null element).
   */
  constructor(column: FlatColumn, listDef: number, entryDef: number) {
    this.#column = column;
    this.#listDef = listDef;
    this.#entryDef = entryDef;
  }

  write(sink: LineSink, where: string): void {
    const c = this.#column;
    const d = c.def(where);
    if (d < this.#listDef) {
      c.skip();
      sink.writeShort(NULL);
      return;
    }
    if (d < this.#entryDef) {
      c.skip();
      writeByte(sink, 0x5b); // [
      writeByte(sink, 0x5d); // ]
      return;
    }
    writeByte(sink, 0x5b);
    c.write(sink, where);
    while (c.rep() === 1) {
      writeByte(sink, 0x2c); // ,
      c.write(sink, where);
    }
    writeByte(sink, 0x5d);
  }
}
