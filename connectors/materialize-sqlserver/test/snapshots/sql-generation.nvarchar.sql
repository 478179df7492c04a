-- createSchema dbo
IF SCHEMA_ID(N'dbo') IS NULL
EXEC(N'CREATE SCHEMA dbo');

-- createSchema Weird "Schema"
IF SCHEMA_ID(N'Weird "Schema"') IS NULL
EXEC(N'CREATE SCHEMA "Weird ""Schema"""');

-- createCheckpointsTable
IF OBJECT_ID(N'[dbo].[flow_checkpoints_v1]', N'U') IS NULL
CREATE TABLE dbo.flow_checkpoints_v1 (
	materialization nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	key_begin BIGINT NOT NULL,
	key_end BIGINT NOT NULL,
	fence BIGINT NOT NULL,
	"checkpoint" nvarchar(MAX) COLLATE Latin1_General_100_BIN2 NOT NULL,
	PRIMARY KEY (materialization, key_begin, key_end)
);

-- createTable dbo.key_value (binding 0)
IF OBJECT_ID(N'[dbo].[key_value]', N'U') IS NULL
CREATE TABLE dbo.key_value (
	key1 BIGINT NOT NULL,
	key2 BIT NOT NULL,
	"key!binary" VARBINARY(900) NOT NULL,
	"123" BIGINT,
	"_meta/op" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"a""string`with`quote'characters" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"a]b" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"array" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"binary" VARBINARY(MAX),
	"boolean" BIT,
	"dateField" DATE,
	"dateTimeField" DATETIME2 NOT NULL,
	"dotted.name" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	field_with_projection nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	flow_published_at DATETIME2 NOT NULL,
	"integer" BIGINT,
	"integerGt64Bit" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"integerWithUserDDL" DECIMAL(20),
	"key" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	multiple nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"nonAsciiκόσμε" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	number DOUBLE PRECISION NOT NULL,
	"numberCastToString" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"object" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"Select" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	string nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"stringHuge" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"stringInteger" BIGINT,
	"stringInteger39Chars" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"stringNumber" DOUBLE PRECISION,
	"stringSized" nvarchar(16) COLLATE Latin1_General_100_BIN2,
	"timeField" TIME,
	"uuidField" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"with space" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	é nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	flow_document nvarchar(MAX) COLLATE Latin1_General_100_BIN2 NOT NULL,
	PRIMARY KEY (key1, key2, "key!binary")
);

-- createLoadTable dbo.key_value (binding 0)
CREATE TABLE #flow_temp_load_0 (
	key1 BIGINT NOT NULL,
	key2 BIT NOT NULL,
	"key!binary" VARBINARY(900) NOT NULL,
	PRIMARY KEY (key1, key2, "key!binary")
);

-- truncateLoad dbo.key_value (binding 0)
TRUNCATE TABLE #flow_temp_load_0;

-- createStoreTable dbo.key_value (binding 0)
CREATE TABLE #flow_temp_store_0 (
	key1 BIGINT NOT NULL,
	key2 BIT NOT NULL,
	"key!binary" VARBINARY(900) NOT NULL,
	"123" BIGINT,
	"_meta/op" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"a""string`with`quote'characters" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"a]b" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"array" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"binary" VARBINARY(MAX),
	"boolean" BIT,
	"dateField" DATE,
	"dateTimeField" DATETIME2,
	"dotted.name" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	field_with_projection nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	flow_published_at DATETIME2,
	"integer" BIGINT,
	"integerGt64Bit" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"integerWithUserDDL" DECIMAL(20),
	"key" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	multiple nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"nonAsciiκόσμε" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	number DOUBLE PRECISION,
	"numberCastToString" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"object" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"Select" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	string nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"stringHuge" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"stringInteger" BIGINT,
	"stringInteger39Chars" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"stringNumber" DOUBLE PRECISION,
	"stringSized" nvarchar(16) COLLATE Latin1_General_100_BIN2,
	"timeField" TIME,
	"uuidField" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"with space" nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	é nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	flow_document nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	_flow_delete BIT,
	PRIMARY KEY (key1, key2, "key!binary")
);

