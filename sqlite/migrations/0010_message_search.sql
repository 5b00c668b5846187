-- 0009: the full-text index of the journal (SPEC §19, conversation_search).
-- One row per user or assistant message with text, under the message's
-- rowid: scope is the token of the conversation's owner (a search asks for
-- it, so the index narrows to one principal first; see
-- storeutil.SearchScope, which agentik_search_scope computes), body the
-- text parts, one a line. Contentless: the text stays in the journal
-- only; a hit's snippet is cut from there. Commit writes a message's row
-- in the transaction of the message; a trigger removes it with the
-- message, whatever deletes it (a conversation's delete cascades).
CREATE VIRTUAL TABLE message_search USING fts5 (
	scope, body,
	content = '', contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER messages_search_delete AFTER DELETE ON messages
	WHEN old.type IN ('user_message', 'assistant_message')
BEGIN
	DELETE FROM message_search WHERE rowid = old.rowid;
END;

-- The messages written before this migration.
INSERT INTO message_search (rowid, scope, body)
SELECT m.rowid, agentik_search_scope(c.owner), t.body
FROM messages AS m
JOIN conversations AS c ON c.id = m.conversation_id
JOIN (
	SELECT m2.rowid AS id, group_concat(json_extract(p.value, '$.text'), char(10)) AS body
	FROM messages AS m2, json_each(m2.payload, '$.content') AS p
	WHERE m2.type IN ('user_message', 'assistant_message')
		AND json_extract(p.value, '$.type') = 'text' AND json_extract(p.value, '$.text') <> ''
	GROUP BY m2.rowid
) AS t ON t.id = m.rowid
ORDER BY m.rowid;
