-- The merge base of a pull request's run (`git merge-base HEAD origin/<base>`: where its branch
-- forked from the base branch), so evidence can be judged by code version. '' = unknown: runs
-- stored before this migration, runs that are not pull requests, senders that do not know it.
ALTER TABLE {db}.runs ADD COLUMN IF NOT EXISTS merge_base String DEFAULT '';