-- mergeFromStore dbo.key_value (binding 0)
MERGE INTO dbo.key_value AS l
USING #flow_temp_store_0 AS r
ON l.key1 = r.key1 AND l.key2 = r.key2 AND l."key!binary" = r."key!binary"
WHEN MATCHED AND r._flow_delete = 1 THEN DELETE
WHEN MATCHED THEN UPDATE SET l."123" = r."123", l."_meta/op" = r."_meta/op", l."a""string`with`quote'characters" = r."a""string`with`quote'characters", l."a]b" = r."a]b", l."array" = r."array", l."binary" = r."binary", l."boolean" = r."boolean", l."dateField" = r."dateField", l."dateTimeField" = r."dateTimeField", l."dotted.name" = r."dotted.name", l.field_with_projection = r.field_with_projection, l.flow_published_at = r.flow_published_at, l."integer" = r."integer", l."integerGt64Bit" = r."integerGt64Bit", l."integerWithUserDDL" = r."integerWithUserDDL", l."key" = r."key", l.multiple = r.multiple, l."nonAsciiκόσμε" = r."nonAsciiκόσμε", l.number = r.number, l."numberCastToString" = r."numberCastToString", l."object" = r."object", l."Select" = r."Select", l.string = r.string, l."stringHuge" = r."stringHuge", l."stringInteger" = r."stringInteger", l."stringInteger39Chars" = r."stringInteger39Chars", l."stringNumber" = r."stringNumber", l."stringSized" = r."stringSized", l."timeField" = r."timeField", l."uuidField" = r."uuidField", l."with space" = r."with space", l.é = r.é, l.flow_document = r.flow_document
WHEN NOT MATCHED AND r._flow_delete = 0 THEN
	INSERT (key1, key2, "key!binary", "123", "_meta/op", "a""string`with`quote'characters", "a]b", "array", "binary", "boolean", "dateField", "dateTimeField", "dotted.name", field_with_projection, flow_published_at, "integer", "integerGt64Bit", "integerWithUserDDL", "key", multiple, "nonAsciiκόσμε", number, "numberCastToString", "object", "Select", string, "stringHuge", "stringInteger", "stringInteger39Chars", "stringNumber", "stringSized", "timeField", "uuidField", "with space", é, flow_document)
	VALUES (r.key1, r.key2, r."key!binary", r."123", r."_meta/op", r."a""string`with`quote'characters", r."a]b", r."array", r."binary", r."boolean", r."dateField", r."dateTimeField", r."dotted.name", r.field_with_projection, r.flow_published_at, r."integer", r."integerGt64Bit", r."integerWithUserDDL", r."key", r.multiple, r."nonAsciiκόσμε", r.number, r."numberCastToString", r."object", r."Select", r.string, r."stringHuge", r."stringInteger", r."stringInteger39Chars", r."stringNumber", r."stringSized", r."timeField", r."uuidField", r."with space", r.é, r.flow_document);

-- copyFromStore dbo.key_value (binding 0)
INSERT INTO dbo.key_value (key1, key2, "key!binary", "123", "_meta/op", "a""string`with`quote'characters", "a]b", "array", "binary", "boolean", "dateField", "dateTimeField", "dotted.name", field_with_projection, flow_published_at, "integer", "integerGt64Bit", "integerWithUserDDL", "key", multiple, "nonAsciiκόσμε", number, "numberCastToString", "object", "Select", string, "stringHuge", "stringInteger", "stringInteger39Chars", "stringNumber", "stringSized", "timeField", "uuidField", "with space", é, flow_document)
SELECT key1, key2, "key!binary", "123", "_meta/op", "a""string`with`quote'characters", "a]b", "array", "binary", "boolean", "dateField", "dateTimeField", "dotted.name", field_with_projection, flow_published_at, "integer", "integerGt64Bit", "integerWithUserDDL", "key", multiple, "nonAsciiκόσμε", number, "numberCastToString", "object", "Select", string, "stringHuge", "stringInteger", "stringInteger39Chars", "stringNumber", "stringSized", "timeField", "uuidField", "with space", é, flow_document FROM #flow_temp_store_0
WHERE _flow_delete = 0;

-- truncateStore dbo.key_value (binding 0)
TRUNCATE TABLE #flow_temp_store_0;

