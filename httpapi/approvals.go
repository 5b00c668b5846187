package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agentik/agentik"
)

// Tool approval (SPEC §10, docs/approvals.md):
//
//	GET  {p}/conversations/{id}/approvals            → {"approvals":[PendingApproval…]}
//	POST {p}/conversations/{id}/approvals/{call_id}  {"approved":bool,"reason?","arguments?"} → 200 {"call_id","approved"}

type approvalList struct {
	Approvals []agentik.PendingApproval `json:"approvals"`
}

type approvalAnswered struct {
	CallID   string `json:"call_id"`
	Approved bool   `json:"approved"`
}

func (s *server) approvals(w http.ResponseWriter, r *http.Request) {
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	defer conv.Close()
	list, err := conv.Approvals(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []agentik.PendingApproval{}
	}
	writeJSON(w, http.StatusOK, approvalList{Approvals: list})
}

func (s *server) resolveApproval(w http.ResponseWriter, r *http.Request) {
	callID := r.PathValue("call_id")
	if callID == "" || len(callID) > 256 {
		s.writeError(w, r, agentik.Errorf(agentik.EInvalid, "bad call id"))
		return
	}
	res, ok := decodeBody(s, w, r, agentik.DecodeResolution)
	if !ok {
		return
	}
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	defer conv.Close()
	if err := conv.Resolve(r.Context(), callID, res); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalAnswered{CallID: callID, Approved: res.Approved})
}

// Approvals lists the conversation's pending tool approvals.
func (cv *conversation) Approvals(ctx context.Context) ([]agentik.PendingApproval, error) {
	p, err := convPath(cv.id)
	if err != nil {
		return nil, err
	}
	var list approvalList
	err = cv.c.do(ctx, http.MethodGet, p+"/approvals", nil, nil, &list, http.StatusOK)
	return list.Approvals, err
}

// Resolve answers a pending tool approval.
func (cv *conversation) Resolve(ctx context.Context, callID string, res agentik.Resolution) error {
	p, err := convPath(cv.id)
	if err != nil {
		return err
	}
	return cv.c.do(ctx, http.MethodPost, p+"/approvals/"+url.PathEscape(callID), nil, res, nil, http.StatusOK)
}
