-- Whether an identity was ever moved or renamed: the test page skips the alias and stitch reads
-- for the many tests that never were.
ALTER TABLE {db}.test_identities ADD COLUMN IF NOT EXISTS stitched UInt8 DEFAULT 0;
