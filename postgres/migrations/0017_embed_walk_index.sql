-- 0017: the embedding worker's walk of new messages gets an index that a
-- search cannot take. messages_search_date (0016) covered every indexed
-- message, so a search for a word in many messages could walk it newest
-- first through every principal's messages, filtering by scope (35 ms
-- over 200,000 messages where the scope's own index takes 1 ms). This
-- one also names the message types the search index holds, a condition
-- no search states, so the planner keeps it for the worker.
DROP INDEX messages_search_date;
CREATE INDEX messages_embed_walk ON messages (date DESC)
	WHERE search IS NOT NULL AND type IN ('user_message', 'assistant_message');