-- truncateTable dbo.key_value (binding 0)
TRUNCATE TABLE dbo.key_value;

-- dropTable dbo.key_value (binding 0)
DROP TABLE dbo.key_value;

-- describeTable dbo.key_value (binding 0)
SELECT c.COLUMN_NAME AS column_name, c.DATA_TYPE AS data_type, c.IS_NULLABLE AS is_nullable,
	c.CHARACTER_MAXIMUM_LENGTH AS character_maximum_length, c.NUMERIC_PRECISION AS numeric_precision,
	c.NUMERIC_SCALE AS numeric_scale, c.DATETIME_PRECISION AS datetime_precision, c.COLLATION_NAME AS collation_name,
	COALESCE((SELECT TOP 1 k.ORDINAL_POSITION FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS tc
		JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k ON k.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
		WHERE tc.CONSTRAINT_TYPE = 'PRIMARY KEY' AND k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME), 0) AS is_primary_key
FROM INFORMATION_SCHEMA.COLUMNS AS c
WHERE c.TABLE_SCHEMA = N'dbo' AND c.TABLE_NAME = N'key_value'
ORDER BY c.ORDINAL_POSITION;

-- createTable Weird "Schema".delta updates (binding 1, delta)
IF OBJECT_ID(N'[Weird "Schema"].[delta updates]', N'U') IS NULL
CREATE TABLE "Weird ""Schema"""."delta updates" (
	"theKey" nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	"aValue" BIGINT,
	flow_published_at DATETIME2 NOT NULL
);

-- createLoadTable Weird "Schema".delta updates (binding 1, delta)
CREATE TABLE #flow_temp_load_1 (
	"theKey" nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	PRIMARY KEY ("theKey")
);

-- truncateLoad Weird "Schema".delta updates (binding 1, delta)
TRUNCATE TABLE #flow_temp_load_1;

-- createStoreTable Weird "Schema".delta updates (binding 1, delta)
CREATE TABLE #flow_temp_store_1 (
	"theKey" nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	"aValue" BIGINT,
	flow_published_at DATETIME2,
	_flow_delete BIT
);

-- mergeFromStore Weird "Schema".delta updates (binding 1, delta)
MERGE INTO "Weird ""Schema"""."delta updates" AS l
USING #flow_temp_store_1 AS r
ON l."theKey" = r."theKey"
WHEN MATCHED THEN UPDATE SET l."aValue" = r."aValue", l.flow_published_at = r.flow_published_at
WHEN NOT MATCHED THEN
	INSERT ("theKey", "aValue", flow_published_at)
	VALUES (r."theKey", r."aValue", r.flow_published_at);

-- copyFromStore Weird "Schema".delta updates (binding 1, delta)
INSERT INTO "Weird ""Schema"""."delta updates" ("theKey", "aValue", flow_published_at)
SELECT "theKey", "aValue", flow_published_at FROM #flow_temp_store_1;

-- truncateStore Weird "Schema".delta updates (binding 1, delta)
TRUNCATE TABLE #flow_temp_store_1;

-- truncateTable Weird "Schema".delta updates (binding 1, delta)
TRUNCATE TABLE "Weird ""Schema"""."delta updates";

-- dropTable Weird "Schema".delta updates (binding 1, delta)
DROP TABLE "Weird ""Schema"""."delta updates";

-- describeTable Weird "Schema".delta updates (binding 1, delta)
SELECT c.COLUMN_NAME AS column_name, c.DATA_TYPE AS data_type, c.IS_NULLABLE AS is_nullable,
	c.CHARACTER_MAXIMUM_LENGTH AS character_maximum_length, c.NUMERIC_PRECISION AS numeric_precision,
	c.NUMERIC_SCALE AS numeric_scale, c.DATETIME_PRECISION AS datetime_precision, c.COLLATION_NAME AS collation_name,
	COALESCE((SELECT TOP 1 k.ORDINAL_POSITION FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS tc
		JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k ON k.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
		WHERE tc.CONSTRAINT_TYPE = 'PRIMARY KEY' AND k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME), 0) AS is_primary_key
