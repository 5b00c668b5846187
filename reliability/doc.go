// Package reliability holds the end-to-end suite that proves Agentik's
// reliability promises (SPEC §1.4–1.5) on real parts: the real engine on a
// real SQLite file, every facade on a real listener, the model replaced only
// by the scripted llmtest server behind the real OpenAI adapter, and the real
// agentik binary for process faults (SIGKILL, SIGTERM).
//
// The package has no code of its own: everything is in its tests. What they
// prove, with figures and the commands that produce them, is summarised in
// docs/reliability.md. Guarantee checked throughout: an acknowledged message
// is never lost or answered twice, a resumed stream never misses or repeats a
// durable event, bad input is refused with a 4xx (or the protocol's error
// form) and changes nothing, and a fault in one part never takes down the
// rest.
package reliability
