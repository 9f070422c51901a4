-- Project settings (the dashboard layer between service.yml and the environment): one JSON
-- document per project holding only the keys a person set. The latest version wins (read FINAL).
CREATE TABLE IF NOT EXISTS {db}.project_settings
(
    project_id  UUID,
    settings    String,
    updated_at  DateTime64(3, 'UTC'),
    version     UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY project_id;