FROM INFORMATION_SCHEMA.COLUMNS AS c
WHERE c.TABLE_SCHEMA = N'Weird "Schema"' AND c.TABLE_NAME = N'delta updates'
ORDER BY c.ORDINAL_POSITION;

-- createTable order (binding 2)
IF OBJECT_ID(N'[order]', N'U') IS NULL
CREATE TABLE "order" (
	ts nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	id nvarchar(300) COLLATE Latin1_General_100_BIN2 NOT NULL,
	flow_document nvarchar(MAX) COLLATE Latin1_General_100_BIN2 NOT NULL,
	PRIMARY KEY (ts, id)
);

-- createLoadTable order (binding 2)
CREATE TABLE #flow_temp_load_2 (
	ts nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	id nvarchar(300) COLLATE Latin1_General_100_BIN2 NOT NULL,
	PRIMARY KEY (ts, id)
);

-- truncateLoad order (binding 2)
TRUNCATE TABLE #flow_temp_load_2;

-- createStoreTable order (binding 2)
CREATE TABLE #flow_temp_store_2 (
	ts nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	id nvarchar(300) COLLATE Latin1_General_100_BIN2 NOT NULL,
	flow_document nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	_flow_delete BIT,
	PRIMARY KEY (ts, id)
);

-- mergeFromStore order (binding 2)
MERGE INTO "order" AS l
USING #flow_temp_store_2 AS r
ON l.ts = r.ts AND l.id = r.id
WHEN MATCHED AND r._flow_delete = 1 THEN DELETE
WHEN MATCHED THEN UPDATE SET l.flow_document = r.flow_document
WHEN NOT MATCHED AND r._flow_delete = 0 THEN
	INSERT (ts, id, flow_document)
	VALUES (r.ts, r.id, r.flow_document);

-- copyFromStore order (binding 2)
INSERT INTO "order" (ts, id, flow_document)
SELECT ts, id, flow_document FROM #flow_temp_store_2
WHERE _flow_delete = 0;

-- truncateStore order (binding 2)
TRUNCATE TABLE #flow_temp_store_2;

-- truncateTable order (binding 2)
TRUNCATE TABLE "order";

-- dropTable order (binding 2)
DROP TABLE "order";

-- describeTable order (binding 2)
SELECT c.COLUMN_NAME AS column_name, c.DATA_TYPE AS data_type, c.IS_NULLABLE AS is_nullable,
	c.CHARACTER_MAXIMUM_LENGTH AS character_maximum_length, c.NUMERIC_PRECISION AS numeric_precision,
	c.NUMERIC_SCALE AS numeric_scale, c.DATETIME_PRECISION AS datetime_precision, c.COLLATION_NAME AS collation_name,
	COALESCE((SELECT TOP 1 k.ORDINAL_POSITION FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS tc
		JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k ON k.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
		WHERE tc.CONSTRAINT_TYPE = 'PRIMARY KEY' AND k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME), 0) AS is_primary_key
FROM INFORMATION_SCHEMA.COLUMNS AS c
WHERE c.TABLE_SCHEMA = SCHEMA_NAME() AND c.TABLE_NAME = N'order'
ORDER BY c.ORDINAL_POSITION;

-- createTable dbo.keys_only (binding 3)
IF OBJECT_ID(N'[dbo].[keys_only]', N'U') IS NULL
CREATE TABLE dbo.keys_only (
	id BIGINT NOT NULL,
	PRIMARY KEY (id)
);

-- createLoadTable dbo.keys_only (binding 3)
CREATE TABLE #flow_temp_load_3 (
	id BIGINT NOT NULL,
	PRIMARY KEY (id)
);

-- truncateLoad dbo.keys_only (binding 3)
TRUNCATE TABLE #flow_temp_load_3;

-- createStoreTable dbo.keys_only (binding 3)
CREATE TABLE #flow_temp_store_3 (
	id BIGINT NOT NULL,
	_flow_delete BIT,
	PRIMARY KEY (id)
);

-- mergeFromStore dbo.keys_only (binding 3)
MERGE INTO dbo.keys_only AS l
USING #flow_temp_store_3 AS r
ON l.id = r.id
WHEN MATCHED AND r._flow_delete = 1 THEN DELETE
WHEN NOT MATCHED AND r._flow_delete = 0 THEN
	INSERT (id)
	VALUES (r.id);

