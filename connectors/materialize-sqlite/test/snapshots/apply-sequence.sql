-- apply v1
CREATE TABLE IF NOT EXISTS flow_checkpoints_v1 (
	materialization TEXT NOT NULL,
	key_begin INTEGER NOT NULL,
	key_end INTEGER NOT NULL,
	fence INTEGER NOT NULL,
	checkpoint TEXT NOT NULL,
	PRIMARY KEY (materialization, key_begin, key_end)
);
CREATE TABLE IF NOT EXISTS things (
	id INTEGER NOT NULL,
	flag BOOLEAN NOT NULL,
	gone TEXT NOT NULL,
	n INTEGER NOT NULL,
	flow_document TEXT NOT NULL,
	PRIMARY KEY (id)
);
-- apply v1 again (no-op)

-- apply v2 (dry run)
DROP TABLE IF EXISTS things_flowtmp;
CREATE TABLE things_flowtmp (
	id INTEGER NOT NULL,
	flag TEXT NOT NULL,
	gone TEXT,
	n REAL,
	flow_document TEXT NOT NULL,
	PRIMARY KEY (id)
);
INSERT INTO things_flowtmp (id, flag, gone, n, flow_document) SELECT id, CASE WHEN flag IS NULL THEN NULL WHEN flag THEN 'true' ELSE 'false' END, gone, CAST(n AS REAL), flow_document FROM things;
DROP TABLE things;
ALTER TABLE things_flowtmp RENAME TO things;
ALTER TABLE things ADD COLUMN added TEXT;
-- apply v2
DROP TABLE IF EXISTS things_flowtmp;
CREATE TABLE things_flowtmp (
	id INTEGER NOT NULL,
	flag TEXT NOT NULL,
	gone TEXT,
	n REAL,
	flow_document TEXT NOT NULL,
	PRIMARY KEY (id)
);
INSERT INTO things_flowtmp (id, flag, gone, n, flow_document) SELECT id, CASE WHEN flag IS NULL THEN NULL WHEN flag THEN 'true' ELSE 'false' END, gone, CAST(n AS REAL), flow_document FROM things;
DROP TABLE things;
ALTER TABLE things_flowtmp RENAME TO things;
ALTER TABLE things ADD COLUMN added TEXT;
-- apply v2 again (no-op)

-- backfill, compatible
DELETE FROM things;
-- backfill, incompatible
DROP TABLE IF EXISTS things;
CREATE TABLE IF NOT EXISTS things (
	id INTEGER NOT NULL,
	added INTEGER NOT NULL,
	flag TEXT NOT NULL,
	n REAL,
	flow_document TEXT NOT NULL,
	PRIMARY KEY (id)
);
