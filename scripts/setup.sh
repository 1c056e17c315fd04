#!/usr/bin/env bash
# Installs what edgenf needs on a Debian 12 machine, idempotently. Run as root.
set -euo pipefail

pkgs=(clang-14 llvm python3 python3-venv libbpf-dev bpftool iproute2 iputils-ping nftables iptables tcpdump tshark iperf3 linux-libc-dev make ca-certificates bubblewrap util-linux)
# the reference CNI plugins (/usr/lib/cni): host-local IPAM for edgenf-cni, and
# the bridge plugin the CNI benchmark compares with
pkgs+=(containernetworking-plugins)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null; then
	echo "setup: Go is required (go1.22 or newer) and was not found on PATH" >&2
	exit 1
fi

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
go mod download
