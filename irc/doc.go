// Package irc is Agentik's IRC facade: an IRC server (RFC 1459/2812
// registration and the IRCv3 extensions clients use today) in front of
// agents. Lines are parsed and written with github.com/ergochat/irc-go
// (ircmsg, ircreader); the package has no IRC parser of its own.
//
// The model (SPEC §13): every agent is a user (its id is its nick, in bot
// mode) and every channel is a conversation of the client's principal —
// "#<conversation-id>" attaches to an existing one, any other name is the
// caller's own conversation of that name (created on JOIN; "#name@agent"
// for an agent other than the default), and a PRIVMSG to an agent's nick
// is the caller's direct conversation with it. The topic is the title.
// A user's PRIVMSG is a user_message; the answer is sent as it is written,
// one complete line at a time, split on line breaks and then at word
// boundaries within the 512-byte line, never inside a UTF-8 sequence, with
// +typing while the model works. Tool calls, results, errors,
// interruptions and compactions are CTCP "AGENTIK …" messages, with
// vendor tags (agentik.github.io/…) for clients that take message tags.
// CHATHISTORY serves the journal; clients without draft/chathistory get
// the last lines on JOIN.
//
// Guarantees: a client sees only its own principal's conversations, never
// another principal's channel of the same name; with authentication on, a
// client that has not logged in (SASL PLAIN or PASS) can register but not
// join, talk or read history. A client never stalls a turn: lines of its
// conversations wait for room in its send queue on that client's own
// follower (an answer it cannot take as it streams comes whole once
// stored), and a client that makes no room in time, or whose queue passes
// its limit, is disconnected ("SendQ exceeded"). What clients send is
// flood-limited (a burst, then a rate: lines wait, none are dropped). Lines longer than
// the limits get ERR_INPUTTOOLONG and change nothing; invalid UTF-8 gets
// FAIL INVALID_UTF8. On shutdown every client gets "ERROR :Closing link".
package irc
