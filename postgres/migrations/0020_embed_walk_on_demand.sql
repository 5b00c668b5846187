-- 0020: the embedding worker's index (messages_embed_walk, 0017) is built
-- by the worker's first walk (Store.ensureEmbedWalk), not here: a
-- deployment without semantic recall no longer pays an entry in it for
-- every message it indexes for search (3–4 % of such a commit's database
-- CPU, BenchmarkCommitSearchIndex). A database that already holds vectors
-- keeps it.
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM message_vectors) THEN
		DROP INDEX messages_embed_walk;
	END IF;
END
$$;
