-- 0006: the MCP endpoints' OAuth authorization server (package oauth):
-- registered clients, and every code and token handed out, by the SHA-256
-- of its value (never the value). family ties a code to the tokens issued
-- from it, for revocation.
CREATE TABLE oauth_clients (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL,
	redirect_uris TEXT NOT NULL, -- JSON array
	created_at    INTEGER NOT NULL -- unix milliseconds
) STRICT;

CREATE TABLE oauth_grants (
	hash         TEXT PRIMARY KEY,
	kind         TEXT NOT NULL, -- code, access or refresh
	family       TEXT NOT NULL,
	client_id    TEXT NOT NULL,
	principal    TEXT NOT NULL,
	resource     TEXT NOT NULL,
	scope        TEXT NOT NULL,
	redirect_uri TEXT NOT NULL,
	challenge    TEXT NOT NULL,
	expires_at   INTEGER NOT NULL, -- unix milliseconds
	used         INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX oauth_grants_family ON oauth_grants (family);
CREATE INDEX oauth_grants_expires ON oauth_grants (expires_at);