-- copyFromStore dbo.keys_only (binding 3)
INSERT INTO dbo.keys_only (id)
SELECT id FROM #flow_temp_store_3
WHERE _flow_delete = 0;

-- truncateStore dbo.keys_only (binding 3)
TRUNCATE TABLE #flow_temp_store_3;

-- truncateTable dbo.keys_only (binding 3)
TRUNCATE TABLE dbo.keys_only;

-- dropTable dbo.keys_only (binding 3)
DROP TABLE dbo.keys_only;

-- describeTable dbo.keys_only (binding 3)
SELECT c.COLUMN_NAME AS column_name, c.DATA_TYPE AS data_type, c.IS_NULLABLE AS is_nullable,
	c.CHARACTER_MAXIMUM_LENGTH AS character_maximum_length, c.NUMERIC_PRECISION AS numeric_precision,
	c.NUMERIC_SCALE AS numeric_scale, c.DATETIME_PRECISION AS datetime_precision, c.COLLATION_NAME AS collation_name,
	COALESCE((SELECT TOP 1 k.ORDINAL_POSITION FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS tc
		JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k ON k.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
		WHERE tc.CONSTRAINT_TYPE = 'PRIMARY KEY' AND k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME), 0) AS is_primary_key
FROM INFORMATION_SCHEMA.COLUMNS AS c
WHERE c.TABLE_SCHEMA = N'dbo' AND c.TABLE_NAME = N'keys_only'
ORDER BY c.ORDINAL_POSITION;

-- loadQuery (all bindings)
SELECT 0 AS binding, r.flow_document AS doc
	FROM #flow_temp_load_0 AS l
	JOIN dbo.key_value AS r ON r.key1 = l.key1 AND r.key2 = l.key2 AND r."key!binary" = l."key!binary"
UNION ALL
SELECT 2 AS binding, r.flow_document AS doc
	FROM #flow_temp_load_2 AS l
	JOIN "order" AS r ON r.ts = l.ts AND r.id = l.id
UNION ALL
SELECT 3 AS binding, (SELECT r.id AS id FOR JSON PATH, INCLUDE_NULL_VALUES, WITHOUT_ARRAY_WRAPPER) AS doc
	FROM #flow_temp_load_3 AS l
	JOIN dbo.keys_only AS r ON r.id = l.id;

-- loadQuery no_flow_document (key_value without flow_document)
SELECT 0 AS binding, (SELECT r.key1 AS key1, r.key2 AS key2, CAST(N'' AS XML).value(N'xs:base64Binary(sql:column("r.[key!binary]"))', 'VARCHAR(MAX)') AS "key!binary", r."123" AS "123", r."_meta/op" AS "_meta/op", r."a""string`with`quote'characters" AS "a""string`with`quote'characters", r."a]b" AS "a]b", JSON_QUERY(r."array") AS "array", CAST(N'' AS XML).value(N'xs:base64Binary(sql:column("r.[binary]"))', 'VARCHAR(MAX)') AS "binary", r."boolean" AS "boolean", FORMAT(r."dateField", 'yyyy-MM-dd') AS "dateField", FORMAT(r."dateTimeField" AT TIME ZONE 'UTC', 'yyyy-MM-ddTHH:mm:ss.FFFFFFF') + 'Z' AS "dateTimeField", r."dotted.name" AS "dotted.name", r.field_with_projection AS field_with_projection, r."integer" AS "integer", r."integerGt64Bit" AS "integerGt64Bit", r."integerWithUserDDL" AS "integerWithUserDDL", r."key" AS "key", r.multiple AS multiple, r."nonAsciiκόσμε" AS "nonAsciiκόσμε", r.number AS number, r."numberCastToString" AS "numberCastToString", JSON_QUERY(r."object") AS "object", r."Select" AS "Select", r.string AS string, r."stringHuge" AS "stringHuge", CAST(r."stringInteger" AS NVARCHAR(MAX)) AS "stringInteger", CAST(r."stringInteger39Chars" AS NVARCHAR(MAX)) AS "stringInteger39Chars", CAST(r."stringNumber" AS NVARCHAR(MAX)) AS "stringNumber", r."stringSized" AS "stringSized", FORMAT(r."timeField", 'HH:mm:ss.FFFFFFF') AS "timeField", r."uuidField" AS "uuidField", r."with space" AS "with space", r.é AS é FOR JSON PATH, INCLUDE_NULL_VALUES, WITHOUT_ARRAY_WRAPPER) AS doc
	FROM #flow_temp_load_0 AS l
	JOIN dbo.key_value AS r ON r.key1 = l.key1 AND r.key2 = l.key2 AND r."key!binary" = l."key!binary";

