package engine

// SetHook makes every turn loop of e call f at its test points: "next"
// (it read the queue and is about to take the turn answering replyTo),
// "taken" (it took that turn and has not started it yet) and "ended" (the
// turn ran and the loop goes on). Set it before Start.
func SetHook(e *Engine, f func(point, replyTo string)) { e.hook = f }
