#!/bin/sh
# Checks edgenfd's P4Runtime server against p4lang's own generated client
# (the p4runtime and grpcio Python packages, from PyPI into a throwaway
# venv), over TCP with TLS and a client certificate, as a tenant bound to
# the device: arbitration, pipeline with cookie, P4Info, writes with
# metadata and idle timeouts, reads with time_since_last_hit, an
# idle-timeout notification, a refused read. Needs root, openssl and a built
# bin/ (make build).
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
venv=${P4RT_VENV:-$tmp/venv}
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q p4runtime grpcio; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# A CA, the daemon's certificate for 127.0.0.1, and the client certificate
# of tenant "interop" (URI SAN edgenf://tenant/interop).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=interop CA" \
	-keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>/dev/null
issue() { # NAME SUBJECT-ALT-NAME EXTENDED-KEY-USAGE
	printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$2" "$3" >"$tmp/$1.ext"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$tmp/$1.key" -out "$tmp/$1.csr" 2>/dev/null
	openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial -days 1 \
		-extfile "$tmp/$1.ext" -out "$tmp/$1.pem" 2>/dev/null
}
issue server IP:127.0.0.1 serverAuth
issue client URI:edgenf://tenant/interop clientAuth

bpffs=/sys/fs/bpf/enf-interop-$$
set -- -socket "$tmp/s" -state "$tmp/state.json" -bpffs "$bpffs"
./bin/edgenfd "$@" -p4rt-devices sw1=1@interop -p4rt-listen 127.0.0.1:"$port" \
	-tls-cert "$tmp/server.pem" -tls-key "$tmp/server.key" -tls-client-ca "$tmp/ca.pem" >"$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; ./bin/edgenfd "$@" -destroy; rm -rf "$tmp"' EXIT
sleep 1.5
# the package's generated code predates protobuf 4's C descriptors
PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python "$venv/bin/python" scripts/p4rt_interop.py 127.0.0.1:"$port" examples/p4/l2learn.p4 \
	"$tmp/ca.pem" "$tmp/client.pem" "$tmp/client.key"
# the cube the tenant's pipeline made is the tenant's
./bin/edgenf --socket "$tmp/s" cube list -o json | grep -q '"tenant": "interop"' || { echo "the cube is not tenant interop's"; exit 1; }
echo "tenant binding OK"
