package auxiliary

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

const (
	wsWriteTimeout = 10 * time.Second
	wsPingInterval = 30 * time.Second
	wsPongWait     = wsPingInterval + 15*time.Second
	wsReadLimit    = 4096 // clients send nothing but control frames
)

// serveWS streams the /status document: once at connect, then each time it
// changes (generatedAt aside). It wakes on Notify and every ResyncInterval.
func (h *Handler) serveWS(w http.ResponseWriter, r *http.Request) {
	conn, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader already answered with an HTTP error
	}
	defer conn.Close()
	log := h.opts.Logger.With("remoteAddr", r.RemoteAddr)
	log.Info("status stream opened")

	// A reader is required to process the client's control frames (pong,
	// close); it ends the stream when the client goes away.
	gone := make(chan struct{})
	conn.SetReadLimit(wsReadLimit)
	_ = conn.SetReadDeadline(time.Now().Add(wsPongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(wsPongWait)) })
	go func() {
		defer close(gone)
		for {
			if _, _, err := conn.NextReader(); err != nil {
				return
			}
		}
	}()

	resync := time.NewTicker(h.opts.ResyncInterval)
	defer resync.Stop()
	ping := time.NewTicker(wsPingInterval)
	defer ping.Stop()
	var last []byte
	for {
		changed := h.changes() // before building, so a change during the build is not missed
		if h.opts.Source.Synced() {
			doc, err := h.Document()
			if err != nil {
				log.Error("status stream: building the document failed", "err", err)
			} else {
				key, _ := json.Marshal(doc.Groups)
				key = append(key, leaderByte(doc.Leader))
				if !bytes.Equal(key, last) {
					_ = conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
					if err := conn.WriteJSON(doc); err != nil {
						log.Info("status stream closed", "err", err)
						return
					}
					last = key
				}
			}
		}
		select {
		case <-gone:
			log.Info("status stream closed by the client")
			return
		case <-r.Context().Done():
			return
		case <-changed:
		case <-resync.C:
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsWriteTimeout)); err != nil {
				return
			}
		}
	}
}

// The last-sent key is the groups' JSON plus one byte for leadership, so a
// change of leader is sent too.
func leaderByte(l bool) byte {
	if l {
		return 'L'
	}
	return 'F'
}
