-- materialize-sqlserver offline review for acmeCo/materialize-sqlserver: nothing was executed and no connection was made.
-- Database analytics at sqlserver.invalid, user flow, schema dbo, hard deletes.
-- Note: binding 2's resourcePath ["order"] differs from the path its resource config gives (["dbo","order"]); the connector uses the spec's resourcePath, as below.

-- Apply: schemas, the checkpoints table and every table, as for a new database (an existing table only gets the ADD/ALTER COLUMN statements it needs). Strings use collation Latin1_General_100_BIN2_UTF8
IF SCHEMA_ID(N'dbo') IS NULL
EXEC(N'CREATE SCHEMA dbo');
IF SCHEMA_ID(N'Weird "Schema"') IS NULL
EXEC(N'CREATE SCHEMA "Weird ""Schema"""');
IF OBJECT_ID(N'[dbo].[flow_checkpoints_v1]', N'U') IS NULL
CREATE TABLE dbo.flow_checkpoints_v1 (
	materialization varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	key_begin BIGINT NOT NULL,
	key_end BIGINT NOT NULL,
	fence BIGINT NOT NULL,
	"checkpoint" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	PRIMARY KEY (materialization, key_begin, key_end)
);
IF OBJECT_ID(N'[dbo].[key_value]', N'U') IS NULL
CREATE TABLE dbo.key_value (
	key1 BIGINT NOT NULL,
	key2 BIT NOT NULL,
	"key!binary" VARBINARY(900) NOT NULL,
	"123" BIGINT,
	"_meta/op" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"a""string`with`quote'characters" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"a]b" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"array" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"binary" VARBINARY(MAX),
	"boolean" BIT,
	"dateField" DATE,
	"dateTimeField" DATETIME2 NOT NULL,
	"dotted.name" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	field_with_projection varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	flow_published_at DATETIME2 NOT NULL,
	"integer" BIGINT,
	"integerGt64Bit" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"integerWithUserDDL" DECIMAL(20),
	"key" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	multiple varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"nonAsciiκόσμε" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	number DOUBLE PRECISION NOT NULL,
	"numberCastToString" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"object" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"Select" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	string varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"stringHuge" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"stringInteger" BIGINT,
	"stringInteger39Chars" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"stringNumber" DOUBLE PRECISION,
	"stringSized" varchar(64) COLLATE Latin1_General_100_BIN2_UTF8,
	"timeField" TIME,
	"uuidField" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"with space" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	é varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	flow_document varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	PRIMARY KEY (key1, key2, "key!binary")
);
IF OBJECT_ID(N'[Weird "Schema"].[delta updates]', N'U') IS NULL
CREATE TABLE "Weird ""Schema"""."delta updates" (
	"theKey" varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	"aValue" BIGINT,
	flow_published_at DATETIME2 NOT NULL
);
IF OBJECT_ID(N'[order]', N'U') IS NULL
CREATE TABLE "order" (
	ts varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	id varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	flow_document varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	PRIMARY KEY (ts, id)
);
IF OBJECT_ID(N'[dbo].[keys_only]', N'U') IS NULL
CREATE TABLE dbo.keys_only (
	id BIGINT NOT NULL,
	PRIMARY KEY (id)
);

-- Open: install the fence for acmeCo/materialize-sqlserver (one transaction; the bumped fence value is then used by every commit)
UPDATE dbo.flow_checkpoints_v1 SET fence = fence + 1
WHERE materialization = N'acmeCo/materialize-sqlserver' AND key_end >= 0 AND key_begin <= 4294967295;
SELECT TOP 1 fence, key_begin, key_end, "checkpoint"
FROM dbo.flow_checkpoints_v1
WHERE materialization = N'acmeCo/materialize-sqlserver' AND key_begin <= 0 AND key_end >= 4294967295
ORDER BY key_end - key_begin ASC;
INSERT INTO dbo.flow_checkpoints_v1 (materialization, key_begin, key_end, fence, "checkpoint")
VALUES (N'acmeCo/materialize-sqlserver', 0, 4294967295, 0, N'');

-- Open: session temp tables on the load connection
CREATE TABLE #flow_temp_load_0 (
	key1 BIGINT NOT NULL,
	key2 BIT NOT NULL,
	"key!binary" VARBINARY(900) NOT NULL,
	PRIMARY KEY (key1, key2, "key!binary")
);
CREATE TABLE #flow_temp_load_2 (
	ts varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	id varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	PRIMARY KEY (ts, id)
);