-- createTable dbo.user_ddl (user DDL)
IF OBJECT_ID(N'[dbo].[user_ddl]', N'U') IS NULL
CREATE TABLE dbo.user_ddl (
	ts DATETIMEOFFSET(3) NOT NULL,
	id CHAR(12) COLLATE Latin1_General_CI_AS NOT NULL,
	amount MONEY,
	big NUMERIC(38, 10),
	code NCHAR(4),
	hash BINARY(16),
	label VARCHAR(20) COLLATE Latin1_General_CI_AS,
	n INT,
	flow_document nvarchar(MAX) COLLATE Latin1_General_100_BIN2 NOT NULL,
	PRIMARY KEY (ts, id)
);

-- createLoadTable dbo.user_ddl (user DDL)
CREATE TABLE #flow_temp_load_4 (
	ts nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	id varchar(12) COLLATE Latin1_General_CI_AS NOT NULL,
	PRIMARY KEY (ts, id)
);

-- createStoreTable dbo.user_ddl (user DDL)
CREATE TABLE #flow_temp_store_4 (
	ts nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL,
	id varchar(12) COLLATE Latin1_General_CI_AS NOT NULL,
	amount nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	big NUMERIC(38, 10),
	code nvarchar(4) COLLATE DATABASE_DEFAULT,
	hash varbinary(16),
	label VARCHAR(20) COLLATE Latin1_General_CI_AS,
	n INT,
	flow_document nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	_flow_delete BIT,
	PRIMARY KEY (ts, id)
);

-- mergeFromStore dbo.user_ddl (user DDL)
MERGE INTO dbo.user_ddl AS l
USING #flow_temp_store_4 AS r
ON l.ts = CAST(r.ts AS DATETIMEOFFSET(3)) AND l.id = CAST(r.id AS CHAR(12))
WHEN MATCHED AND r._flow_delete = 1 THEN DELETE
WHEN MATCHED THEN UPDATE SET l.amount = r.amount, l.big = r.big, l.code = r.code, l.hash = r.hash, l.label = r.label, l.n = r.n, l.flow_document = r.flow_document
WHEN NOT MATCHED AND r._flow_delete = 0 THEN
	INSERT (ts, id, amount, big, code, hash, label, n, flow_document)
	VALUES (r.ts, r.id, r.amount, r.big, r.code, r.hash, r.label, r.n, r.flow_document);

-- copyFromStore dbo.user_ddl (user DDL)
INSERT INTO dbo.user_ddl (ts, id, amount, big, code, hash, label, n, flow_document)
SELECT ts, id, amount, big, code, hash, label, n, flow_document FROM #flow_temp_store_4
WHERE _flow_delete = 0;

-- loadQuery dbo.user_ddl (user DDL)
SELECT 4 AS binding, r.flow_document AS doc
	FROM #flow_temp_load_4 AS l
	JOIN dbo.user_ddl AS r ON r.ts = CAST(l.ts AS DATETIMEOFFSET(3)) AND r.id = CAST(l.id AS CHAR(12));

-- addColumns key_value
ALTER TABLE dbo.key_value ADD
	first_new_column nvarchar(MAX) COLLATE Latin1_General_100_BIN2,
	"second new Column" BIT;

-- addColumns key_value (one column)
ALTER TABLE dbo.key_value ADD
	first_new_column nvarchar(MAX) COLLATE Latin1_General_100_BIN2;

