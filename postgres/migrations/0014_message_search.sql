-- 0013: the full-text index of the journal (SPEC §19, conversation_search).
-- A user or assistant message with text has a search vector: its text
-- parts under the 'simple' configuration (no stemming, any language), and
-- the token of its conversation's owner with weight A (storeutil.SearchScope:
-- 's' and the first 128 bits of the owner's SHA-256 in hex), which a
-- search asks for with its words, so the GIN index narrows to one
-- principal's messages at once; a word someone writes has weight D and
-- never matches it. Commit fills the vector with the message's row, in
-- its transaction; it goes with the row (the journal's delete trigger).
-- search_scope repeats the owner's token as a column: the btree index
-- below walks one principal's indexed messages newest first, the plan for a
-- word found in many of them (the GIN index finds every match and sorts
-- them; for a word in 100,000 messages that took seconds).
ALTER TABLE messages ADD COLUMN search tsvector, ADD COLUMN search_scope text COLLATE "C";

-- The messages written before this migration.
UPDATE messages AS m
SET search = setweight(CAST('s' || left(encode(sha256(convert_to(t.owner, 'UTF8')), 'hex'), 32) AS tsvector), 'A')
	|| to_tsvector('simple', t.body),
	search_scope = 's' || left(encode(sha256(convert_to(t.owner, 'UTF8')), 'hex'), 32)
FROM (
	SELECT m2.conversation_id, m2.seq, c.owner, string_agg(p.part->>'text', E'\n' ORDER BY p.n) AS body
	FROM messages AS m2
	JOIN conversations AS c ON c.id = m2.conversation_id
	CROSS JOIN LATERAL jsonb_array_elements(CAST(m2.payload AS jsonb)->'content') WITH ORDINALITY AS p(part, n)
	WHERE m2.type IN ('user_message', 'assistant_message')
		AND p.part->>'type' = 'text' AND p.part->>'text' <> ''
	GROUP BY m2.conversation_id, m2.seq, c.owner
) AS t
WHERE m.conversation_id = t.conversation_id AND m.seq = t.seq;

CREATE INDEX messages_search ON messages USING gin (search);
CREATE INDEX messages_search_recent ON messages (search_scope, date DESC) WHERE search IS NOT NULL;
