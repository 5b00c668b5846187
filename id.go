package agentik

import "github.com/google/uuid"

// NewID returns a new sortable unique id (UUIDv7): ids made later sort later.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// ValidID reports whether s has the shape of an id this package hands out.
// Facades use it to refuse hostile path values before they reach a store.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}