-- Open: session temp tables on the store connection
CREATE TABLE #flow_temp_store_0 (
	key1 BIGINT NOT NULL,
	key2 BIT NOT NULL,
	"key!binary" VARBINARY(900) NOT NULL,
	"123" BIGINT,
	"_meta/op" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"a""string`with`quote'characters" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"a]b" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"array" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"binary" VARBINARY(MAX),
	"boolean" BIT,
	"dateField" DATE,
	"dateTimeField" DATETIME2,
	"dotted.name" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	field_with_projection varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	flow_published_at DATETIME2,
	"integer" BIGINT,
	"integerGt64Bit" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"integerWithUserDDL" DECIMAL(20),
	"key" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	multiple varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"nonAsciiκόσμε" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	number DOUBLE PRECISION,
	"numberCastToString" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"object" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"Select" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	string varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"stringHuge" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"stringInteger" BIGINT,
	"stringInteger39Chars" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"stringNumber" DOUBLE PRECISION,
	"stringSized" varchar(64) COLLATE Latin1_General_100_BIN2_UTF8,
	"timeField" TIME,
	"uuidField" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	"with space" varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	é varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	flow_document varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	_flow_delete BIT,
	PRIMARY KEY (key1, key2, "key!binary")
);
CREATE TABLE #flow_temp_store_1 (
	"theKey" varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	"aValue" BIGINT,
	flow_published_at DATETIME2,
	_flow_delete BIT
);
CREATE TABLE #flow_temp_store_2 (
	ts varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	id varchar(900) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	flow_document varchar(MAX) COLLATE Latin1_General_100_BIN2_UTF8,
	_flow_delete BIT,
	PRIMARY KEY (ts, id)
);
CREATE TABLE #flow_temp_store_3 (
	id BIGINT NOT NULL,
	_flow_delete BIT,
	PRIMARY KEY (id)
);

-- Each transaction, load connection: keys are bulk-loaded into #flow_temp_load_<n>, then one query returns the stored documents
BEGIN TRANSACTION;
SELECT 0 AS binding, r.flow_document AS doc
	FROM #flow_temp_load_0 AS l
	JOIN dbo.key_value AS r ON r.key1 = l.key1 AND r.key2 = l.key2 AND r."key!binary" = l."key!binary"
UNION ALL
SELECT 2 AS binding, r.flow_document AS doc
	FROM #flow_temp_load_2 AS l
	JOIN "order" AS r ON r.ts = l.ts AND r.id = l.id;
TRUNCATE TABLE #flow_temp_load_0;
TRUNCATE TABLE #flow_temp_load_2;
COMMIT TRANSACTION;

-- Each transaction, store connection: rows are bulk-loaded into #flow_temp_store_<n> (with _flow_delete), then at commit
BEGIN TRANSACTION;
-- binding 0 (dbo.key_value) when some stored key may already exist or is deleted:
MERGE INTO dbo.key_value AS l
USING #flow_temp_store_0 AS r
ON l.key1 = r.key1 AND l.key2 = r.key2 AND l."key!binary" = r."key!binary"
WHEN MATCHED AND r._flow_delete = 1 THEN DELETE
WHEN MATCHED THEN UPDATE SET l."123" = r."123", l."_meta/op" = r."_meta/op", l."a""string`with`quote'characters" = r."a""string`with`quote'characters", l."a]b" = r."a]b", l."array" = r."array", l."binary" = r."binary", l."boolean" = r."boolean", l."dateField" = r."dateField", l."dateTimeField" = r."dateTimeField", l."dotted.name" = r."dotted.name", l.field_with_projection = r.field_with_projection, l.flow_published_at = r.flow_published_at, l."integer" = r."integer", l."integerGt64Bit" = r."integerGt64Bit", l."integerWithUserDDL" = r."integerWithUserDDL", l."key" = r."key", l.multiple = r.multiple, l."nonAsciiκόσμε" = r."nonAsciiκόσμε", l.number = r.number, l."numberCastToString" = r."numberCastToString", l."object" = r."object", l."Select" = r."Select", l.string = r.string, l."stringHuge" = r."stringHuge", l."stringInteger" = r."stringInteger", l."stringInteger39Chars" = r."stringInteger39Chars", l."stringNumber" = r."stringNumber", l."stringSized" = r."stringSized", l."timeField" = r."timeField", l."uuidField" = r."uuidField", l."with space" = r."with space", l.é = r.é, l.flow_document = r.flow_document
WHEN NOT MATCHED AND r._flow_delete = 0 THEN
	INSERT (key1, key2, "key!binary", "123", "_meta/op", "a""string`with`quote'characters", "a]b", "array", "binary", "boolean", "dateField", "dateTimeField", "dotted.name", field_with_projection, flow_published_at, "integer", "integerGt64Bit", "integerWithUserDDL", "key", multiple, "nonAsciiκόσμε", number, "numberCastToString", "object", "Select", string, "stringHuge", "stringInteger", "stringInteger39Chars", "stringNumber", "stringSized", "timeField", "uuidField", "with space", é, flow_document)
	VALUES (r.key1, r.key2, r."key!binary", r."123", r."_meta/op", r."a""string`with`quote'characters", r."a]b", r."array", r."binary", r."boolean", r."dateField", r."dateTimeField", r."dotted.name", r.field_with_projection, r.flow_published_at, r."integer", r."integerGt64Bit", r."integerWithUserDDL", r."key", r.multiple, r."nonAsciiκόσμε", r.number, r."numberCastToString", r."object", r."Select", r.string, r."stringHuge", r."stringInteger", r."stringInteger39Chars", r."stringNumber", r."stringSized", r."timeField", r."uuidField", r."with space", r.é, r.flow_document);
