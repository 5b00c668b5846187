-- 0018: the key that signs the durable events the processes send each
-- other in notifications (postgres/notify.go, "d" entries). Anyone who may
-- connect to the database may NOTIFY on its channel; only a role that can
-- read this table (agentik's) can sign an event the others deliver. 32
-- random bytes (gen_random_uuid is built in since PostgreSQL 13 and draws
-- from the server's strong random source; two of them, their version
-- nibbles aside, give 244 random bits).
CREATE TABLE bus_key (
	id  int PRIMARY KEY CHECK (id = 1),
	key bytea NOT NULL
);
INSERT INTO bus_key (id, key)
VALUES (1, decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
