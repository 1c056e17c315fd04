#!/bin/sh
# Checks edgenfd's P4Runtime server against p4lang's own generated client
# (the p4runtime and grpcio Python packages, from PyPI into a throwaway
# venv): arbitration, pipeline with cookie, P4Info, writes with metadata
# and idle timeouts, reads with time_since_last_hit, an idle-timeout
# notification, a refused read. Needs root and a built bin/ (make build).
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
venv=${P4RT_VENV:-$tmp/venv}
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q p4runtime grpcio; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
bpffs=/sys/fs/bpf/enf-interop-$$
set -- -socket "$tmp/s" -state "$tmp/state.json" -bpffs "$bpffs"
./bin/edgenfd "$@" -p4rt-listen 127.0.0.1:"$port" -p4rt-devices sw1=1 >"$tmp/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; ./bin/edgenfd "$@" -destroy; rm -rf "$tmp"' EXIT
sleep 1.5
# the package's generated code predates protobuf 4's C descriptors
PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python "$venv/bin/python" scripts/p4rt_interop.py 127.0.0.1:"$port" examples/p4/l2learn.p4
