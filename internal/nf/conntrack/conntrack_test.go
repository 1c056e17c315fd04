package conntrack

import "testing"

func TestTimeoutsDefaultsAndBounds(t *testing.T) {
	var nilT *Timeouts
	k := nilT.Kernel()
	if k.Timeout(TCPEstablished) != 7440 || k.Timeout(UDPUnreplied) != 30 || k.Timeout(200) != 30 {
		t.Fatalf("defaults: %d %d", k.Timeout(TCPEstablished), k.Timeout(UDPUnreplied))
	}
	k = (&Timeouts{UDP: 5, TCPEstablished: 60}).Kernel()
	if k.Timeout(UDPUnreplied) != 5 || k.Timeout(TCPEstablished) != 60 || k.Timeout(ICMP) != 30 {
		t.Fatalf("overrides: %+v", k)
	}
	if err := (&Timeouts{ICMP: MaxTimeout + 1}).Validate(); err == nil {
		t.Fatal("too long a timeout accepted")
	}
	c := Conn{LastSeen: 1e9, State: UDPUnreplied}
	if c.Expired(k, 5e9) || !c.Expired(k, 7e9) {
		t.Fatal("expiry")
	}
	if StateName(TCPTimeWait) != "time-wait" || ProtoName(17) != "udp" {
		t.Fatal("names")
	}
}
