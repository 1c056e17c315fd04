#!/usr/bin/env bash
# Installs what edgenf needs to build and test on Debian 12 or 13, from a
# machine with only make and git: Debian packages, the Go toolchain go.mod
# names, bpffs. Idempotent and quick when everything is there (make runs it
# before every build). Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "setup: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "run as root (it installs Debian packages and mounts bpffs)"
command -v apt-get >/dev/null || die "needs a Debian-based system with apt-get; see README.md for what to install elsewhere"

# Another apt (a helper's setup, unattended-upgrades) may hold the lock:
# wait for it rather than fail.
apt_get() {
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq "$@"
}
updated=
# install_missing [--no-install-recommends] PKG...
install_missing() {
	local missing=() opts=() p
	if [ "${1:-}" = --no-install-recommends ]; then
		opts=("$1")
		shift
	fi
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	echo "setup: installing ${missing[*]}"
	if [ -z "$updated" ]; then
		apt_get update
		updated=1
	fi
	apt_get install "${opts[@]}" "${missing[@]}" >/dev/null
}

# clang and llvm: the eBPF objects and P4 programs; libbpf-dev and
# linux-libc-dev: the headers they include. The rest: tests, the demo and
# the package checks (lintian, systemd-analyze); bubblewrap and util-linux
# (prlimit) confine the P4 preprocessor.
install_missing make git ca-certificates clang llvm libbpf-dev linux-libc-dev \
	bpftool iproute2 iputils-ping nftables iptables tcpdump tshark iperf3 \
	python3 python3-venv lintian systemd man-db bubblewrap util-linux
# the reference CNI plugins (/usr/lib/cni): host-local IPAM for edgenf-cni,
# and the bridge plugin the CNI benchmark compares with
install_missing containernetworking-plugins

# Go: the toolchain go.mod names. When the go on PATH is missing or older,
# Debian's golang-go serves as a bootstrap to fetch that exact toolchain
# from the Go module proxy: the module golang.org/toolchain, checked against
# the checksum database, which is what the go command's own toolchain
# switching (GOTOOLCHAIN) downloads. It is installed in /usr/local/go, with
# go and gofmt linked into /usr/local/bin.
want=$(awk '$1 == "toolchain" { sub(/^go/, "", $2); t = $2 } $1 == "go" { g = $2 } END { print (t != "" ? t : g) }' go.mod)
go_version() { (cd / && GOTOOLCHAIN=local GOFLAGS= "$1" env GOVERSION 2>/dev/null | sed 's/^go//'); }
new_enough() { [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$want" "$1" | sort -V | head -n1)" = "$want" ]; }
have=
command -v go >/dev/null && have=$(go_version go)
if ! new_enough "$have"; then
	boot=go
	if [ -z "$have" ]; then
		install_missing golang-go
		boot=/usr/bin/go
	fi
	os_arch=$(cd / && GOTOOLCHAIN=local GOFLAGS= "$boot" env GOHOSTOS GOHOSTARCH | paste -sd.)
	echo "setup: fetching Go $want ($os_arch) from the Go module proxy${have:+ (go on PATH is $have)}"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mod="golang.org/toolchain@v0.0.1-go$want.${os_arch/./-}"
	if ! (cd "$tmp" && GOTOOLCHAIN=local GOFLAGS=-modcacherw GO111MODULE=on "$boot" mod download -json "$mod" >dl.json); then
		cat "$tmp/dl.json" >&2
		die "could not fetch $mod (is the Go module proxy, $(cd / && "$boot" env GOPROXY), reachable?)"
	fi
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$tmp/dl.json")
	[ -d "$dir/bin" ] || die "$mod: no toolchain in $dir"
	rm -rf /usr/local/go.new
	cp -a "$dir" /usr/local/go.new
	# module zips keep no file modes
	chmod -R u+w,a+rX /usr/local/go.new
	chmod a+x /usr/local/go.new/bin/* /usr/local/go.new/pkg/tool/*/*
	rm -rf /usr/local/go
	mv /usr/local/go.new /usr/local/go
	ln -sf /usr/local/go/bin/go /usr/local/go/bin/gofmt /usr/local/bin/
	hash -r
	have=$(go_version go)
	new_enough "$have" || die "installed Go $want in /usr/local/go, but the go on PATH ($(command -v go)) is $have: put /usr/local/bin first on PATH"
fi

# Real servers the telemetry tests start on loopback (InfluxDB; Prometheus
# and promtool) and the browser the dashboard test drives headless. Their
# packaged services are not ours: those this run installs are disabled and
# stopped (the tests start private instances).
servers=(influxdb prometheus chromium)
new=()
for p in "${servers[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || new+=("$p")
done
if ((${#new[@]})); then
	install_missing --no-install-recommends "${new[@]}"
	for s in influxdb prometheus; do
		if [[ " ${new[*]} " == *" $s "* ]] && [ -d /run/systemd/system ]; then
			systemctl disable --now "$s" >/dev/null 2>&1 || true
		fi
	done
fi

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
go mod download
