package irc

import "time"

// What the server remembers of conversations beyond what their info holds:
// the channel name a named conversation is reached by (its id derives from
// the name, and the name cannot be had back from the id once the title
// that carried it is renamed), and who last changed its title and when
// (conversation info keeps neither). It is a memory of what this server
// saw since it started, not a record: a name no client of this server used
// since, a change made before the server started or while no client of the
// principal was connected to it, are not in it; past maxRecalled
// conversations it forgets some.

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
	name  string // "#name" or "#name@agent" of a named conversation
	topic topicSet
}

// recallLocked returns the entry of conversation id, making it; when the
// server remembers maxRecalled conversations already, one of them, taken
// at random, is forgotten. s.mu is held.
func (s *Server) recallLocked(id string) *recalled {
	if r := s.recalled[id]; r != nil {
		return r
	}
	if len(s.recalled) >= maxRecalled {
		for k := range s.recalled { // map order is random
			delete(s.recalled, k)
			break
		}
	}
	r := &recalled{}
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

// rememberName records that conversation id is the named channel name.
func (s *Server) rememberName(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.recalled[id]; r == nil || r.name != name {
		s.recallLocked(id).name = name
	}
}

// nameOf returns the channel name of conversation id, if remembered.
func (s *Server) nameOf(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.recalled[id]; r != nil {
		return r.name
	}
	return ""
}
