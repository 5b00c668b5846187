-- 0010: the MCP endpoints' OAuth authorization server (package oauth):
-- registered clients, and every code and token handed out, by the SHA-256
-- of its value (never the value). family ties a code to the tokens issued
-- from it, for revocation.
CREATE TABLE oauth_clients (
	id            text PRIMARY KEY,
	name          text NOT NULL,
	redirect_uris jsonb NOT NULL,
	created_at    timestamptz NOT NULL
);

CREATE TABLE oauth_grants (
	hash         text PRIMARY KEY,
	kind         text NOT NULL,
	family       text NOT NULL,
	client_id    text NOT NULL,
	principal    text NOT NULL,
	resource     text NOT NULL,
	scope        text NOT NULL,
	redirect_uri text NOT NULL,
	challenge    text NOT NULL,
	expires_at   timestamptz NOT NULL,
	used         boolean NOT NULL DEFAULT false
);
CREATE INDEX oauth_grants_family ON oauth_grants (family);
CREATE INDEX oauth_grants_expires ON oauth_grants (expires_at);
