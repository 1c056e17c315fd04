package netlab

import (
	"net"
	"testing"
	"time"
)

// A receiver that wakes past its deadline must see what still waits in its
// socket: queued says so until the datagram is read.
func TestQueued(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if Queued(rx) {
		t.Fatal("queued on an empty socket")
	}
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if _, err := tx.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); !Queued(rx); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a datagram sent over loopback is not queued after 5 s")
		}
	}
	// a deadline in the past: Go reports a timeout with the datagram queued
	rx.SetReadDeadline(time.Now().Add(-time.Second))
	if _, _, err := rx.ReadFromUDP(make([]byte, 16)); err == nil {
		t.Fatal("read with a past deadline succeeded")
	}
	if !Queued(rx) {
		t.Fatal("the datagram is not queued after a timed-out read")
	}
	rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := rx.ReadFromUDP(make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if Queued(rx) {
		t.Fatal("queued after the only datagram was read")
	}
}
