package main

import (
	"context"
	"fmt"

	"github.com/agentik/agentik"
)

// seedMemory is how many working-memory entries a seeded conversation keeps.
// The journal is what grows without bound; working memory is what the model
// sees, and compaction keeps it under the context budget. Seeding it with the
// whole journal would measure the model's context, not the runtime.
const seedMemory = 20

// seedConversation writes a conversation holding n journal messages (rounded
// up to even: n/2 answered user/assistant exchanges, so no turn is left open
// for the server to resume) straight into the server's database, with the
// same Store.Commit the server uses, 1,000 messages per transaction. It
// returns the conversation's id.
func seedConversation(ctx context.Context, store agentik.Store, n int) (string, error) {
	n += n % 2 // whole exchanges only
	now := agentik.Now()
	rec := agentik.ConversationRecord{ID: agentik.NewID(), Title: fmt.Sprintf("seeded %d", n), CreatedAt: now, UpdatedAt: now}
	if _, err := store.CreateConversation(ctx, rec); err != nil {
		return "", err
	}
	const batch = 1000
	for done := 0; done < n; {
		w := agentik.Write{ConversationID: rec.ID}
		for i := 0; i < batch && done < n; i += 2 {
			user := &agentik.Message{ID: agentik.NewID(), ConversationID: rec.ID, Date: now, Type: agentik.MsgUser,
				Content: []agentik.Content{agentik.Text(fmt.Sprintf("seeded question %d: %s", done/2, promptPlain))}}
			w.Events = append(w.Events, agentik.MessageEvent(user))
			done++
			bot := &agentik.Message{ID: agentik.NewID(), ConversationID: rec.ID, Date: now, Type: agentik.MsgAssistant,
				Content: []agentik.Content{agentik.Text(answerText)}, ReplyTo: user.ID}
			w.Events = append(w.Events, agentik.MessageEvent(bot))
			done++
			if n-done < seedMemory {
				w.Memory = append(w.Memory,
					agentik.MemoryEntry{SourceID: user.ID, ReplyTo: user.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: user.Content}},
					agentik.MemoryEntry{SourceID: bot.ID, ReplyTo: user.ID, Message: agentik.ModelMessage{Role: agentik.RoleAssistant, Content: bot.Content}})
			}
		}
		if _, _, err := store.Commit(ctx, w); err != nil {
			return "", fmt.Errorf("seed: %w", err)
		}
	}
	return rec.ID, nil
}