-- alterColumns key_value
ALTER TABLE dbo.key_value ALTER COLUMN number DOUBLE PRECISION NOT NULL;
ALTER TABLE dbo.key_value ALTER COLUMN string nvarchar(MAX) COLLATE Latin1_General_100_BIN2 NULL;
ALTER TABLE dbo.key_value ALTER COLUMN "integer" nvarchar(MAX) COLLATE Latin1_General_100_BIN2 NULL;
ALTER TABLE dbo.key_value ALTER COLUMN "dec" DECIMAL(20, 2) NULL;
ALTER TABLE dbo.key_value ALTER COLUMN "timeField" TIME(7) NULL;
ALTER TABLE dbo.key_value ADD "dateTimeField_flowtmp1" nvarchar(MAX) COLLATE Latin1_General_100_BIN2;
UPDATE dbo.key_value SET "dateTimeField_flowtmp1" = FORMAT("dateTimeField" AT TIME ZONE 'UTC', 'yyyy-MM-ddTHH:mm:ss.FFFFFFF') + 'Z';
ALTER TABLE dbo.key_value DROP COLUMN "dateTimeField";
EXEC sp_rename N'[dbo].[key_value].[dateTimeField_flowtmp1]', N'dateTimeField', N'COLUMN';
ALTER TABLE dbo.key_value ALTER COLUMN "dateTimeField" nvarchar(MAX) COLLATE Latin1_General_100_BIN2 NOT NULL;
ALTER TABLE dbo.key_value ADD binary_flowtmp1 VARBINARY(MAX);
UPDATE dbo.key_value SET binary_flowtmp1 = CAST(N'' AS XML).value(N'xs:base64Binary(sql:column("[binary]"))', 'VARBINARY(MAX)');
ALTER TABLE dbo.key_value DROP COLUMN "binary";
EXEC sp_rename N'[dbo].[key_value].[binary_flowtmp1]', N'binary', N'COLUMN';
ALTER TABLE dbo.key_value ADD object_flowtmp1 nvarchar(MAX) COLLATE Latin1_General_100_BIN2;
UPDATE dbo.key_value SET object_flowtmp1 = CAST(N'' AS XML).value(N'xs:base64Binary(sql:column("[object]"))', 'VARCHAR(MAX)');
ALTER TABLE dbo.key_value DROP COLUMN "object";
EXEC sp_rename N'[dbo].[key_value].[object_flowtmp1]', N'object', N'COLUMN';
ALTER TABLE dbo.key_value ADD "a""string`with`quote'characters_flowtmp1" nvarchar(MAX) COLLATE Latin1_General_100_BIN2;
UPDATE dbo.key_value SET "a""string`with`quote'characters_flowtmp1" = CAST(N'' AS XML).value(N'xs:base64Binary(sql:column("[a""string`with`quote''characters]"))', 'VARCHAR(MAX)');
ALTER TABLE dbo.key_value DROP COLUMN "a""string`with`quote'characters";
EXEC sp_rename N'[dbo].[key_value].[a"string`with`quote''characters_flowtmp1]', N'a"string`with`quote''characters', N'COLUMN';

-- fenceBump
UPDATE "path"."to".checkpoints SET fence = fence + 1
WHERE materialization = N'some/Materialization' AND key_end >= 1122867 AND key_begin <= 4293844428;

-- fenceSelect
SELECT TOP 1 fence, key_begin, key_end, "checkpoint"
FROM "path"."to".checkpoints
WHERE materialization = N'some/Materialization' AND key_begin <= 1122867 AND key_end >= 4293844428
ORDER BY key_end - key_begin ASC;

-- fenceInsert
INSERT INTO "path"."to".checkpoints (materialization, key_begin, key_end, fence, "checkpoint")
VALUES (N'some/Materialization', 1122867, 4293844428, 0, N'AAECAwQFBgcICQ==');

-- checkpointUpdate
UPDATE "path"."to".checkpoints SET "checkpoint" = N'AAECAwQFBgcICQ=='
WHERE materialization = N'some/Materialization' AND key_begin = 1122867 AND key_end = 4293844428 AND fence = 123;

-- checkpointUpdate (quote in names)
UPDATE "it's".flow_checkpoints_v1 SET "checkpoint" = N'{"a":"it''s"}'
WHERE materialization = N'o''brien/mat' AND key_begin = 0 AND key_end = 4294967295 AND fence = 1;
