#!/usr/bin/env bash
# Shows that edgenf sets itself up on a bare Debian: builds a minimal Debian
# root (mmdebstrap, variant minbase, plus make and git) in a temporary
# directory, copies a clean clone of this repository's HEAD in, and inside it
# (its own mount namespace, pivot_root'ed) runs, as root, `make build` (which runs scripts/setup.sh: Debian
# packages, the Go toolchain, bpffs), then, as the unprivileged user nobody
# on a clone of its own, `go build ./...`, `go vet ./...` and
# `go test -short ./...`; finally, as root again, builds and checks the
# Debian package (make check-package: lintian, systemd-analyze verify),
# installs it with apt, runs `edgenfd -check` and `edgenf
# doctor` from it, and removes it. Everything is removed afterwards, on
# failure too.
#
# Usage (as root): scripts/fresh-check.sh [bookworm|trixie]   (default bookworm)
# Takes 10 to 20 minutes, most of it downloading packages and the toolchain.
set -euo pipefail

suite=${1:-bookworm}
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || {
	echo "fresh-check: run as root (mmdebstrap, mounts and pivot_root need it)" >&2
	exit 1
}
if ! command -v mmdebstrap >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq install mmdebstrap >/dev/null
fi

work=$(mktemp -d /var/tmp/edgenf-fresh.XXXXXX)
root=$work/root
start=$(date +%s)

# mounts below $root, deepest first
mounts_below() { awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r; }
cleanup() {
	local rc=$? m
	for m in $(mounts_below); do
		umount -l "$m" || true
	done
	if [ -n "$(mounts_below)" ]; then
		echo "fresh-check: still mounted under $root, not deleting it:" $(mounts_below) >&2
	else
		rm -rf --one-file-system "$work"
	fi
	echo "fresh-check: $suite: $([ $rc = 0 ] && echo PASSED || echo FAILED) in $(($(date +%s) - start)) s"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { echo "=== $(($(date +%s) - start)) s: $*"; }

step "mmdebstrap $suite (minbase + make, git)"
mmdebstrap --quiet --variant=minbase --include=make,git "$suite" "$root"

step "clean clone of $(git -C "$repo" rev-parse --short HEAD)"
git clone -q --no-hardlinks "$repo" "$root/root/edgenf"

mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Certificate authorities this machine adds for its network (a TLS-inspecting
# proxy): ca-certificates, when setup installs it, takes them in.
if compgen -G '/usr/local/share/ca-certificates/*' >/dev/null; then
	mkdir -p "$root/usr/local/share/ca-certificates"
	cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi

# Runs a command in the Debian root: in a private mount namespace whose root
# it is (pivot_root, not chroot: the kernel refuses the user namespaces that
# bubblewrap, which confines the P4 preprocessor, makes as nobody, to a
# chrooted process). The mounts made in there (setup's bpffs) go with it.
in_root() {
	unshare --mount --propagation private -- /bin/sh -c '
		root=$1; shift
		mount --rbind "$root" "$root" && cd "$root" && mkdir -p .oldroot && pivot_root . .oldroot &&
			umount -l /.oldroot && rmdir /.oldroot &&
			exec /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb "$@"
	' sh "$root" "$@"
}

step "make build (as root; runs scripts/setup.sh)"
in_root bash -c 'cd /root/edgenf && make build && ./bin/edgenfd -h 2>&1 | head -n 3 && go version'

step "go build, go vet, go test -short ./... as nobody, on a clone of its own"
in_root bash -c 'set -e
	mkdir -p /tmp/nobody && git clone -q /root/edgenf /tmp/nobody/edgenf && chown -R nobody:nogroup /tmp/nobody
	cd /tmp/nobody/edgenf
	setpriv --reuid=nobody --regid=nogroup --clear-groups env -i HOME=/tmp/nobody \
		PATH=/usr/local/bin:/usr/bin:/bin bash -c "go build ./... && go vet ./... && go test -short ./..."'

step "make check-package (deb, lintian, systemd-analyze verify); apt install ./build/edgenf_*.deb; edgenfd -check; edgenf doctor; apt remove"
in_root bash -c 'set -e
	cd /root/edgenf && make check-package
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq ./build/edgenf_*.deb >/dev/null
	dpkg -L edgenf | grep -E "bin/|systemd|man8|completions/"
	edgenfd -check
	edgenf doctor || true   # no daemon runs in there: its line fails, with the fix
	apt-get remove -y -qq edgenf >/dev/null && [ ! -e /usr/sbin/edgenfd ] && echo "removed"'
