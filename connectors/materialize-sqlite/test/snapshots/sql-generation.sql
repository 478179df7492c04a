--- all_types ---
CREATE TABLE IF NOT EXISTS all_types (
	id INTEGER NOT NULL,
	"_meta/op" TEXT NOT NULL,
	arr TEXT,
	bigint TEXT,
	bin BLOB,
	bool BOOLEAN NOT NULL,
	date TEXT,
	flow_published_at TEXT NOT NULL,
	int INTEGER,
	multi TEXT,
	num REAL,
	obj TEXT,
	str TEXT NOT NULL,
	"strInt" INTEGER,
	"strNum" REAL,
	ts TEXT,
	flow_document TEXT NOT NULL,
	PRIMARY KEY (id)
);
CREATE TEMP TABLE IF NOT EXISTS flow_temp_load_0 (id INTEGER);
DELETE FROM temp.flow_temp_load_0;
INSERT INTO all_types (id, "_meta/op", arr, bigint, bin, bool, date, flow_published_at, int, multi, num, obj, str, "strInt", "strNum", ts, flow_document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "_meta/op" = excluded."_meta/op", arr = excluded.arr, bigint = excluded.bigint, bin = excluded.bin, bool = excluded.bool, date = excluded.date, flow_published_at = excluded.flow_published_at, int = excluded.int, multi = excluded.multi, num = excluded.num, obj = excluded.obj, str = excluded.str, "strInt" = excluded."strInt", "strNum" = excluded."strNum", ts = excluded.ts, flow_document = excluded.flow_document;
INSERT INTO all_types (id, "_meta/op", arr, bigint, bin, bool, date, flow_published_at, int, multi, num, obj, str, "strInt", "strNum", ts, flow_document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
DELETE FROM all_types WHERE id = ?;
DELETE FROM all_types;
DROP TABLE IF EXISTS all_types;
SELECT name AS column_name, type AS data_type, CASE WHEN "notnull" = 1 THEN 'NO' ELSE 'YES' END AS is_nullable, NULL AS character_maximum_length, NULL AS numeric_precision, NULL AS numeric_scale, NULL AS datetime_precision, NULL AS collation_name, pk AS is_primary_key FROM pragma_table_info('all_types', 'main') ORDER BY cid;
ALTER TABLE all_types ADD COLUMN "_meta/op" TEXT;
ALTER TABLE all_types ADD COLUMN arr TEXT;
--- Delta Events ---
CREATE TABLE IF NOT EXISTS "Delta Events" (
	tenant TEXT NOT NULL,
	seq INTEGER NOT NULL,
	flow_published_at TEXT NOT NULL,
	value REAL
);
CREATE TEMP TABLE IF NOT EXISTS flow_temp_load_1 (tenant TEXT, seq INTEGER);
DELETE FROM temp.flow_temp_load_1;
INSERT INTO "Delta Events" (tenant, seq, flow_published_at, value) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, seq) DO UPDATE SET flow_published_at = excluded.flow_published_at, value = excluded.value;
INSERT INTO "Delta Events" (tenant, seq, flow_published_at, value) VALUES (?, ?, ?, ?);
DELETE FROM "Delta Events" WHERE tenant = ? AND seq = ?;
DELETE FROM "Delta Events";
DROP TABLE IF EXISTS "Delta Events";
SELECT name AS column_name, type AS data_type, CASE WHEN "notnull" = 1 THEN 'NO' ELSE 'YES' END AS is_nullable, NULL AS character_maximum_length, NULL AS numeric_precision, NULL AS numeric_scale, NULL AS datetime_precision, NULL AS collation_name, pk AS is_primary_key FROM pragma_table_info('Delta Events', 'main') ORDER BY cid;
ALTER TABLE "Delta Events" ADD COLUMN flow_published_at TEXT;
ALTER TABLE "Delta Events" ADD COLUMN value REAL;
--- loadQuery ---
SELECT 0 AS binding, r.flow_document AS doc FROM temp.flow_temp_load_0 AS l JOIN main.all_types AS r ON l.id = r.id;
--- checkpoints ---
CREATE TABLE IF NOT EXISTS flow_checkpoints_v1 (
	materialization TEXT NOT NULL,
	key_begin INTEGER NOT NULL,
	key_end INTEGER NOT NULL,
	fence INTEGER NOT NULL,
	checkpoint TEXT NOT NULL,
	PRIMARY KEY (materialization, key_begin, key_end)
);
UPDATE flow_checkpoints_v1 SET fence = fence + 1 WHERE materialization = 'acme''Co/mat' AND key_end >= 0 AND key_begin <= 4294967295;
SELECT fence, key_begin, key_end, checkpoint AS checkpoint FROM flow_checkpoints_v1 WHERE materialization = 'acme''Co/mat' AND key_begin <= 0 AND key_end >= 4294967295 ORDER BY key_end - key_begin ASC LIMIT 1;
INSERT INTO flow_checkpoints_v1 (materialization, key_begin, key_end, fence, checkpoint) VALUES ('acme''Co/mat', 0, 4294967295, 3, '{"sources":{}}');
UPDATE flow_checkpoints_v1 SET checkpoint = '{"o''k":1}' WHERE materialization = 'acme''Co/mat' AND key_begin = 0 AND key_end = 4294967295 AND fence = 3;