-- binding 0 (dbo.key_value) when every stored key is new:
INSERT INTO dbo.key_value (key1, key2, "key!binary", "123", "_meta/op", "a""string`with`quote'characters", "a]b", "array", "binary", "boolean", "dateField", "dateTimeField", "dotted.name", field_with_projection, flow_published_at, "integer", "integerGt64Bit", "integerWithUserDDL", "key", multiple, "nonAsciiκόσμε", number, "numberCastToString", "object", "Select", string, "stringHuge", "stringInteger", "stringInteger39Chars", "stringNumber", "stringSized", "timeField", "uuidField", "with space", é, flow_document)
SELECT key1, key2, "key!binary", "123", "_meta/op", "a""string`with`quote'characters", "a]b", "array", "binary", "boolean", "dateField", "dateTimeField", "dotted.name", field_with_projection, flow_published_at, "integer", "integerGt64Bit", "integerWithUserDDL", "key", multiple, "nonAsciiκόσμε", number, "numberCastToString", "object", "Select", string, "stringHuge", "stringInteger", "stringInteger39Chars", "stringNumber", "stringSized", "timeField", "uuidField", "with space", é, flow_document FROM #flow_temp_store_0
WHERE _flow_delete = 0;
TRUNCATE TABLE #flow_temp_store_0;
-- binding 1 (Weird "Schema".delta updates) (delta updates):
INSERT INTO "Weird ""Schema"""."delta updates" ("theKey", "aValue", flow_published_at)
SELECT "theKey", "aValue", flow_published_at FROM #flow_temp_store_1;
TRUNCATE TABLE #flow_temp_store_1;
-- binding 2 (order) when some stored key may already exist or is deleted:
MERGE INTO "order" AS l
USING #flow_temp_store_2 AS r
ON l.ts = r.ts AND l.id = r.id
WHEN MATCHED AND r._flow_delete = 1 THEN DELETE
WHEN MATCHED THEN UPDATE SET l.flow_document = r.flow_document
WHEN NOT MATCHED AND r._flow_delete = 0 THEN
	INSERT (ts, id, flow_document)
	VALUES (r.ts, r.id, r.flow_document);
-- binding 2 (order) when every stored key is new:
INSERT INTO "order" (ts, id, flow_document)
SELECT ts, id, flow_document FROM #flow_temp_store_2
WHERE _flow_delete = 0;
TRUNCATE TABLE #flow_temp_store_2;
-- binding 3 (dbo.keys_only) when some stored key may already exist or is deleted:
MERGE INTO dbo.keys_only AS l
USING #flow_temp_store_3 AS r
ON l.id = r.id
WHEN MATCHED AND r._flow_delete = 1 THEN DELETE
WHEN NOT MATCHED AND r._flow_delete = 0 THEN
	INSERT (id)
	VALUES (r.id);
-- binding 3 (dbo.keys_only) when every stored key is new:
INSERT INTO dbo.keys_only (id)
SELECT id FROM #flow_temp_store_3
WHERE _flow_delete = 0;
TRUNCATE TABLE #flow_temp_store_3;
-- the runtime checkpoint, under the fence (no row updated = fenced off by a newer instance: everything rolls back):
UPDATE dbo.flow_checkpoints_v1 SET "checkpoint" = N'<runtime checkpoint JSON>'
WHERE materialization = N'acmeCo/materialize-sqlserver' AND key_begin = 0 AND key_end = 4294967295 AND fence = 0;
COMMIT TRANSACTION;
