package a2a

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeRequest feeds arbitrary bodies through the server's decoding:
// envelope, params of both versions, conversion to core content. It must
// never panic, and every refusal is a JSON-RPC error with a known code.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"iVBORw0KGgo=","mimeType":"image/png"}},{"kind":"data","data":{"a":1}}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"x:1","historyLength":-1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"!!","mediaType":"image/png"}]}}}`,
		`{"id":null}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, id, rerr := decodeRequest(body)
		if rerr != nil {
			if rerr.Code > -31000 || !json.Valid(id) {
				t.Fatalf("bad error %+v id %s", rerr, id)
			}
			return
		}
		switch req.op {
		case opSend, opStream:
			p, rerr := decodeSendParams(req.v, req.Params)
			if rerr == nil {
				toContent(p.msg.Parts, true)
				toContent(p.msg.Parts, false)
			}
		default:
			decodeIDParams(req.Params)
		}
	})
}

// FuzzDecodeResult feeds arbitrary remote answers through the client's
// decoding: cards and results of both versions.
func FuzzDecodeResult(f *testing.F) {
	for _, s := range []string{
		`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"x"}]}]}}`,
		`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}`,
		`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"file","file":{"bytes":"AA=="}}]},"append":true}`,
		`{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"no"}]}}}}`,
		`{"name":"x","url":"http://a/a2a","supportedInterfaces":[{"url":"http://a/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range []Version{V1, V03} {
			decodeEvent(v, b)
			decodeTask(v, b)
		}
		parseCard(b)
		readResult(b, json.RawMessage("1"))
	})
}
