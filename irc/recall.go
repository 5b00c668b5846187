package irc

import "time"

// What the server remembers of conversations beyond what their info holds:
// who last changed a title and when (conversation info keeps neither), as
// seen by this server since it started. It is a memory, not a record: a
// change made before the server started, or while no client of the
// principal was connected to it, is not in it, and it forgets its oldest
// entries past maxRecalled.

// maxRecalled bounds the conversations the server remembers.
const maxRecalled = 10000

// topicSet is a change of a conversation's title.
type topicSet struct {
	title string
	by    string // the setter's mask
	at    time.Time
}

// recalled is what the server remembers of one conversation.
type recalled struct {
	topic topicSet
	seq   uint64 // when it was last written, for forgetting the oldest
}

// recallLocked returns the entry of conversation id, making it (and
// forgetting the oldest entry when full). s.mu is held.
func (s *Server) recallLocked(id string) *recalled {
	s.recallSeq++
	if r := s.recalled[id]; r != nil {
		r.seq = s.recallSeq
		return r
	}
	if len(s.recalled) >= maxRecalled {
		oldest, low := "", ^uint64(0)
		for k, r := range s.recalled {
			if r.seq < low {
				oldest, low = k, r.seq
			}
		}
		delete(s.recalled, oldest)
	}
	r := &recalled{seq: s.recallSeq}
	s.recalled[id] = r
	return r
}

// settingTopic records that a client (mask by) is renaming conversation id
// to title, before it asks the core: the renamed event that follows is
// then known as its change. It returns a function that undoes the record
// when the rename fails.
func (s *Server) settingTopic(id, title, by string) (undo func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recallLocked(id)
	prev, set := r.topic, topicSet{title: title, by: by, at: time.Now()}
	r.topic = set
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if r := s.recalled[id]; r != nil && r.topic == set {
			r.topic = prev
		}
	}
}

// renamed records a renamed event of conversation id (the title and the
// event's date) and returns who set it: the client whose TOPIC it is, else
// agent (the mask of the conversation's agent: a rename made elsewhere).
func (s *Server) renamed(id, title, agent string, at time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recallLocked(id)
	if r.topic.title != title || r.topic.by == "" {
		r.topic = topicSet{title: title, by: agent}
	}
	r.topic.at = at
	return r.topic.by
}

// topicOf returns the last change of conversation id's title the server
// saw, if the title is still the one it set.
func (s *Server) topicOf(id, title string) (topicSet, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recalled[id]
	if r == nil || r.topic.title != title || r.topic.by == "" {
		return topicSet{}, false
	}
	return r.topic, true
}
