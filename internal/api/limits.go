package api

import (
	"net/http"
	"time"
)

// longPoll lifts the server's read and write deadlines while a handler
// waits for events (the waits are bounded by the NF: a poll waits at most a
// minute), so a long poll outlives timeouts meant for requests that do
// work; the returned function gives the reply the server's write timeout
// again. A client that goes away still ends the wait (its context).
func longPoll(w http.ResponseWriter, r *http.Request) (done func()) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	return func() {
		if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.WriteTimeout > 0 {
			rc.SetWriteDeadline(time.Now().Add(srv.WriteTimeout))
		}
	}
}
